"""The ``connect-grpc ctl`` command tree, and its entry points for ``connect_grpc.cli``."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import click
from click.shell_completion import get_completion_class, shell_complete

from connect_grpc.ctl import COMPLETE_VAR
from connect_grpc.ctl.connecting import TOKEN_ENV, ConnectionOptions
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV, DEFAULT_TARGET
from connect_grpc.ctl.exit_codes import ExitCode, exit_code_table
from connect_grpc.ctl.session import CtlGroup, Session, add_connection_options, security_options

__all__ = ["COMMANDS", "COMPLETE_VAR", "LazyCommand", "complete", "completion_root", "ctl",
           "run_ctl"]

PROG_NAME = "connect-grpc"
SHELLS = ("bash", "zsh", "fish")

EPILOG = f"""\b
The worker: --target, else $CONNECT_GRPC_TARGET, else --context's, else the current
context's (see `config`), else {DEFAULT_TARGET}. Contexts live in ${CONFIG_DIR_ENV},
else $XDG_CONFIG_HOME/connect-grpc, else ~/.config/connect-grpc.

\b
TLS and tokens: --context's TLS and token settings apply, or the current context's when
no --target is given; each flag overrides its own. The token comes from --token-file,
else ${TOKEN_ENV}, else the context's token file (never from the command line), and is
sent over TLS only unless --insecure-token is given.

\b
Errors print the gRPC code, the message and every field violation on stderr.
Exit codes:
{exit_code_table()}
"""


@dataclass(frozen=True)
class LazyCommand:
    """A ``ctl`` command known by name and imported only when it is run (or completed): each
    ``ctl`` call is a process of its own and would otherwise import every command's modules.
    """

    #: The module that defines the command, and the command's name in it.
    module: str
    attribute: str
    #: The first sentence of the command's help, which ``ctl --help`` lists (shortened to the
    #: terminal's width as click shortens it); a unit test checks it against the command's.
    summary: str
    #: Whether ``--target``, ``--context`` and the other connection flags may also follow
    #: the command's name.
    connection_options: bool = True

    def load(self) -> click.Command:
        command = getattr(importlib.import_module(self.module), self.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.module}.{self.attribute} is not a click command")
        return command


_CHANGE = "connect_grpc.ctl.cmd_change"
_READ = "connect_grpc.ctl.cmd_read"
_LIVE = "connect_grpc.ctl.cmd_live"

#: Every ``ctl`` command but ``completion`` (defined below), by name.
COMMANDS: dict[str, LazyCommand] = {
    "apply": LazyCommand(
        _CHANGE, "apply", "Create each file's connector, or replace its config if it exists; or, "
        "with a desired state, bring each connector to its spec."),
    "cluster": LazyCommand(
        _READ, "cluster", "The cluster: mode, version, leader, generation, and each worker with "
        "what it runs."),
    "config": LazyCommand(
        "connect_grpc.ctl.cmd_config", "config", "Named contexts: which worker ctl talks to "
        "(kept in CONNECT_GRPC_CONFIG_DIR, else $XDG_CONFIG_HOME/connect-grpc, else "
        "~/.config/connect-grpc).", connection_options=False),
    "delete": LazyCommand(_CHANGE, "delete", "Delete connectors."),
    "describe": LazyCommand(_READ, "describe", "Show one resource in detail."),
    "dlq": LazyCommand(
        "connect_grpc.ctl.cmd_dlq", "dlq", "Show the records of a connector's dead-letter queue "
        "(its errors.deadletterqueue.topic.name): topic, partition, offset, time, the "
        "__connect.errors.* headers and the other headers, key and value as text."),
    "get": LazyCommand(_READ, "get", "List resources."),
    "loggers": LazyCommand(
        "connect_grpc.ctl.cmd_loggers", "loggers", "Read or set log levels: Kafka's names (ALL, "
        "TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF); loggers are Python module names, e.g. "
        "connect_grpc.runtime.task, or root."),
    "offsets": LazyCommand(
        _CHANGE, "offsets", "Read, alter or reset a connector's offsets (KIP-875; alter and "
        "reset need the connector STOPPED)."),
    "patch": LazyCommand(
        _CHANGE, "patch", "Change some keys of a connector's config and keep the others "
        "(KIP-477, PatchConnectorConfig); the merged config is validated as a whole, as "
        "`apply` validates."),
    "pause": LazyCommand(_CHANGE, "pause", "Pause connectors and their tasks."),
    "plugins": LazyCommand(
        _READ, "plugins", "The plugins the worker has: class, type, version, aliases "
        "(connectors only, unless --all)."),
    "preview": LazyCommand(
        "connect_grpc.ctl.cmd_preview", "preview", "Run records through the file's converters "
        "and transformations and show every stage's output, or the stage that fails with what "
        "errors.* would do with the record (skip it, fail the task, its dead-letter queue and "
        "headers)."),
    "restart": LazyCommand(
        _LIVE, "restart", "Restart a connector (KIP-745) and follow each restarted instance "
        "live from RESTARTING until it is RUNNING or FAILED; exits 9 if any ended FAILED."),
    "resume": LazyCommand(_CHANGE, "resume", "Resume paused or stopped connectors."),
    "stop": LazyCommand(
        _CHANGE, "stop", "Stop connectors and remove their tasks (KIP-875; needed before "
        "offsets alter/reset)."),
    "topics": LazyCommand(
        "connect_grpc.ctl.cmd_topics", "topics", "Read or reset the topics a connector's tasks "
        "wrote to (source) or read from (sink) (KIP-558; the worker's topic.tracking.enable and "
        "topic.tracking.allow.reset)."),
    "watch": LazyCommand(
        _LIVE, "watch", "Show the connectors' statuses live, as the worker streams them (not "
        "polled), until Ctrl-C, --until or --timeout."),
}


class LazyCtlGroup(CtlGroup):
    """The root group, whose :data:`COMMANDS` are imported when first looked up; its help
    lists them from their summaries, without importing any."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = self._load(cmd_name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and self.get_command(ctx, args[0]) is None:
            # An unknown name is an error whose "Did you mean" click draws from the loaded
            # commands only: load them all, so that it suggests from every command.
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def _load(self, name: str) -> click.Command:
        lazy = COMMANDS[name]
        command = lazy.load()
        if lazy.connection_options:
            for leaf in _leaves(command):
                add_connection_options(leaf)
        self.add_command(command, name)  # once: the options are added to the command itself
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing, but with a stand-in for each command not imported yet: the
        # stand-in's help is the summary, which click shortens as it shortens the command's.
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None:
                command = click.Command(name, help=COMMANDS[name].summary)
            if not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit))
                                    for name, command in rows])


@click.group(cls=LazyCtlGroup, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--target", envvar="CONNECT_GRPC_TARGET",
              help="The worker's gRPC address, HOST:PORT (overrides the context).")
@click.option("--context", "context_name", help="Use this context instead of the current one.")
@click.option("--request-timeout", type=click.FloatRange(min=0, min_open=True), default=30.0,
              show_default=True, help="Deadline of each call, in seconds.")
@security_options
@click.pass_context
def ctl(ctx: click.Context, /, target: str | None, context_name: str | None,
        request_timeout: float, **security: Any) -> None:
    """Drive a running connect-grpc worker or cluster from the command line (like kcctl)."""
    connection = ConnectionOptions(target=target, context=context_name, **security)
    session = Session(connection, request_timeout)
    ctx.obj = session
    ctx.call_on_close(session.close)


@ctl.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script, e.g. in ~/.bashrc:
    eval "$(connect-grpc ctl completion bash)"."""
    script_class = get_completion_class(shell)
    if script_class is None:  # click.Choice lets only SHELLS through
        raise click.BadParameter(f"no completion for {shell}", param_hint="SHELL")
    click.echo(script_class(completion_root(), {}, PROG_NAME, COMPLETE_VAR).source())


def _leaves(command: click.Command) -> list[click.Command]:
    if isinstance(command, click.Group):
        return [leaf for sub in command.commands.values() for leaf in _leaves(sub)]
    return [command]



def completion_root() -> click.Group:
    """What the shell completes: ``connect-grpc`` with its ``ctl`` tree."""
    return click.Group(PROG_NAME, commands={"ctl": ctl})


def run_ctl(args: Sequence[str]) -> int:
    """Runs ``connect-grpc ctl ARGS``; returns the exit code."""
    try:
        result = ctl.main(args=list(args), prog_name=f"{PROG_NAME} ctl", standalone_mode=False)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.Abort:
        return ExitCode.INTERRUPTED
    return int(result) if isinstance(result, int) else ExitCode.OK


def complete(instruction: str) -> int:
    """Answers a completion script's request (``$_CONNECT_GRPC_COMPLETE`` is set)."""
    return shell_complete(completion_root(), {}, PROG_NAME, COMPLETE_VAR, instruction)
