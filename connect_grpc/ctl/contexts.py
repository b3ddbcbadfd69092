"""Named contexts of ``connect-grpc ctl``: which worker to talk to, kept in a JSON file.

The file is ``contexts.json`` in ``$CONNECT_GRPC_CONFIG_DIR``, else
``$XDG_CONFIG_HOME/connect-grpc``, else ``~/.config/connect-grpc``::

    {
      "version": 1,
      "current-context": "local",
      "contexts": {
        "local": {"target": "localhost:8083"},
        "prod": {"target": "worker-1.example.com:8443",
                 "tls": {"ca-file": "/etc/connect/ca.pem", "cert-file": "/home/me/me.pem",
                         "key-file": "/home/me/me.key", "server-name": "connect.example.com"},
                 "token-file": "/home/me/prod.token"}
      }
    }

Each context is an object: ``target``, and optionally ``tls`` (present: TLS; its keys are
PEM files and the name to verify the worker's certificate against; none of them: the
system's roots) and ``token-file`` (the file holding a bearer token: the path only, never
the token). Files of version 1 without ``tls`` or ``token-file`` are plaintext contexts.
Keys this version does not know, in a context or at the top, are kept as they are when the
file is rewritten, so an older ``ctl`` never drops a newer one's settings.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connect_grpc.kernel.errors import InvalidArgumentError, NotFoundError

CONFIG_DIR_ENV = "CONNECT_GRPC_CONFIG_DIR"
CONTEXTS_FILE = "contexts.json"
FORMAT_VERSION = 1
#: Where ``ctl`` connects when no ``--target`` and no context says otherwise (``make demo``).
DEFAULT_TARGET = "localhost:8083"
MAX_PORT = 65535


def config_dir() -> Path:
    """The directory of ``ctl``'s settings (see the module docstring)."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "connect-grpc"


def check_target(target: str, field_name: str = "--target") -> str:
    """``target`` trimmed if it is ``HOST:PORT`` (``[IPv6]:PORT`` too) or a ``unix:`` path;
    else InvalidArgumentError naming ``field_name``."""
    text = target.strip()
    if text.startswith("unix:") and len(text) > len("unix:"):
        return text
    host, sep, port = text.rpartition(":")
    if not sep or not host or host in ("[", "[]", "unix"):
        raise InvalidArgumentError.for_field(
            field_name, f"expected HOST:PORT (e.g. {DEFAULT_TARGET}), got {target!r}"
        )
    if not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
        raise InvalidArgumentError.for_field(
            field_name, f"the port of {target!r} must be a number from 1 to {MAX_PORT}"
        )
    return text


TLS_KEY = "tls"
TOKEN_FILE_KEY = "token-file"
CA_FILE_KEY = "ca-file"
CERT_FILE_KEY = "cert-file"
KEY_FILE_KEY = "key-file"
SERVER_NAME_KEY = "server-name"


@dataclass(frozen=True, slots=True)
class Credentials:
    """How a context reaches its worker besides the address: TLS with these PEM files (on
    when ``tls`` or any TLS setting is given) and the file of a bearer token. Paths only."""

    tls: bool = False
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str = ""
    token_file: Path | None = None

    @property
    def uses_tls(self) -> bool:
        return self.tls or bool(self.ca_file or self.cert_file or self.key_file
                                or self.server_name)

    def to_settings(self) -> dict[str, Any]:
        """The context keys that store these credentials (none for plaintext, no token)."""
        settings: dict[str, Any] = {}
        if self.uses_tls:
            tls = {CA_FILE_KEY: self.ca_file, CERT_FILE_KEY: self.cert_file,
                   KEY_FILE_KEY: self.key_file, SERVER_NAME_KEY: self.server_name}
            settings[TLS_KEY] = {key: str(value) for key, value in tls.items() if value}
        if self.token_file is not None:
            settings[TOKEN_FILE_KEY] = str(self.token_file)
        return settings

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], where: str) -> Credentials:
        """Reads the keys :meth:`to_settings` writes; a malformed one is InvalidArgumentError
        naming ``<where>.<key>``."""
        token_file = _optional_string(settings, TOKEN_FILE_KEY, where)
        tls = settings.get(TLS_KEY)
        if tls is None:
            return cls(token_file=_path(token_file))
        if not isinstance(tls, dict):
            raise InvalidArgumentError.for_field(f"{where}.{TLS_KEY}", "must be an object")
        tls_where = f"{where}.{TLS_KEY}"
        return cls(
            tls=True,
            ca_file=_path(_optional_string(tls, CA_FILE_KEY, tls_where)),
            cert_file=_path(_optional_string(tls, CERT_FILE_KEY, tls_where)),
            key_file=_path(_optional_string(tls, KEY_FILE_KEY, tls_where)),
            server_name=_optional_string(tls, SERVER_NAME_KEY, tls_where) or "",
            token_file=_path(token_file),
        )


def _optional_string(settings: Mapping[str, Any], key: str, where: str) -> str | None:
    value = settings.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidArgumentError.for_field(f"{where}.{key}", "must be a non-empty string")
    return value


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


@dataclass(frozen=True, slots=True)
class Context:
    """A named worker address and how to reach it, with any settings a later version added,
    untouched (``settings``: every key but ``target``, as stored)."""

    name: str
    target: str
    current: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    credentials: Credentials = field(default_factory=Credentials)


@dataclass
class ContextsFile:
    """The contexts file, read whole and written whole (atomically, owner-only)."""

    path: Path
    current: str | None = None
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Top-level keys this version does not know, written back unchanged.
    other: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> ContextsFile:
        """Reads the file (none yet: no contexts); a malformed one is InvalidArgumentError
        naming the file and the field."""
        path = path or config_dir() / CONTEXTS_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            raise InvalidArgumentError.for_field(str(path), f"cannot read: {exc}") from None
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise InvalidArgumentError.for_field(str(path), f"not valid JSON: {exc}") from None
        return cls._from_document(path, document)

    @classmethod
    def _from_document(cls, path: Path, document: Any) -> ContextsFile:
        if not isinstance(document, dict):
            raise InvalidArgumentError.for_field(str(path), "expected a JSON object")
        contexts = document.get("contexts", {})
        if not isinstance(contexts, dict):
            raise InvalidArgumentError.for_field(f"{path}: contexts", "must be an object")
        for name, context in contexts.items():
            where = f"{path}: contexts.{name}"
            if not isinstance(context, dict):
                raise InvalidArgumentError.for_field(where, "must be an object")
            if not isinstance(context.get("target"), str):
                raise InvalidArgumentError.for_field(f"{where}.target", "must be a string")
            Credentials.from_settings(context, where)
        current = document.get("current-context")
        if current is not None and not isinstance(current, str):
            raise InvalidArgumentError.for_field(f"{path}: current-context", "must be a string")
        other = {
            key: value for key, value in document.items()
            if key not in ("version", "current-context", "contexts")
        }
        return cls(path, current, dict(contexts), other)

    def list(self) -> list[Context]:
        """Every context, by name."""
        return [self._context(name) for name in sorted(self.contexts)]

    def get(self, name: str) -> Context:
        if name not in self.contexts:
            known = ", ".join(sorted(self.contexts)) or "none"
            raise NotFoundError(
                f"no context {name!r} in {self.path} (known: {known}); "
                "create it with: connect-grpc ctl config set-context NAME --target HOST:PORT"
            )
        return self._context(name)

    def current_context(self) -> Context | None:
        return self.get(self.current) if self.current in self.contexts else None

    def set_context(
        self, name: str, target: str, credentials: Credentials | None = None
    ) -> bool:
        """Creates or updates ``name``: its target, TLS and token file become these (settings
        this version does not know are kept); the first context becomes current. Returns
        True when it was created."""
        if not name.strip():
            raise InvalidArgumentError.for_field("NAME", "must not be empty")
        created = name not in self.contexts
        kept = {key: value for key, value in self.contexts.get(name, {}).items()
                if key not in (TLS_KEY, TOKEN_FILE_KEY)}
        self.contexts[name] = {**kept, "target": check_target(target),
                               **(credentials or Credentials()).to_settings()}
        if self.current not in self.contexts:
            self.current = name
        return created

    def use(self, name: str) -> None:
        self.get(name)
        self.current = name

    def delete(self, name: str) -> None:
        self.get(name)
        del self.contexts[name]
        if self.current == name:
            self.current = None

    def save(self) -> None:
        """Writes the file atomically, readable by its owner only (it names the files of
        credentials)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            **self.other,
            "version": FORMAT_VERSION,
            "current-context": self.current,
            "contexts": self.contexts,
        }
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".contexts-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(document, out, indent=2, sort_keys=True)
                out.write("\n")
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _context(self, name: str) -> Context:
        settings = dict(self.contexts[name])
        target = settings.pop("target")
        credentials = Credentials.from_settings(settings, f"{self.path}: contexts.{name}")
        return Context(name, target, name == self.current, settings, credentials)


def chosen_context(target: str | None, context: str | None) -> Context | None:
    """The context whose settings apply: ``--context``'s; else, unless ``--target`` names
    the worker, the current one (so that a context's token never goes to a ``--target``
    the user did not pair it with); else None."""
    if context:
        return ContextsFile.load().get(context)
    if target:
        return None
    return ContextsFile.load().current_context()


def resolve_target(target: str | None, context: str | None) -> str:
    """The worker to talk to: ``--target``, else ``--context``'s, else the current context's,
    else :data:`DEFAULT_TARGET`."""
    if target:
        return check_target(target)
    chosen = chosen_context(None, context)
    return chosen.target if chosen is not None else DEFAULT_TARGET
