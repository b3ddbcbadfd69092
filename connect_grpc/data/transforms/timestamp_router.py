"""TimestampRouter: the topic becomes a format of the topic and the record's timestamp
(Kafka's ``TimestampRouter``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.plugins import Transformation
from connect_grpc.data.transforms._config import key, parse_config
from connect_grpc.data.transforms._dateformat import JavaDateFormat, PatternError
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

TOPIC_FORMAT = "topic.format"
TIMESTAMP_FORMAT = "timestamp.format"


def _pattern_error(value: Any) -> str | None:
    try:
        JavaDateFormat(value)
    except PatternError as exc:
        return f"Not a supported SimpleDateFormat pattern: {exc}"
    return None


CONFIG_DEF = define_all([
    key(TOPIC_FORMAT, ConfigType.STRING,
        "Format string which can contain ${topic} and ${timestamp} as placeholders for the "
        "topic and timestamp, respectively.",
        default="${topic}-${timestamp}", importance=Importance.HIGH),
    key(TIMESTAMP_FORMAT, ConfigType.STRING,
        "Format string for the timestamp that is compatible with java.text.SimpleDateFormat "
        "(formatted in UTC; see connect_grpc.data.transforms._dateformat for the letters "
        "supported).",
        default="yyyyMMdd", validator=_pattern_error, importance=Importance.HIGH),
])


class TimestampRouter(Transformation[Any]):
    """Replaces ``${topic}`` and ``${timestamp}`` in ``topic.format`` literally; the
    timestamp is the record's, formatted in UTC with ``timestamp.format``. A record without
    a timestamp is a DataError. A pattern this worker cannot format is refused at
    validation (Kafka only fails when formatting)."""

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._topic_format: str = config[TOPIC_FORMAT]
        self._timestamp_format = JavaDateFormat(config[TIMESTAMP_FORMAT])

    def apply(self, record: Any) -> Any:
        timestamp = record.timestamp_ms
        if timestamp is None:
            raise DataError(f"Timestamp missing on record: {record}")
        formatted = self._timestamp_format.format_millis(timestamp)
        topic = self._topic_format.replace("${topic}", record.topic)
        return record.new_record(topic=topic.replace("${timestamp}", formatted))

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF
