"""``ctl config …``: named contexts."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from connect_grpc.ctl import documents
from connect_grpc.ctl.connecting import (
    SECURITY_FLAGS,
    ConnectionOptions,
    check_tls_files,
    read_token,
)
from connect_grpc.ctl.contexts import Context, ContextsFile, Credentials, config_dir
from connect_grpc.ctl.exit_codes import ExitCode
from connect_grpc.ctl.session import Session, output_option, pass_session

#: The flags a context stores (not --insecure-token: that choice is made call by call).
STORED_FLAGS = tuple(flag for flag in SECURITY_FLAGS if flag[0] != "--insecure-token")


@click.group()
def config() -> None:
    """Named contexts: which worker ctl talks to (kept in CONNECT_GRPC_CONFIG_DIR, else
    $XDG_CONFIG_HOME/connect-grpc, else ~/.config/connect-grpc)."""


def _stored_flags(function: click.decorators.FC) -> click.decorators.FC:
    for declaration, settings in reversed(STORED_FLAGS):
        function = click.option(declaration, **settings)(function)
    return function


@config.command("set-context")
@click.argument("name")
@click.option("--target", required=True, help="The worker's gRPC address, HOST:PORT.")
@_stored_flags
@pass_session
def set_context(
    session: Session, name: str, target: str, tls: bool, cacert: Path | None,
    cert: Path | None, key: Path | None, server_name: str | None, token_file: Path | None,
) -> None:
    """Create or update a context (the first one becomes current): its target, TLS files
    and token file become the ones given (paths are stored, never the token)."""
    credentials = ConnectionOptions(
        tls=tls, cacert=cacert, cert=cert, key=key, server_name=server_name,
        token_file=token_file,
    ).credentials()
    _check_stored(credentials)
    contexts = ContextsFile.load()
    created = contexts.set_context(name, target, credentials)
    contexts.save()
    current = " (current)" if contexts.current == name else ""
    session.output.line(f"context {name} {'created' if created else 'updated'}{current}")


def _check_stored(credentials: Credentials) -> None:
    check_tls_files(credentials)
    if credentials.token_file is None:
        return
    read_token(credentials.token_file, "--token-file")
    if not credentials.uses_tls:
        raise click.UsageError(
            "--token-file: a bearer token is sent over TLS only: add --tls or --cacert"
        )


@config.command("use-context")
@click.argument("name")
@pass_session
def use_context(session: Session, name: str) -> None:
    """Make a context the current one."""
    contexts = ContextsFile.load()
    contexts.use(name)
    contexts.save()
    session.output.line(f"switched to context {name}")


@config.command("delete-context")
@click.argument("name")
@pass_session
def delete_context(session: Session, name: str) -> None:
    """Delete a context."""
    contexts = ContextsFile.load()
    contexts.delete(name)
    contexts.save()
    session.output.line(f"context {name} deleted")


@config.command("get-contexts")
@output_option(("table", "wide", "json", "yaml"))
@pass_session
def get_contexts(session: Session, output: str) -> None:
    """Every context; * marks the current one. TLS is - (plaintext), tls or mtls (with a
    client certificate); wide adds the files; json and yaml show the context as stored."""
    found = ContextsFile.load().list()
    if output in ("json", "yaml"):
        session.output.document(documents.contexts(found), output)
        return
    wide = output == "wide"
    headers = ["CURRENT", "NAME", "TARGET", "TLS"]
    if wide:
        headers += ["CA", "CERT", "KEY", "SERVER-NAME"]
    session.output.table([*headers, "TOKEN-FILE"], [_context_row(c, wide) for c in found])


def _context_row(context: Context, wide: bool) -> list[str]:
    credentials = context.credentials
    mode = "-"
    if credentials.uses_tls:
        mode = "mtls" if credentials.cert_file else "tls"
    row = ["*" if context.current else "", context.name, context.target, mode]
    if wide:
        ca = _shown(credentials.ca_file)
        row += [ca if ca != "-" or not credentials.uses_tls else "system",
                _shown(credentials.cert_file), _shown(credentials.key_file),
                credentials.server_name or "-"]
    return [*row, _shown(credentials.token_file)]


def _shown(path: Path | None) -> str:
    return "-" if path is None else str(path)


@config.command("current-context")
@pass_session
def current_context(session: Session) -> None:
    """The current context's name (exit 3 when none is set)."""
    contexts = ContextsFile.load()
    current = contexts.current_context()
    if current is None:
        session.output.problem(
            f"no current context in {config_dir()}; set one with: connect-grpc ctl config "
            "set-context NAME --target HOST:PORT"
        )
        raise click.exceptions.Exit(ExitCode.NOT_FOUND)
    session.output.line(Text(current.name))
