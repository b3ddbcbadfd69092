"""The worker properties that declare config providers, parsed and checked at start-up.

``config.providers`` lists the names references use; each name needs
``config.providers.<name>.class`` (a built-in provider, by its name here or Kafka's class
name, or a Java config provider of ``plugin.path``) and may set
``config.providers.<name>.param.<key>``: ``allowed.paths`` for the file and directory
providers, ``allowlist.pattern`` for the environment provider, any for a Java provider (its
``configure`` is given them, as Kafka Connect's worker does).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from connect_grpc.kernel.errors import InvalidArgumentError

__all__ = [
    "ALLOWED_PATHS",
    "ALLOWLIST_PATTERN",
    "CONFIG_PROVIDERS",
    "DIRECTORY",
    "ENV",
    "FILE",
    "JAVA",
    "PROVIDER_CLASSES",
    "ProviderSpec",
    "provider_specs",
]

CONFIG_PROVIDERS = "config.providers"
PLUGIN_PATH = "plugin.path"
ALLOWED_PATHS = "allowed.paths"
ALLOWLIST_PATTERN = "allowlist.pattern"

FILE = "file"
DIRECTORY = "directory"
ENV = "env"
#: A Java config provider of ``plugin.path``, built in the worker's JVM.
JAVA = "java"

_KAFKA_PACKAGE = "org.apache.kafka.common.config.provider"
_OUR_MODULE = "connect_grpc.config_providers.providers"

#: Every accepted ``config.providers.<name>.class`` value and the provider it names.
PROVIDER_CLASSES: dict[str, str] = {
    f"{prefix}{simple}": kind
    for simple, kind in (
        ("FileConfigProvider", FILE),
        ("DirectoryConfigProvider", DIRECTORY),
        ("EnvVarConfigProvider", ENV),
    )
    for prefix in ("", f"{_KAFKA_PACKAGE}.", f"{_OUR_MODULE}.")
}

_PARAMS: dict[str, frozenset[str]] = {
    FILE: frozenset({ALLOWED_PATHS}),
    DIRECTORY: frozenset({ALLOWED_PATHS}),
    ENV: frozenset({ALLOWLIST_PATTERN}),
}

#: A provider name must not contain what ends it in a reference (``:`` and ``}``).
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One declared provider: its name in references, which built-in it is (or JAVA), its
    parameters."""

    name: str
    kind: str
    #: A Java provider's class, as the worker properties name it.
    class_name: str = ""
    #: A Java provider's ``param.*`` settings (the prefix left out), in key order.
    params: tuple[tuple[str, str], ...] = ()
    #: ``allowed.paths``, each real (symbolic links resolved); None allows every path.
    allowed_paths: tuple[Path, ...] | None = None
    #: ``allowlist.pattern``: the environment variables it may read (full match).
    allowlist_pattern: str | None = None


def provider_specs(props: Mapping[str, str]) -> tuple[ProviderSpec, ...]:
    """The providers the worker properties declare, in ``config.providers`` order.

    Raises:
        InvalidArgumentError: naming the property at fault (a duplicate or malformed name, a
            missing or unknown class, an unknown parameter, a relative or missing allowed
            path, an invalid pattern, settings for a provider not listed).
    """
    names = _provider_names(props.get(CONFIG_PROVIDERS, ""))
    _reject_unlisted(props, names)
    return tuple(_spec(props, name) for name in names)


def _provider_names(raw: str) -> list[str]:
    names = [name.strip() for name in raw.split(",") if name.strip()]
    for name in names:
        if not _PROVIDER_NAME.fullmatch(name):
            raise InvalidArgumentError.for_field(
                CONFIG_PROVIDERS,
                f"provider name {name!r} may only contain ASCII letters, digits, '.', '_' "
                "and '-'",
            )
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InvalidArgumentError.for_field(
            CONFIG_PROVIDERS, f"provider {duplicates[0]!r} is listed more than once"
        )
    return names


def _reject_unlisted(props: Mapping[str, str], names: list[str]) -> None:
    prefix = f"{CONFIG_PROVIDERS}."
    for key in sorted(props):
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix) :]
        if not any(rest.startswith(f"{name}.") for name in names):
            raise InvalidArgumentError.for_field(
                key,
                f"sets a provider that {CONFIG_PROVIDERS} does not list (it lists: "
                f"{', '.join(names) or 'none'})",
            )


def _spec(props: Mapping[str, str], name: str) -> ProviderSpec:
    class_key = f"{CONFIG_PROVIDERS}.{name}.class"
    class_name = props.get(class_key, "").strip()
    kind = PROVIDER_CLASSES.get(class_name)
    if kind is None and class_name and props.get(PLUGIN_PATH, "").strip():
        # a Java provider: whether plugin.path has that class is known once the worker's
        # JVM has scanned it, which its start waits for
        params = _params(props, name, JAVA)
        return ProviderSpec(name, JAVA, class_name=class_name, params=tuple(sorted(params.items())))
    if kind is None:
        what = f"unknown provider class {class_name!r}" if class_name else "is required"
        raise InvalidArgumentError.for_field(
            class_key, f"{what}; the built-in providers are FileConfigProvider, "
            "DirectoryConfigProvider and EnvVarConfigProvider (Kafka's class names "
            f"{_KAFKA_PACKAGE}.* are accepted too), and a Java config provider's class is "
            f"looked up on {PLUGIN_PATH}, which is not set",
        )
    params = _params(props, name, kind)
    if kind == ENV:
        return ProviderSpec(name, kind, allowlist_pattern=_pattern(name, params))
    return ProviderSpec(name, kind, allowed_paths=_allowed_paths(name, params))


def _params(props: Mapping[str, str], name: str, kind: str) -> dict[str, str]:
    prefix = f"{CONFIG_PROVIDERS}.{name}.param."
    params = {key[len(prefix) :]: value for key, value in props.items() if key.startswith(prefix)}
    for param in sorted(params):
        if kind != JAVA and param not in _PARAMS[kind]:
            raise InvalidArgumentError.for_field(
                prefix + param,
                f"unknown parameter of the {kind} provider; it takes: "
                f"{', '.join(sorted(_PARAMS[kind]))}",
            )
    other_settings = [
        key for key in props
        if key.startswith(f"{CONFIG_PROVIDERS}.{name}.")
        and not key.startswith(prefix)
        and key != f"{CONFIG_PROVIDERS}.{name}.class"
    ]
    if other_settings:
        raise InvalidArgumentError.for_field(
            sorted(other_settings)[0],
            f"unknown setting; a provider takes {CONFIG_PROVIDERS}.{name}.class and "
            f"{prefix}<key>",
        )
    return params


def _allowed_paths(name: str, params: Mapping[str, str]) -> tuple[Path, ...] | None:
    field = f"{CONFIG_PROVIDERS}.{name}.param.{ALLOWED_PATHS}"
    raw = params.get(ALLOWED_PATHS, "").strip()
    if not raw:
        return None
    paths: list[Path] = []
    for item in (part.strip() for part in raw.split(",")):
        path = Path(item)
        if not item or not path.is_absolute():
            raise InvalidArgumentError.for_field(field, f"path {item!r} is not absolute")
        if not path.exists():
            raise InvalidArgumentError.for_field(field, f"path {item!r} does not exist")
        paths.append(Path(os.path.realpath(path)))
    return tuple(paths)


def _pattern(name: str, params: Mapping[str, str]) -> str | None:
    pattern = params.get(ALLOWLIST_PATTERN)
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidArgumentError.for_field(
            f"{CONFIG_PROVIDERS}.{name}.param.{ALLOWLIST_PATTERN}",
            f"not a valid regular expression: {exc}",
        ) from None
    return pattern
