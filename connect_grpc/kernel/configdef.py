"""Config definitions for plugins: what keys a connector takes, their types and defaults.

A small counterpart of Kafka's ``ConfigDef``: it parses string configs, reports every
problem per key (for ValidateConfig) and describes keys (for ListPlugins).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connect_grpc.kernel.domain import ConfigKeyInfo


class ConfigType(enum.Enum):
    STRING = "STRING"
    INT = "INT"
    LONG = "LONG"
    SHORT = "SHORT"
    DOUBLE = "DOUBLE"
    BOOLEAN = "BOOLEAN"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


#: A validator gets the parsed value and returns an error message, or None when valid.
Validator = Callable[[Any], str | None]


class ExactMessage(str):
    """A validator's message that is the whole error as Kafka words it (its
    ``ConfigException(message)``, or one naming the value as a Java list), not to be
    prefixed with ``Invalid value <raw> for configuration <key>:``."""

    __slots__ = ()


def java_list(values: Iterable[Any]) -> str:
    """A list as Java's ``List.toString`` prints it: ``[a, b]``."""
    return "[" + ", ".join(str(v) for v in values) + "]"

_NO_DEFAULT = object()


def at_least(minimum: float) -> Validator:
    def check(value: Any) -> str | None:
        if value is not None and value < minimum:
            return f"Value must be at least {minimum}"
        return None

    return check


def at_most(maximum: float, why: str = "") -> Validator:
    def check(value: Any) -> str | None:
        if value is not None and value > maximum:
            return f"Value must be no more than {maximum}{why}"
        return None

    return check


def finite(value: Any) -> str | None:
    """Rejects NaN and ±Infinity, which Java's ``Double.parseDouble`` accepts."""
    if isinstance(value, float) and not math.isfinite(value):
        return "Value must be a finite number"
    return None


def valid_regex(value: Any) -> str | None:
    if value is None:
        return None
    try:
        re.compile(str(value))
    except re.error as exc:
        return f"Not a valid regular expression: {exc}"
    return None


def all_of(*validators: Validator) -> Validator:
    """Runs validators in order; the first error wins."""

    def check(value: Any) -> str | None:
        for validator in validators:
            message = validator(value)
            if message:
                return message
        return None

    return check


#: Kafka's legal topic names (``org.apache.kafka.common.internals.Topic``).
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249


def topic_name_error(name: str) -> str | None:
    """Kafka's own reason a topic name is illegal, or None when it is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
                "characters")
    if not _TOPIC_NAME.fullmatch(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None


def single_topic(connector: str) -> Validator:
    """A STRING value naming exactly one legal Kafka topic."""

    def check(value: Any) -> str | None:
        if value is None or not str(value).strip():
            return "String must be non-empty"
        if "," in str(value):
            return f"{connector} takes a single topic, not a list"
        return topic_name_error(str(value).strip())

    return check


def one_of_ignoring_case(*options: str) -> Validator:
    """A STRING that is one of ``options`` in any case (Kafka's CaseInsensitiveValidString)."""
    allowed = {option.upper() for option in options}

    def check(value: Any) -> str | None:
        if value is None or str(value).upper() not in allowed:
            return f"String must be one of (case insensitive): {', '.join(options)}"
        return None

    return check


def one_of(*options: str) -> Validator:
    """A STRING that is exactly one of ``options`` (Kafka's ValidString: case-sensitive)."""

    def check(value: Any) -> str | None:
        if value is None or str(value) not in options:
            return f"String must be one of: {', '.join(options)}"
        return None

    return check


def non_empty_string(value: Any) -> str | None:
    if value is not None and not str(value).strip():
        return "String must be non-empty"
    return None


def non_empty_list(value: Any) -> str | None:
    if value is not None and not value:
        return "List must be non-empty"
    return None


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    documentation: str
    default: Any = _NO_DEFAULT
    importance: Importance = Importance.MEDIUM
    validator: Validator | None = None
    group: str = ""
    order_in_group: int = 0
    display_name: str = ""

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT

    def describe(self) -> ConfigKeyInfo:
        return ConfigKeyInfo(
            name=self.name,
            type=self.type.value,
            required=self.required,
            default_value=None if self.required else _to_text(self.default),
            importance=self.importance.value,
            documentation=self.documentation,
            group=self.group,
            order_in_group=self.order_in_group,
            width="NONE",
            display_name=self.display_name or self.name,
        )


def _to_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

#: Java's ``Double.parseDouble`` grammar (decimal and hexadecimal floating literals, with an
#: optional ``f``/``d`` suffix, ``NaN`` and ``Infinity``), less nothing and plus nothing.
_JAVA_DOUBLE = re.compile(
    r"""[+-]?(?:
        NaN | Infinity
      | (?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?
      | 0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?
    )""",
    re.VERBOSE | re.ASCII,
)


def java_trim(text: str) -> str:
    """Java's ``String.trim``: strips code points up to U+0020 (not Unicode white space)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def parse_java_integer(text: str, minimum: int, maximum: int) -> int:
    """Java's ``Integer.parseInt``/``Long.parseLong`` of an already trimmed string: an
    optional sign and decimal digits only (no underscores, no spaces, no ``0x``), within
    ``[minimum, maximum]``. Raises ValueError."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(ch.isdecimal() for ch in digits):
        raise ValueError(f"not an integer: {text!r}")
    value = int(text)
    if not minimum <= value <= maximum:
        raise ValueError(f"out of range [{minimum}, {maximum}]: {text!r}")
    return value


def parse_java_double(text: str) -> float:
    """Java's ``Double.parseDouble``, which trims the string itself. Raises ValueError."""
    trimmed = java_trim(text)
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise ValueError(f"not a number: {text!r}")
    body = trimmed.rstrip("fFdD") if not trimmed.endswith("Infinity") else trimmed
    sign = -1.0 if body.startswith("-") else 1.0
    unsigned = body.lstrip("+-")
    if unsigned == "NaN":
        return math.nan
    if unsigned == "Infinity":
        return sign * math.inf
    if unsigned[:2].lower() == "0x":
        return sign * float.fromhex(unsigned)
    return sign * float(unsigned)


_INTEGER_BOUNDS = {
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def parse_value(key: ConfigKey, raw: str) -> Any:
    """Parses one string value by the key's type, as Kafka's ``ConfigDef.parseType`` does.

    SHORT, INT and LONG are Java's ``parseShort``/``parseInt``/``parseLong`` of the trimmed
    string (16-/32-/64-bit, optional sign, no underscores); DOUBLE is ``Double.parseDouble``
    (so ``NaN`` and ``Infinity`` parse: validators decide whether they are allowed); BOOLEAN
    is ``true`` or ``false`` in any case; LIST splits on commas, trims each item and drops
    empty ones. Raises ValueError with Kafka's message.
    """
    text = java_trim(raw)
    match key.type:
        case ConfigType.SHORT | ConfigType.INT | ConfigType.LONG:
            bounds = _INTEGER_BOUNDS[key.type]
            try:
                return parse_java_integer(text, *bounds)
            except ValueError:
                raise ValueError(
                    f"Invalid value {raw} for configuration {key.name}: Not a number of type "
                    f"{key.type.value}"
                ) from None
        case ConfigType.DOUBLE:
            try:
                return parse_java_double(text)
            except ValueError:
                raise ValueError(
                    f"Invalid value {raw} for configuration {key.name}: Not a number of type DOUBLE"
                ) from None
        case ConfigType.BOOLEAN:
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
            raise ValueError(
                f"Invalid value {raw} for configuration {key.name}: Expected value to be either "
                "true or false"
            )
        case ConfigType.LIST:
            # Kafka keeps empty items ("a,,b" has three); they are dropped here, so a list
            # of blanks is an empty list and fails the non-empty check with a clear message.
            return [java_trim(item) for item in text.split(",") if java_trim(item)]
        case _:
            return raw if key.type is ConfigType.PASSWORD else text


@dataclass(slots=True)
class ConfigDef:
    """An ordered set of config keys."""

    keys: dict[str, ConfigKey] = field(default_factory=dict)

    def define(self, key: ConfigKey) -> ConfigDef:
        if key.name in self.keys:
            raise ValueError(f"config key {key.name!r} defined twice")
        self.keys[key.name] = key
        return self

    def merged(self, other: ConfigDef) -> ConfigDef:
        result = ConfigDef(dict(self.keys))
        for key in other.keys.values():
            result.keys.setdefault(key.name, key)
        return result

    def groups(self) -> list[str]:
        seen: list[str] = []
        for key in self.keys.values():
            if key.group and key.group not in seen:
                seen.append(key.group)
        return seen

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        """Returns every key's list of errors (empty when valid), in definition order."""
        errors: dict[str, list[str]] = {}
        for key in self.keys.values():
            problems: list[str] = []
            raw = config.get(key.name)
            if raw is None:
                if key.required:
                    problems.append(f"Missing required configuration \"{key.name}\" which has "
                                    "no default value.")
                value = None if key.required else key.default
            else:
                try:
                    value = parse_value(key, raw)
                except ValueError as exc:
                    problems.append(str(exc))
                    value = None
            if not problems and key.validator is not None:
                message = key.validator(value)
                if isinstance(message, ExactMessage):
                    problems.append(message)
                elif message:
                    problems.append(f"Invalid value {raw} for configuration {key.name}: {message}")
            errors[key.name] = problems
        return errors

    def parse(self, config: Mapping[str, str]) -> dict[str, Any]:
        """Parses the config into typed values (defaults filled in).

        Raises ValueError naming every problem when the config is invalid.
        """
        problems = [msg for msgs in self.validate(config).values() for msg in msgs]
        if problems:
            raise ValueError("; ".join(problems))
        parsed: dict[str, Any] = {}
        for key in self.keys.values():
            raw = config.get(key.name)
            parsed[key.name] = key.default if raw is None else parse_value(key, raw)
        return parsed

    def describe(self) -> list[ConfigKeyInfo]:
        return [key.describe() for key in self.keys.values()]


def define_all(keys: Iterable[ConfigKey]) -> ConfigDef:
    config_def = ConfigDef()
    for key in keys:
        config_def.define(key)
    return config_def
