"""Config helpers the built-in transformations and predicates share: Kafka's validators
(``NonEmptyListValidator``, ``NonNullValidator``, ``NonEmptyString``, ``ValidString``) with
their messages, and the ``replace.null.with.default`` key (KIP-1040)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    ExactMessage,
    Importance,
    Validator,
)

REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
_REPLACE_NULL_DOC = (
    "Whether to replace fields that have a default value and that are null to the default "
    "value. When set to true, the default value is used, otherwise null is used."
)


def parse_config(config_def: ConfigDef, configs: Mapping[str, str]) -> dict[str, Any]:
    """The typed config, or ValueError with every key's Kafka message (``configure``'s contract)."""
    return config_def.parse(configs)


def non_empty_list(name: str) -> Validator:
    """Kafka's ``NonEmptyListValidator`` for key ``name`` (its message shows the Java list)."""

    def check(value: Any) -> str | None:
        if value is not None and not value:
            return ExactMessage(f"Invalid value [] for configuration {name}: Empty list")
        return None

    return check


def non_null(value: Any) -> str | None:
    """Kafka's ``NonNullValidator``."""
    return "entry must be non null" if value is None else None


def non_empty_string(value: Any) -> str | None:
    """Kafka's ``NonEmptyString``: null passes, an empty (trimmed) string does not."""
    if value is not None and not str(value).strip():
        return "String must be non-empty"
    return None


def one_of(*options: str) -> Any:
    """Kafka's ``ValidString.in``: case-sensitive."""

    def check(value: Any) -> str | None:
        if value not in options:
            return f"String must be one of: {', '.join(options)}"
        return None

    return check


def key(
    name: str,
    config_type: ConfigType,
    documentation: str,
    *,
    default: Any = ...,
    validator: Any = None,
    importance: Importance = Importance.MEDIUM,
) -> ConfigKey:
    """A ConfigKey; ``default=...`` (the default) means required."""
    if default is ...:
        return ConfigKey(name, config_type, documentation, importance=importance,
                         validator=validator)
    return ConfigKey(name, config_type, documentation, default=default, importance=importance,
                     validator=validator)


def replace_null_with_default_key() -> ConfigKey:
    return key(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, _REPLACE_NULL_DOC, default=True)
