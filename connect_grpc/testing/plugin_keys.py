"""The ``test.*`` config keys of the instrumented plugins (``connect_grpc.testing.plugins``):
their names, their definitions for the source and the sink, and the parsing of a task list.
What each key makes a plugin do is the plugins' module's."""

from __future__ import annotations

from typing import Any

from connect_grpc.kernel.configdef import ConfigKey, ConfigType, Importance, at_least, define_all

__all__ = [
    "ALTER_OFFSETS",
    "ALTER_OFFSETS_MODES",
    "EVENTS_FILE",
    "FAIL_CONNECTOR_START",
    "FAIL_CONNECTOR_STOP",
    "FAIL_TASK_POLL",
    "FAIL_TASK_START",
    "FAIL_TASK_START_TIMES",
    "HOLD_CONNECTOR_START",
    "PRINT_CONFIG",
    "RECORD_CONFIG",
    "SECRET",
    "SINK_CONFIG",
    "SOURCE_CONFIG",
    "SOURCE_RECORDS",
    "TASK_ID",
    "TOPIC",
    "parse_task_set",
]

EVENTS_FILE = "test.events.file"
FAIL_CONNECTOR_START = "test.fail.connector.start"
FAIL_CONNECTOR_STOP = "test.fail.connector.stop"
FAIL_TASK_START = "test.fail.task.start"
FAIL_TASK_POLL = "test.fail.task.poll"
FAIL_TASK_START_TIMES = "test.fail.task.start.times"
SOURCE_RECORDS = "test.source.records"
ALTER_OFFSETS = "test.alter.offsets"
RECORD_CONFIG = "test.record.config"
PRINT_CONFIG = "test.print.config"
HOLD_CONNECTOR_START = "test.hold.connector.start"
SECRET = "test.secret"
TOPIC = "topic"
TASK_ID = "task.id"

ALTER_OFFSETS_MODES = ("true", "false", "unsupported", "invalid")
_GROUP = "Test instrumentation"


def parse_task_set(spec: str) -> frozenset[int] | None:
    """Parses a ``test.fail.task.*`` value: None for "all", else the listed task ids.

    Raises:
        ValueError: an item is not a non-negative integer.
    """
    text = spec.strip()
    if text.lower() == "all":
        return None
    ids: set[int] = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        if not item.isdigit():
            raise ValueError(f"Expected 'all' or a comma-separated list of task ids, got {item!r}")
        ids.add(int(item))
    return frozenset(ids)


def _task_set_error(value: Any) -> str | None:
    try:
        parse_task_set(str(value or ""))
    except ValueError as exc:
        return str(exc)
    return None


def _alter_mode_error(value: Any) -> str | None:
    if str(value).strip().lower() not in ALTER_OFFSETS_MODES:
        return f"Must be one of {', '.join(ALTER_OFFSETS_MODES)}"
    return None


def _common_keys(task_fail_doc: str) -> list[ConfigKey]:
    return [
        ConfigKey(EVENTS_FILE, ConfigType.STRING,
                  "File the plugin appends its JSON-lines events to; empty: no events.",
                  default="", importance=Importance.HIGH, group=_GROUP, order_in_group=1),
        ConfigKey(FAIL_CONNECTOR_START, ConfigType.BOOLEAN,
                  "Whether Connector.start raises (after recording connector_start).",
                  default=False, importance=Importance.LOW, group=_GROUP, order_in_group=2),
        ConfigKey(FAIL_CONNECTOR_STOP, ConfigType.BOOLEAN,
                  "Whether Connector.stop raises (after recording connector_stop).",
                  default=False, importance=Importance.LOW, group=_GROUP, order_in_group=3),
        ConfigKey(FAIL_TASK_START, ConfigType.STRING,
                  "Task ids whose start raises: 'all' or a comma-separated list of ids.",
                  default="", importance=Importance.LOW, validator=_task_set_error,
                  group=_GROUP, order_in_group=4),
        ConfigKey(FAIL_TASK_POLL, ConfigType.STRING, task_fail_doc, default="",
                  importance=Importance.LOW, validator=_task_set_error, group=_GROUP,
                  order_in_group=5),
        ConfigKey(ALTER_OFFSETS, ConfigType.STRING,
                  "What alter_offsets does: 'true'/'false' (returns it), 'unsupported' (refuses "
                  "any change) or 'invalid' (rejects the offsets as malformed).",
                  default="true", importance=Importance.LOW, validator=_alter_mode_error,
                  group=_GROUP, order_in_group=6),
        ConfigKey(RECORD_CONFIG, ConfigType.BOOLEAN,
                  "Whether connector_start and task_start events carry the config the plugin "
                  "was given.", default=False, importance=Importance.LOW, group=_GROUP,
                  order_in_group=7),
        ConfigKey(SECRET, ConfigType.PASSWORD,
                  "A password the plugin takes and never uses (ValidateConfig shows it "
                  "[hidden]).", default=None, importance=Importance.LOW, group=_GROUP,
                  order_in_group=8),
        ConfigKey(PRINT_CONFIG, ConfigType.BOOLEAN,
                  "Whether Connector.start and Task.start print() the config they were given "
                  "to stdout and stderr.", default=False, importance=Importance.LOW,
                  group=_GROUP, order_in_group=9),
        ConfigKey(HOLD_CONNECTOR_START, ConfigType.STRING,
                  "A file: Connector.start (after recording connector_start) waits until it "
                  "exists, as a plugin whose start hangs holds the worker's loop that "
                  "started it; empty: no wait.", default="", importance=Importance.LOW,
                  group=_GROUP, order_in_group=10),
        ConfigKey(FAIL_TASK_START_TIMES, ConfigType.INT,
                  f"Only the first N starts of each task in {FAIL_TASK_START} fail (counted "
                  f"in {EVENTS_FILE}, which it needs), later ones succeed: a plugin that "
                  "recovers after some restarts; -1: every start fails.", default=-1,
                  importance=Importance.LOW, validator=at_least(-1), group=_GROUP,
                  order_in_group=12),
    ]


SOURCE_CONFIG = define_all(
    [
        *_common_keys("Task ids whose poll raises: 'all' or a comma-separated list of ids."),
        ConfigKey(TOPIC, ConfigType.STRING,
                  "Topic of the records; required when test.source.records > 0.",
                  default="", importance=Importance.HIGH, group=_GROUP, order_in_group=10),
        ConfigKey(SOURCE_RECORDS, ConfigType.INT,
                  "Number of records each task produces, then nothing (0: none).",
                  default=0, importance=Importance.MEDIUM, validator=at_least(0),
                  group=_GROUP, order_in_group=11),
    ]
)

SINK_CONFIG = define_all(
    _common_keys("Task ids whose put raises: 'all' or a comma-separated list of ids.")
)
