from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TargetState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TARGET_STATE_UNSPECIFIED: _ClassVar[TargetState]
    TARGET_STATE_STARTED: _ClassVar[TargetState]
    TARGET_STATE_PAUSED: _ClassVar[TargetState]

class TaskType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_TYPE_UNSPECIFIED: _ClassVar[TaskType]
    TASK_TYPE_SOURCE: _ClassVar[TaskType]
    TASK_TYPE_SINK: _ClassVar[TaskType]
TARGET_STATE_UNSPECIFIED: TargetState
TARGET_STATE_STARTED: TargetState
TARGET_STATE_PAUSED: TargetState
TASK_TYPE_UNSPECIFIED: TaskType
TASK_TYPE_SOURCE: TaskType
TASK_TYPE_SINK: TaskType

class DriverMessage(_message.Message):
    __slots__ = ("start_task", "set_target_state", "stop_task", "check_done", "set_log_levels", "forget_topics", "offsets_written", "warm_worker")
    START_TASK_FIELD_NUMBER: _ClassVar[int]
    SET_TARGET_STATE_FIELD_NUMBER: _ClassVar[int]
    STOP_TASK_FIELD_NUMBER: _ClassVar[int]
    CHECK_DONE_FIELD_NUMBER: _ClassVar[int]
    SET_LOG_LEVELS_FIELD_NUMBER: _ClassVar[int]
    FORGET_TOPICS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    WARM_WORKER_FIELD_NUMBER: _ClassVar[int]
    start_task: StartTask
    set_target_state: SetTargetState
    stop_task: StopTask
    check_done: CheckDone
    set_log_levels: LogLevels
    forget_topics: ForgetTopics
    offsets_written: OffsetsWritten
    warm_worker: WarmWorker
    def __init__(self, start_task: _Optional[_Union[StartTask, _Mapping]] = ..., set_target_state: _Optional[_Union[SetTargetState, _Mapping]] = ..., stop_task: _Optional[_Union[StopTask, _Mapping]] = ..., check_done: _Optional[_Union[CheckDone, _Mapping]] = ..., set_log_levels: _Optional[_Union[LogLevels, _Mapping]] = ..., forget_topics: _Optional[_Union[ForgetTopics, _Mapping]] = ..., offsets_written: _Optional[_Union[OffsetsWritten, _Mapping]] = ..., warm_worker: _Optional[_Union[WarmWorker, _Mapping]] = ...) -> None: ...

class HostMessage(_message.Message):
    __slots__ = ("hello", "task_event", "stopped", "check_request", "log_record", "topics_used", "task_metrics", "loggers_seen", "offsets_write", "worker_warmed")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    TASK_EVENT_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    CHECK_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LOG_RECORD_FIELD_NUMBER: _ClassVar[int]
    TOPICS_USED_FIELD_NUMBER: _ClassVar[int]
    TASK_METRICS_FIELD_NUMBER: _ClassVar[int]
    LOGGERS_SEEN_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_WRITE_FIELD_NUMBER: _ClassVar[int]
    WORKER_WARMED_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    task_event: TaskEvent
    stopped: Stopped
    check_request: CheckRequest
    log_record: LogRecord
    topics_used: TopicsUsed
    task_metrics: TaskMetrics
    loggers_seen: LoggersSeen
    offsets_write: OffsetsWrite
    worker_warmed: WorkerWarmed
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., task_event: _Optional[_Union[TaskEvent, _Mapping]] = ..., stopped: _Optional[_Union[Stopped, _Mapping]] = ..., check_request: _Optional[_Union[CheckRequest, _Mapping]] = ..., log_record: _Optional[_Union[LogRecord, _Mapping]] = ..., topics_used: _Optional[_Union[TopicsUsed, _Mapping]] = ..., task_metrics: _Optional[_Union[TaskMetrics, _Mapping]] = ..., loggers_seen: _Optional[_Union[LoggersSeen, _Mapping]] = ..., offsets_write: _Optional[_Union[OffsetsWrite, _Mapping]] = ..., worker_warmed: _Optional[_Union[WorkerWarmed, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("token", "executor_id", "host")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    token: str
    executor_id: str
    host: str
    def __init__(self, token: _Optional[str] = ..., executor_id: _Optional[str] = ..., host: _Optional[str] = ...) -> None: ...

class StartTask(_message.Message):
    __slots__ = ("connector", "task", "worker_id", "worker_properties", "plugin_scan_properties", "connector_config", "task_config", "task_count", "target_state", "task_type", "exactly_once", "log_levels", "offsets_kept_by_worker", "source_offsets")
    class WorkerPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class PluginScanPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ConnectorConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TaskConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_SCAN_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_COUNT_FIELD_NUMBER: _ClassVar[int]
    TARGET_STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXACTLY_ONCE_FIELD_NUMBER: _ClassVar[int]
    LOG_LEVELS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_KEPT_BY_WORKER_FIELD_NUMBER: _ClassVar[int]
    SOURCE_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    worker_id: str
    worker_properties: _containers.ScalarMap[str, str]
    plugin_scan_properties: _containers.ScalarMap[str, str]
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    task_count: int
    target_state: TargetState
    task_type: TaskType
    exactly_once: bool
    log_levels: LogLevels
    offsets_kept_by_worker: bool
    source_offsets: _containers.RepeatedCompositeFieldContainer[OffsetEntry]
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., worker_id: _Optional[str] = ..., worker_properties: _Optional[_Mapping[str, str]] = ..., plugin_scan_properties: _Optional[_Mapping[str, str]] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ..., task_count: _Optional[int] = ..., target_state: _Optional[_Union[TargetState, str]] = ..., task_type: _Optional[_Union[TaskType, str]] = ..., exactly_once: _Optional[bool] = ..., log_levels: _Optional[_Union[LogLevels, _Mapping]] = ..., offsets_kept_by_worker: _Optional[bool] = ..., source_offsets: _Optional[_Iterable[_Union[OffsetEntry, _Mapping]]] = ...) -> None: ...

class WarmWorker(_message.Message):
    __slots__ = ("worker_id", "worker_properties", "plugin_scan_properties")
    class WorkerPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class PluginScanPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_SCAN_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    worker_properties: _containers.ScalarMap[str, str]
    plugin_scan_properties: _containers.ScalarMap[str, str]
    def __init__(self, worker_id: _Optional[str] = ..., worker_properties: _Optional[_Mapping[str, str]] = ..., plugin_scan_properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class WorkerWarmed(_message.Message):
    __slots__ = ("built", "took_ms", "error")
    BUILT_FIELD_NUMBER: _ClassVar[int]
    TOOK_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    built: bool
    took_ms: int
    error: str
    def __init__(self, built: _Optional[bool] = ..., took_ms: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class OffsetEntry(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    value: bytes
    def __init__(self, key: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...

class OffsetsWrite(_message.Message):
    __slots__ = ("id", "entries")
    ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    id: int
    entries: _containers.RepeatedCompositeFieldContainer[OffsetEntry]
    def __init__(self, id: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[OffsetEntry, _Mapping]]] = ...) -> None: ...

class OffsetsWritten(_message.Message):
    __slots__ = ("id", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: int
    error: str
    def __init__(self, id: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class SetTargetState(_message.Message):
    __slots__ = ("target_state",)
    TARGET_STATE_FIELD_NUMBER: _ClassVar[int]
    target_state: TargetState
    def __init__(self, target_state: _Optional[_Union[TargetState, str]] = ...) -> None: ...

class StopTask(_message.Message):
    __slots__ = ("timeout_ms",)
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    def __init__(self, timeout_ms: _Optional[int] = ...) -> None: ...

class CheckDone(_message.Message):
    __slots__ = ("id", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: int
    error: str
    def __init__(self, id: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class TaskEvent(_message.Message):
    __slots__ = ("kind", "trace", "version")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[TaskEvent.Kind]
        KIND_STARTED: _ClassVar[TaskEvent.Kind]
        KIND_PAUSED: _ClassVar[TaskEvent.Kind]
        KIND_RESUMED: _ClassVar[TaskEvent.Kind]
        KIND_FAILED: _ClassVar[TaskEvent.Kind]
        KIND_SHUTDOWN: _ClassVar[TaskEvent.Kind]
    KIND_UNSPECIFIED: TaskEvent.Kind
    KIND_STARTED: TaskEvent.Kind
    KIND_PAUSED: TaskEvent.Kind
    KIND_RESUMED: TaskEvent.Kind
    KIND_FAILED: TaskEvent.Kind
    KIND_SHUTDOWN: TaskEvent.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    kind: TaskEvent.Kind
    trace: str
    version: str
    def __init__(self, kind: _Optional[_Union[TaskEvent.Kind, str]] = ..., trace: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class Stopped(_message.Message):
    __slots__ = ("clean", "trace")
    CLEAN_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    clean: bool
    trace: str
    def __init__(self, clean: _Optional[bool] = ..., trace: _Optional[str] = ...) -> None: ...

class CheckRequest(_message.Message):
    __slots__ = ("id", "check")
    class Check(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CHECK_UNSPECIFIED: _ClassVar[CheckRequest.Check]
        CHECK_PRE_PRODUCER: _ClassVar[CheckRequest.Check]
        CHECK_POST_PRODUCER: _ClassVar[CheckRequest.Check]
    CHECK_UNSPECIFIED: CheckRequest.Check
    CHECK_PRE_PRODUCER: CheckRequest.Check
    CHECK_POST_PRODUCER: CheckRequest.Check
    ID_FIELD_NUMBER: _ClassVar[int]
    CHECK_FIELD_NUMBER: _ClassVar[int]
    id: int
    check: CheckRequest.Check
    def __init__(self, id: _Optional[int] = ..., check: _Optional[_Union[CheckRequest.Check, str]] = ...) -> None: ...

class LogLevels(_message.Message):
    __slots__ = ("version", "levels")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    version: int
    levels: _containers.RepeatedCompositeFieldContainer[LogLevel]
    def __init__(self, version: _Optional[int] = ..., levels: _Optional[_Iterable[_Union[LogLevel, _Mapping]]] = ...) -> None: ...

class LogLevel(_message.Message):
    __slots__ = ("namespace", "level")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    level: str
    def __init__(self, namespace: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class LogRecord(_message.Message):
    __slots__ = ("logger", "level", "message", "thrown", "connector", "task", "thread", "time_ms", "suppressed", "dropped", "inferred_from")
    class Level(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        LEVEL_UNSPECIFIED: _ClassVar[LogRecord.Level]
        LEVEL_TRACE: _ClassVar[LogRecord.Level]
        LEVEL_DEBUG: _ClassVar[LogRecord.Level]
        LEVEL_INFO: _ClassVar[LogRecord.Level]
        LEVEL_WARN: _ClassVar[LogRecord.Level]
        LEVEL_ERROR: _ClassVar[LogRecord.Level]
        LEVEL_FATAL: _ClassVar[LogRecord.Level]
    LEVEL_UNSPECIFIED: LogRecord.Level
    LEVEL_TRACE: LogRecord.Level
    LEVEL_DEBUG: LogRecord.Level
    LEVEL_INFO: LogRecord.Level
    LEVEL_WARN: LogRecord.Level
    LEVEL_ERROR: LogRecord.Level
    LEVEL_FATAL: LogRecord.Level
    LOGGER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    THROWN_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SUPPRESSED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    INFERRED_FROM_FIELD_NUMBER: _ClassVar[int]
    logger: str
    level: LogRecord.Level
    message: str
    thrown: str
    connector: str
    task: int
    thread: str
    time_ms: int
    suppressed: int
    dropped: int
    inferred_from: str
    def __init__(self, logger: _Optional[str] = ..., level: _Optional[_Union[LogRecord.Level, str]] = ..., message: _Optional[str] = ..., thrown: _Optional[str] = ..., connector: _Optional[str] = ..., task: _Optional[int] = ..., thread: _Optional[str] = ..., time_ms: _Optional[int] = ..., suppressed: _Optional[int] = ..., dropped: _Optional[int] = ..., inferred_from: _Optional[str] = ...) -> None: ...

class LoggersSeen(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class TopicsUsed(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class ForgetTopics(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskMetrics(_message.Message):
    __slots__ = ("increments", "gauges", "batch_sizes", "commit_times_ms", "commit_failures", "dropped", "plugin_metrics")
    class IncrementsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class GaugesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    INCREMENTS_FIELD_NUMBER: _ClassVar[int]
    GAUGES_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZES_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIMES_MS_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FAILURES_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_METRICS_FIELD_NUMBER: _ClassVar[int]
    increments: _containers.ScalarMap[str, float]
    gauges: _containers.ScalarMap[str, float]
    batch_sizes: _containers.RepeatedScalarFieldContainer[float]
    commit_times_ms: _containers.RepeatedScalarFieldContainer[float]
    commit_failures: int
    dropped: int
    plugin_metrics: PluginMetricValues
    def __init__(self, increments: _Optional[_Mapping[str, float]] = ..., gauges: _Optional[_Mapping[str, float]] = ..., batch_sizes: _Optional[_Iterable[float]] = ..., commit_times_ms: _Optional[_Iterable[float]] = ..., commit_failures: _Optional[int] = ..., dropped: _Optional[int] = ..., plugin_metrics: _Optional[_Union[PluginMetricValues, _Mapping]] = ...) -> None: ...

class PluginMetricValues(_message.Message):
    __slots__ = ("metrics",)
    METRICS_FIELD_NUMBER: _ClassVar[int]
    metrics: _containers.RepeatedCompositeFieldContainer[PluginMetricValue]
    def __init__(self, metrics: _Optional[_Iterable[_Union[PluginMetricValue, _Mapping]]] = ...) -> None: ...

class PluginMetricValue(_message.Message):
    __slots__ = ("name", "description", "tags", "value")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    tags: _containers.ScalarMap[str, str]
    value: float
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., tags: _Optional[_Mapping[str, str]] = ..., value: _Optional[float] = ...) -> None: ...
