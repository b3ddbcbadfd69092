"""The built-in config providers: a key of a properties file, a file of a directory, an
environment variable; each restricted as Kafka's are (``allowed.paths``,
``allowlist.pattern``).

A provider never puts a value in an error message: the messages name the provider, the
path and the key only.
"""

from __future__ import annotations

import abc
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from connect_grpc.config_providers.specs import DIRECTORY, ENV, FILE, ProviderSpec
from connect_grpc.kernel.properties import read_properties

__all__ = [
    "ConfigProvider",
    "ConfigProviderError",
    "ConfigValues",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "build_provider",
]


class ConfigProviderError(Exception):
    """A provider cannot look up the path a reference names; the message says why."""


@dataclass(frozen=True, slots=True)
class ConfigValues:
    """What a provider found at a path: the values of the keys it has, and how long they
    hold (milliseconds; None: for good, as the built-in providers' always do)."""

    values: Mapping[str, str]
    ttl_ms: int | None = None


class ConfigProvider(Protocol):
    """Looks up the values references ask for. Thread-safe; reads its source on every call,
    so a rotated secret is picked up when a connector or task starts again."""

    def get(self, path: str, keys: Collection[str]) -> dict[str, str]:
        """The values of those ``keys`` found at ``path`` (a key without one is left out).

        Raises:
            ConfigProviderError: the path itself cannot be used (not allowed, unreadable,
                malformed for this provider).
        """
        ...

    def why_missing(self, path: str, key: str) -> str:
        """Why ``get`` found no value for ``key`` at ``path``."""
        ...

    def read(self, path: str, keys: Collection[str]) -> ConfigValues:
        """:meth:`get`'s values with the time to live the provider gives them."""
        ...


class _Lasting(abc.ABC):
    """A provider whose values hold until they are read again (every built-in one)."""

    @abc.abstractmethod
    def get(self, path: str, keys: Collection[str]) -> dict[str, str]: ...

    def read(self, path: str, keys: Collection[str]) -> ConfigValues:
        return ConfigValues(self.get(path, keys))


class _AllowedPaths:
    """Kafka's ``allowed.paths``: every path a provider reads must be one of them or under
    one. Symbolic links are resolved first, so a link cannot lead outside them."""

    def __init__(self, provider: str, allowed: tuple[Path, ...] | None) -> None:
        self._provider = provider
        self._allowed = allowed

    def check(self, raw: str) -> Path:
        if not raw:
            raise ConfigProviderError(
                f"provider {self._provider!r} needs a path: "
                f"${{{self._provider}:/path/to/source:key}}"
            )
        path = Path(os.path.realpath(raw))
        if self._allowed is not None and not any(
            path == allowed or allowed in path.parents for allowed in self._allowed
        ):
            listed = ", ".join(str(p) for p in self._allowed)
            raise ConfigProviderError(
                f"path {raw} is not under the allowed.paths of provider {self._provider!r} "
                f"({listed})"
            )
        return path


class FileConfigProvider(_Lasting):
    """``${file:/path/to/file.properties:key}``: a key of a properties file."""

    def __init__(self, name: str, allowed_paths: tuple[Path, ...] | None = None) -> None:
        self._allowed = _AllowedPaths(name, allowed_paths)

    def get(self, path: str, keys: Collection[str]) -> dict[str, str]:
        file = self._allowed.check(path)
        try:
            properties = read_properties(file)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigProviderError(
                f"cannot read properties file {path}: {_reason(exc)}"
            ) from None
        return {key: properties[key] for key in keys if key in properties}

    def why_missing(self, path: str, key: str) -> str:
        return f"properties file {path} has no key {key!r}"


class DirectoryConfigProvider(_Lasting):
    """``${dir:/path/to/directory:name}``: the whole content of the file ``name`` in the
    directory (a Kubernetes or Docker secret mount, for instance)."""

    def __init__(self, name: str, allowed_paths: tuple[Path, ...] | None = None) -> None:
        self._allowed = _AllowedPaths(name, allowed_paths)

    def get(self, path: str, keys: Collection[str]) -> dict[str, str]:
        directory = self._allowed.check(path)
        if not directory.is_dir():
            raise ConfigProviderError(f"{path} is not a directory")
        values: dict[str, str] = {}
        for key in keys:
            if not _is_file_name(key):
                continue
            file = directory / key
            if not file.is_file():
                continue
            self._allowed.check(str(file))
            try:
                values[key] = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigProviderError(
                    f"cannot read {key!r} in {path}: {_reason(exc)}"
                ) from None
        return values

    def why_missing(self, path: str, key: str) -> str:
        if not _is_file_name(key):
            return f"key {key!r} is not a file name"
        return f"directory {path} has no regular file {key!r}"


class EnvVarConfigProvider(_Lasting):
    """``${env:VARIABLE}``: an environment variable of the worker process, if its name fully
    matches ``allowlist.pattern`` (every variable when it is not set)."""

    def __init__(
        self,
        name: str,
        allowlist_pattern: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """``environ`` defaults to the process's environment, as it is now."""
        self._name = name
        self._pattern = allowlist_pattern
        self._allowlist = re.compile(allowlist_pattern or ".*")
        self._environ = dict(os.environ if environ is None else environ)

    def get(self, path: str, keys: Collection[str]) -> dict[str, str]:
        if path:
            raise ConfigProviderError(
                f"provider {self._name!r} reads environment variables and takes no path: "
                f"${{{self._name}:VARIABLE}}"
            )
        return {
            key: self._environ[key]
            for key in keys
            if self._allowlist.fullmatch(key) and key in self._environ
        }

    def why_missing(self, path: str, key: str) -> str:
        if not self._allowlist.fullmatch(key):
            return (
                f"environment variable {key} does not match the allowlist.pattern of provider "
                f"{self._name!r} ({self._pattern})"
            )
        return f"environment variable {key} is not set"


def build_provider(spec: ProviderSpec) -> ConfigProvider:
    """The provider a spec declares."""
    if spec.kind == FILE:
        return FileConfigProvider(spec.name, spec.allowed_paths)
    if spec.kind == DIRECTORY:
        return DirectoryConfigProvider(spec.name, spec.allowed_paths)
    if spec.kind == ENV:
        return EnvVarConfigProvider(spec.name, spec.allowlist_pattern)
    raise ValueError(f"unknown provider kind {spec.kind!r}")


def _is_file_name(key: str) -> bool:
    return bool(key) and key not in (".", "..") and "/" not in key and os.sep not in key


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "not UTF-8 text"
