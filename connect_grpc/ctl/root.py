"""The ``connect-grpc ctl`` command tree, and its entry points for ``connect_grpc.cli``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from click.shell_completion import get_completion_class, shell_complete

from connect_grpc.ctl.cmd_change import apply, delete, offsets, patch, pause, resume, stop
from connect_grpc.ctl.cmd_config import config
from connect_grpc.ctl.cmd_dlq import dlq
from connect_grpc.ctl.cmd_live import restart, watch
from connect_grpc.ctl.cmd_loggers import loggers
from connect_grpc.ctl.cmd_preview import preview
from connect_grpc.ctl.cmd_read import cluster, describe, get, plugins
from connect_grpc.ctl.cmd_topics import topics
from connect_grpc.ctl.connecting import TOKEN_ENV, ConnectionOptions
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV, DEFAULT_TARGET
from connect_grpc.ctl.exit_codes import ExitCode, exit_code_table
from connect_grpc.ctl.session import CtlGroup, Session, add_connection_options, security_options

#: What click's completion scripts set when they ask ``connect-grpc`` for completions.
COMPLETE_VAR = "_CONNECT_GRPC_COMPLETE"
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


@click.group(cls=CtlGroup, epilog=EPILOG,
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


for command in (get, describe, apply, patch, pause, resume, stop, delete, restart, offsets, watch,
                plugins, cluster, loggers, topics, preview, dlq):
    for leaf in _leaves(command):
        add_connection_options(leaf)
    ctl.add_command(command)
ctl.add_command(config)


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
