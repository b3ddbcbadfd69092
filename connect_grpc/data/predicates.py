"""The built-in predicates of Kafka Connect: HasHeaderKey, RecordIsTombstone and
TopicNameMatches. A transformation with ``transforms.<a>.predicate`` runs only on the
records its predicate matches (or, with ``negate=true``, does not match)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.plugins import Predicate
from connect_grpc.data.transforms._config import key, non_empty_string, parse_config
from connect_grpc.data.transforms._regex import compile_java, regex_error
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, all_of, define_all

NAME = "name"
PATTERN = "pattern"

HAS_HEADER_KEY_CONFIG_DEF = define_all([
    key(NAME, ConfigType.STRING, "The header name.", validator=non_empty_string),
])

TOPIC_NAME_MATCHES_CONFIG_DEF = define_all([
    key(PATTERN, ConfigType.STRING,
        "A Java regular expression for matching against the name of a record's topic.",
        validator=all_of(non_empty_string,
                         lambda value: None if value is None else regex_error(value))),
])


class HasHeaderKey(Predicate[Any]):
    """True for a record with at least one header named ``name`` (raw or ConnectHeaders)."""

    def configure(self, configs: Mapping[str, str]) -> None:
        self._name: str = parse_config(HAS_HEADER_KEY_CONFIG_DEF, configs)[NAME]

    def test(self, record: Any) -> bool:
        return any(header_key == self._name for header_key, _ in record.headers)

    def config_def(self) -> ConfigDef:
        return HAS_HEADER_KEY_CONFIG_DEF

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{self._name}'}}"


class RecordIsTombstone(Predicate[Any]):
    """True for a record whose value is null; its key and schemas do not matter."""

    def test(self, record: Any) -> bool:
        return record.value is None

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class TopicNameMatches(Predicate[Any]):
    """True for a record whose topic the Java regex ``pattern`` matches entirely."""

    def configure(self, configs: Mapping[str, str]) -> None:
        self._pattern = compile_java(parse_config(TOPIC_NAME_MATCHES_CONFIG_DEF, configs)[PATTERN])

    def test(self, record: Any) -> bool:
        return record.topic is not None and self._pattern.fullmatch(record.topic) is not None

    def config_def(self) -> ConfigDef:
        return TOPIC_NAME_MATCHES_CONFIG_DEF

    def __repr__(self) -> str:
        return f"TopicNameMatches{{pattern={self._pattern.pattern}}}"


_PREFIX = "org.apache.kafka.connect.transforms.predicates."

#: The predicates by Kafka Connect's class name.
BUILTIN_PREDICATES: dict[str, type[Predicate[Any]]] = {
    _PREFIX + "HasHeaderKey": HasHeaderKey,
    _PREFIX + "RecordIsTombstone": RecordIsTombstone,
    _PREFIX + "TopicNameMatches": TopicNameMatches,
}
