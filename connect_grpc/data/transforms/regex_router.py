"""RegexRouter: renames the topic when a regex matches all of it (Kafka's ``RegexRouter``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.plugins import Transformation
from connect_grpc.data.transforms._config import key, parse_config
from connect_grpc.data.transforms._regex import JavaReplacement, compile_java, regex_error
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

REGEX = "regex"
REPLACEMENT = "replacement"

CONFIG_DEF = define_all([
    key(REGEX, ConfigType.STRING, "Regular expression to use for matching.",
        validator=lambda value: None if value is None else regex_error(value),
        importance=Importance.HIGH),
    key(REPLACEMENT, ConfigType.STRING, "Replacement string.", importance=Importance.HIGH),
])


class RegexRouter(Transformation[Any]):
    """When ``regex`` (Java syntax) matches the whole topic, the topic becomes the match with
    ``replacement`` in Java's syntax (``$1``, ``${name}``, ``\\$`` for a dollar); any other
    record passes unchanged. The partition is kept.

    A replacement naming a group the regex lacks is refused at configure (Kafka fails on
    the first record the regex matches)."""

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._regex = compile_java(config[REGEX])
        try:
            self._replacement = JavaReplacement(config[REPLACEMENT], self._regex)
        except ValueError as exc:
            raise ValueError(
                f"Invalid value {config[REPLACEMENT]} for configuration {REPLACEMENT}: {exc}"
            ) from None

    def apply(self, record: Any) -> Any:
        topic = record.topic
        if self._regex.fullmatch(topic) is None:
            return record
        # Java's replaceFirst searches again: the first match need not be the whole topic
        # (``a|ab`` on ``ab`` replaces ``a`` only).
        first = self._regex.search(topic)
        assert first is not None  # the topic matched as a whole
        replaced = topic[:first.start()] + self._replacement.expand(first) + topic[first.end():]
        return record.new_record(topic=replaced)

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF
