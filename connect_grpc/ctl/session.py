"""What every ``ctl`` command shares: the client of the chosen worker, the output, the
options, and the one place where an error becomes a message and an exit code."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, TypeVar

import click

from connect_grpc.client import ConnectClient
from connect_grpc.client.connection import ConnectionSettings
from connect_grpc.ctl.connecting import (
    CONNECTION_FIELDS,
    SECURITY_FLAGS,
    ConnectionOptions,
    connection_settings,
    option_attribute,
)
from connect_grpc.ctl.exit_codes import ExitCode, Failure, failure_of
from connect_grpc.ctl.render import Output
from connect_grpc.kernel.errors import ConnectError, NotFoundError

F = TypeVar("F", bound=Callable[..., Any])

OUTPUTS = ("table", "json", "yaml")


class Session:
    """One ``ctl`` invocation: where to connect (resolved on first use) and where to write."""

    def __init__(self, connection: ConnectionOptions, request_timeout: float) -> None:
        #: What ``--target``, ``--context``, the TLS and token flags and ``--request-timeout``
        #: say (given before or after the command's name); read when the client is first
        #: needed.
        self.connection = connection
        self.request_timeout = request_timeout
        self.output = Output()
        self._client: ConnectClient | None = None

    @cached_property
    def settings(self) -> ConnectionSettings:
        """Where the worker is and how to reach it; a bad setting fails here, before any
        call."""
        return connection_settings(self.connection, os.environ)

    @property
    def client(self) -> ConnectClient:
        if self._client is None:
            self._client = ConnectClient(
                self.settings, timeout=self.request_timeout, retry_unavailable=True
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def fail(self, failure: Failure) -> ExitCode:
        """Shows the failure; returns its exit code."""
        self.output.failure(failure)
        return failure.exit_code


pass_session = click.make_pass_decorator(Session)


class CtlGroup(click.Group):
    """The root group: a domain error from any command is shown (gRPC code, reason, message,
    every violation) and becomes the exit code of its code's family."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConnectError as error:
            session = ctx.find_object(Session)
            output = session.output if session is not None else Output()
            failure = failure_of(error)
            output.failure(failure)
            raise click.exceptions.Exit(failure.exit_code) from None


def security_options(function: F) -> F:
    """The TLS and token flags (:data:`SECURITY_FLAGS`) as options of ``function``."""
    for declaration, settings in reversed(SECURITY_FLAGS):
        function = click.option(declaration, **settings)(function)
    return function


def add_connection_options(command: click.Command) -> None:
    """Lets ``--target``, ``--context``, ``--request-timeout`` and the TLS and token flags
    also follow the command's name (``ctl get connectors --target HOST:PORT``), as
    kubectl's global flags do."""
    command.params += [
        click.Option(["--target"], expose_value=False, callback=_on_connection("target"),
                     help="The worker's gRPC address, HOST:PORT (overrides the context)."),
        click.Option(["--context"], expose_value=False, callback=_on_connection("context"),
                     help="Use this context instead of the current one."),
        click.Option(["--request-timeout"], type=click.FloatRange(min=0, min_open=True),
                     expose_value=False, callback=_on_session("request_timeout"),
                     help="Deadline of each call, in seconds (default 30)."),
        *(click.Option([declaration], expose_value=False,
                       callback=_on_connection(option_attribute(declaration)), **settings)
          for declaration, settings in SECURITY_FLAGS),
    ]


def _on_session(attribute: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        session = ctx.find_object(Session)
        if value is not None and session is not None:
            setattr(session, attribute, value)
        return value

    return store


def _on_connection(attribute: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        session = ctx.find_object(Session)
        # An absent flag is False: it must not undo the same flag given before the command.
        if value is not None and value is not False and session is not None:
            setattr(session.connection, attribute, value)
        return value

    return store


def output_option(choices: Sequence[str] = OUTPUTS) -> Callable[[F], F]:
    return click.option(
        "-o", "--output", type=click.Choice(choices, case_sensitive=False), default="table",
        show_default=True, help="Output format; json and yaml are stable, for programs.",
    )


def regex_option(help_text: str) -> Callable[[F], F]:
    return click.option("-e", "--regexp", "pattern", callback=_compile_regex, help=help_text)


def _compile_regex(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise click.BadParameter(f"not a valid regular expression: {exc}") from None


def matching(session: Session, pattern: re.Pattern[str]) -> list[str]:
    """The connectors whose whole name matches ``pattern``; NotFoundError when none does."""
    names = [entry.name for entry in session.client.list_connectors()
             if pattern.fullmatch(entry.name)]
    if not names:
        raise NotFoundError(f"no connector name matches the regular expression {pattern.pattern!r}")
    return names


def complete_connector_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[str]:
    """Shell completion of connector names, asked of the worker (nothing if unreachable)."""
    given: dict[str, Any] = {}
    node: click.Context | None = ctx
    while node is not None:  # the flags typed before the command so far, nearest first
        for name, value in node.params.items():
            field = "context" if name == "context_name" else name
            if field in CONNECTION_FIELDS and value is not None and value is not False:
                given.setdefault(field, value)
        node = node.parent
    try:
        settings = connection_settings(ConnectionOptions(**given), os.environ)
        with ConnectClient(settings, timeout=2.0) as client:
            return [entry.name for entry in client.list_connectors()
                    if entry.name.startswith(incomplete)]
    except (ConnectError, click.ClickException):
        return []
