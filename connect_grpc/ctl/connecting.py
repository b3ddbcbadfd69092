"""How ``ctl`` reaches its worker: the address, TLS and a bearer token, from the flags, the
environment and the chosen context, all checked before any call is made.

- The context: ``--context``'s; else, unless ``--target`` (or ``$CONNECT_GRPC_TARGET``) names
  the worker, the current one. Each flag overrides the same setting of the context.
- TLS is on with ``--tls``, ``--cacert``, ``--cert``, ``--key`` or ``--server-name``, or when
  the context has it; without a CA file the system's roots verify the worker.
- The token: ``--token-file``, else ``$CONNECT_GRPC_TOKEN``, else the context's token file;
  never a command-line argument (other users of the machine could read it). It is sent over
  TLS only, unless ``--insecure-token`` says that the network is trusted.

A file that cannot be read, a file that is not PEM, a certificate without its key (or the
reverse) and a token a header cannot carry are usage errors (exit 2) naming the flag, and
the context when the setting is the context's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import click

from connect_grpc.client.connection import ConnectionSettings, TlsOptions
from connect_grpc.ctl.contexts import (
    DEFAULT_TARGET,
    Context,
    Credentials,
    check_target,
    chosen_context,
)
from connect_grpc.security.credential_files import token_problem

TOKEN_ENV = "CONNECT_GRPC_TOKEN"
PEM_MARKER = b"-----BEGIN "

#: The flags, by the Credentials field each sets.
FLAG_OF = {
    "ca_file": "--cacert",
    "cert_file": "--cert",
    "key_file": "--key",
    "server_name": "--server-name",
    "token_file": "--token-file",
}

_FILE = click.Path(exists=True, dir_okay=False, readable=True, path_type=Path)

#: The TLS and token flags of every command that calls a worker: (declaration, settings).
SECURITY_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--tls", {"is_flag": True, "help": "Use TLS, verifying the worker against the system's "
                                        "CA roots unless --cacert is given."}),
    ("--cacert", {"type": _FILE, "metavar": "FILE",
                  "help": "PEM bundle of the CA(s) that signed the worker's certificate "
                          "(implies --tls)."}),
    ("--cert", {"type": _FILE, "metavar": "FILE",
                "help": "PEM client certificate, for mutual TLS (with --key)."}),
    ("--key", {"type": _FILE, "metavar": "FILE", "help": "PEM private key of --cert."}),
    ("--server-name", {"metavar": "NAME",
                       "help": "Verify the worker's certificate against NAME instead of the "
                               "target's host."}),
    ("--token-file", {"type": _FILE, "metavar": "FILE",
                      "help": f"File holding the bearer token to send (else ${TOKEN_ENV}, "
                              "else the context's)."}),
    ("--insecure-token", {"is_flag": True,
                          "help": "Send the token even without TLS (a trusted network only)."}),
)


@dataclass
class ConnectionOptions:
    """What the command line says about the worker (None or False: not said); flags given
    after the command's name overwrite those given before it."""

    target: str | None = None
    context: str | None = None
    tls: bool = False
    cacert: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str | None = None
    token_file: Path | None = None
    insecure_token: bool = False

    def credentials(self) -> Credentials:
        """The flags' TLS files and token file (paths made absolute, as a context keeps them)."""
        return Credentials(
            tls=self.tls,
            ca_file=_absolute(self.cacert),
            cert_file=_absolute(self.cert),
            key_file=_absolute(self.key),
            server_name=self.server_name or "",
            token_file=_absolute(self.token_file),
        )


def _absolute(path: Path | None) -> Path | None:
    return None if path is None else path.expanduser().absolute()


def connection_settings(
    options: ConnectionOptions, environ: Mapping[str, str]
) -> ConnectionSettings:
    """The worker's address, TLS options and token (see the module docstring).

    Raises:
        click.UsageError: a bad file or token, naming the flag (and the context).
        InvalidArgumentError: a bad ``--target``; NotFoundError: an unknown ``--context``.
    """
    context = chosen_context(options.target, options.context)
    if options.target:
        target = check_target(options.target)
    else:
        target = context.target if context is not None else DEFAULT_TARGET
    credentials, sources = _merged(options.credentials(), context)
    check_tls_files(credentials, sources)
    token, token_source = _token(options, credentials, sources, environ)
    tls = _tls_options(credentials) if credentials.uses_tls else None
    if token and tls is None and not options.insecure_token:
        raise click.UsageError(
            f"{token_source}: a bearer token is sent over TLS only: add --tls or --cacert "
            "(or --insecure-token, on a network you trust)"
        )
    return ConnectionSettings(target, tls, token)


def _merged(
    given: Credentials, context: Context | None
) -> tuple[Credentials, dict[str, str]]:
    """The flags' settings over the context's, and where each one came from."""
    stored = context.credentials if context is not None else Credentials()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, flag in FLAG_OF.items():
        if getattr(given, name):
            values[name], sources[name] = getattr(given, name), flag
        elif context is not None and getattr(stored, name):
            values[name] = getattr(stored, name)
            sources[name] = f"{flag} of context {context.name!r}"
    return Credentials(tls=given.tls or stored.tls, **values), sources


def check_tls_files(credentials: Credentials, sources: Mapping[str, str] = FLAG_OF) -> None:
    """Usage errors for a certificate without its key (or the reverse) and for a TLS file
    that cannot be read or is not PEM; ``sources`` names where each setting came from (by
    default the flags)."""
    if (credentials.cert_file is None) != (credentials.key_file is None):
        present, missing = (("cert_file", "--key") if credentials.key_file is None
                            else ("key_file", "--cert"))
        raise click.UsageError(
            f"{sources[present]}: a client certificate needs both --cert and --key; "
            f"{missing} is missing"
        )
    for name in ("ca_file", "cert_file", "key_file"):
        path = getattr(credentials, name)
        if path is not None:
            _check_pem(path, sources[name])


def _check_pem(path: Path, source: str) -> None:
    content = _read(path, source)
    if PEM_MARKER not in content:
        raise click.UsageError(f"{source}: {path} is not a PEM file (no '-----BEGIN' line)")


def _read(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise click.UsageError(
            f"{source}: cannot read {path}: {exc.strerror or exc}"
        ) from None


def read_token(path: Path, source: str) -> str:
    """The token in ``path`` (surrounding whitespace dropped); a usage error naming
    ``source`` when it cannot be read or is not a token (the error never shows it)."""
    try:
        token = _read(path, source).decode("ascii").strip()
    except UnicodeDecodeError:
        raise click.UsageError(f"{source}: {path}: a token is printable ASCII") from None
    if not token:
        raise click.UsageError(f"{source}: {path} is empty")
    problem = token_problem(token)
    if problem is not None:
        raise click.UsageError(f"{source}: {path}: {problem}")
    return token


def _token(
    options: ConnectionOptions,
    credentials: Credentials,
    sources: Mapping[str, str],
    environ: Mapping[str, str],
) -> tuple[str, str]:
    """The token and where it came from: ``--token-file``, else the environment, else the
    context's file; ("", "") for none."""
    from_environment = environ.get(TOKEN_ENV, "").strip()
    if options.token_file is None and from_environment:
        source = f"${TOKEN_ENV}"
        problem = token_problem(from_environment)
        if problem is not None:
            raise click.UsageError(f"{source}: {problem}")
        return from_environment, source
    if credentials.token_file is None:
        return "", ""
    source = sources["token_file"]
    return read_token(credentials.token_file, source), source


def _tls_options(credentials: Credentials) -> TlsOptions:
    return TlsOptions(
        ca_file=credentials.ca_file,
        cert_file=credentials.cert_file,
        key_file=credentials.key_file,
        server_name=credentials.server_name,
    )


CONNECTION_FIELDS = frozenset(field.name for field in fields(ConnectionOptions))


def option_attribute(declaration: str) -> str:
    """The ConnectionOptions field a flag sets (``--server-name``: ``server_name``)."""
    name = declaration.removeprefix("--").replace("-", "_")
    if name not in CONNECTION_FIELDS:
        raise ValueError(f"{declaration} sets no field of ConnectionOptions")
    return name
