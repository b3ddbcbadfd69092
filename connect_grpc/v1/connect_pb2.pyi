import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InitialState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INITIAL_STATE_UNSPECIFIED: _ClassVar[InitialState]
    INITIAL_STATE_RUNNING: _ClassVar[InitialState]
    INITIAL_STATE_PAUSED: _ClassVar[InitialState]
    INITIAL_STATE_STOPPED: _ClassVar[InitialState]

class InstanceState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INSTANCE_STATE_UNSPECIFIED: _ClassVar[InstanceState]
    INSTANCE_STATE_UNASSIGNED: _ClassVar[InstanceState]
    INSTANCE_STATE_RUNNING: _ClassVar[InstanceState]
    INSTANCE_STATE_PAUSED: _ClassVar[InstanceState]
    INSTANCE_STATE_FAILED: _ClassVar[InstanceState]
    INSTANCE_STATE_RESTARTING: _ClassVar[InstanceState]
    INSTANCE_STATE_STOPPED: _ClassVar[InstanceState]
    INSTANCE_STATE_RETRYING: _ClassVar[InstanceState]

class ConnectorType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONNECTOR_TYPE_UNSPECIFIED: _ClassVar[ConnectorType]
    CONNECTOR_TYPE_SOURCE: _ClassVar[ConnectorType]
    CONNECTOR_TYPE_SINK: _ClassVar[ConnectorType]

class LogLevelScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOG_LEVEL_SCOPE_UNSPECIFIED: _ClassVar[LogLevelScope]
    LOG_LEVEL_SCOPE_WORKER: _ClassVar[LogLevelScope]
    LOG_LEVEL_SCOPE_CLUSTER: _ClassVar[LogLevelScope]

class PreviewOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PREVIEW_OUTCOME_UNSPECIFIED: _ClassVar[PreviewOutcome]
    PREVIEW_OUTCOME_DELIVERED: _ClassVar[PreviewOutcome]
    PREVIEW_OUTCOME_DROPPED: _ClassVar[PreviewOutcome]
    PREVIEW_OUTCOME_FAILED: _ClassVar[PreviewOutcome]

class PreviewStageVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PREVIEW_STAGE_VERDICT_UNSPECIFIED: _ClassVar[PreviewStageVerdict]
    PREVIEW_STAGE_VERDICT_APPLIED: _ClassVar[PreviewStageVerdict]
    PREVIEW_STAGE_VERDICT_SKIPPED_BY_PREDICATE: _ClassVar[PreviewStageVerdict]
    PREVIEW_STAGE_VERDICT_DROPPED: _ClassVar[PreviewStageVerdict]
    PREVIEW_STAGE_VERDICT_FAILED: _ClassVar[PreviewStageVerdict]

class PreviewFailureAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PREVIEW_FAILURE_ACTION_UNSPECIFIED: _ClassVar[PreviewFailureAction]
    PREVIEW_FAILURE_ACTION_RECORD_SKIPPED: _ClassVar[PreviewFailureAction]
    PREVIEW_FAILURE_ACTION_TASK_FAILS: _ClassVar[PreviewFailureAction]
INITIAL_STATE_UNSPECIFIED: InitialState
INITIAL_STATE_RUNNING: InitialState
INITIAL_STATE_PAUSED: InitialState
INITIAL_STATE_STOPPED: InitialState
INSTANCE_STATE_UNSPECIFIED: InstanceState
INSTANCE_STATE_UNASSIGNED: InstanceState
INSTANCE_STATE_RUNNING: InstanceState
INSTANCE_STATE_PAUSED: InstanceState
INSTANCE_STATE_FAILED: InstanceState
INSTANCE_STATE_RESTARTING: InstanceState
INSTANCE_STATE_STOPPED: InstanceState
INSTANCE_STATE_RETRYING: InstanceState
CONNECTOR_TYPE_UNSPECIFIED: ConnectorType
CONNECTOR_TYPE_SOURCE: ConnectorType
CONNECTOR_TYPE_SINK: ConnectorType
LOG_LEVEL_SCOPE_UNSPECIFIED: LogLevelScope
LOG_LEVEL_SCOPE_WORKER: LogLevelScope
LOG_LEVEL_SCOPE_CLUSTER: LogLevelScope
PREVIEW_OUTCOME_UNSPECIFIED: PreviewOutcome
PREVIEW_OUTCOME_DELIVERED: PreviewOutcome
PREVIEW_OUTCOME_DROPPED: PreviewOutcome
PREVIEW_OUTCOME_FAILED: PreviewOutcome
PREVIEW_STAGE_VERDICT_UNSPECIFIED: PreviewStageVerdict
PREVIEW_STAGE_VERDICT_APPLIED: PreviewStageVerdict
PREVIEW_STAGE_VERDICT_SKIPPED_BY_PREDICATE: PreviewStageVerdict
PREVIEW_STAGE_VERDICT_DROPPED: PreviewStageVerdict
PREVIEW_STAGE_VERDICT_FAILED: PreviewStageVerdict
PREVIEW_FAILURE_ACTION_UNSPECIFIED: PreviewFailureAction
PREVIEW_FAILURE_ACTION_RECORD_SKIPPED: PreviewFailureAction
PREVIEW_FAILURE_ACTION_TASK_FAILS: PreviewFailureAction

class OffsetValue(_message.Message):
    __slots__ = ("null_value", "string_value", "integer_value", "number_value", "bool_value")
    NULL_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    INTEGER_VALUE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    null_value: _struct_pb2.NullValue
    string_value: str
    integer_value: int
    number_value: float
    bool_value: bool
    def __init__(self, null_value: _Optional[_Union[_struct_pb2.NullValue, str]] = ..., string_value: _Optional[str] = ..., integer_value: _Optional[int] = ..., number_value: _Optional[float] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class OffsetFields(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: OffsetValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[OffsetValue, _Mapping]] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.MessageMap[str, OffsetValue]
    def __init__(self, fields: _Optional[_Mapping[str, OffsetValue]] = ...) -> None: ...

class ConnectorOffset(_message.Message):
    __slots__ = ("partition", "offset", "record_time")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORD_TIME_FIELD_NUMBER: _ClassVar[int]
    partition: OffsetFields
    offset: OffsetFields
    record_time: _timestamp_pb2.Timestamp
    def __init__(self, partition: _Optional[_Union[OffsetFields, _Mapping]] = ..., offset: _Optional[_Union[OffsetFields, _Mapping]] = ..., record_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ConnectorOffsets(_message.Message):
    __slots__ = ("offsets", "all_partitions_record_time")
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    ALL_PARTITIONS_RECORD_TIME_FIELD_NUMBER: _ClassVar[int]
    offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    all_partitions_record_time: _timestamp_pb2.Timestamp
    def __init__(self, offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ..., all_partitions_record_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TaskId(_message.Message):
    __slots__ = ("connector", "task")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ...) -> None: ...

class ConnectorInfo(_message.Message):
    __slots__ = ("name", "config", "tasks", "type", "etag")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskId]
    type: ConnectorType
    etag: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., tasks: _Optional[_Iterable[_Union[TaskId, _Mapping]]] = ..., type: _Optional[_Union[ConnectorType, str]] = ..., etag: _Optional[str] = ...) -> None: ...

class TaskInfo(_message.Message):
    __slots__ = ("id", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    id: TaskId
    config: _containers.ScalarMap[str, str]
    def __init__(self, id: _Optional[_Union[TaskId, _Mapping]] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ConnectorInstanceStatus(_message.Message):
    __slots__ = ("state", "worker_id", "trace", "revision", "version")
    STATE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    state: InstanceState
    worker_id: str
    trace: str
    revision: int
    version: str
    def __init__(self, state: _Optional[_Union[InstanceState, str]] = ..., worker_id: _Optional[str] = ..., trace: _Optional[str] = ..., revision: _Optional[int] = ..., version: _Optional[str] = ...) -> None: ...

class TaskStatus(_message.Message):
    __slots__ = ("id", "state", "worker_id", "trace", "transactional_id", "placement", "revision", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: int
    state: InstanceState
    worker_id: str
    trace: str
    transactional_id: str
    placement: TaskPlacement
    revision: int
    version: str
    def __init__(self, id: _Optional[int] = ..., state: _Optional[_Union[InstanceState, str]] = ..., worker_id: _Optional[str] = ..., trace: _Optional[str] = ..., transactional_id: _Optional[str] = ..., placement: _Optional[_Union[TaskPlacement, _Mapping]] = ..., revision: _Optional[int] = ..., version: _Optional[str] = ...) -> None: ...

class TaskPlacement(_message.Message):
    __slots__ = ("kind", "host")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[TaskPlacement.Kind]
        KIND_DRIVER: _ClassVar[TaskPlacement.Kind]
        KIND_SPARK_EXECUTOR: _ClassVar[TaskPlacement.Kind]
    KIND_UNSPECIFIED: TaskPlacement.Kind
    KIND_DRIVER: TaskPlacement.Kind
    KIND_SPARK_EXECUTOR: TaskPlacement.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    kind: TaskPlacement.Kind
    host: str
    def __init__(self, kind: _Optional[_Union[TaskPlacement.Kind, str]] = ..., host: _Optional[str] = ...) -> None: ...

class ConnectorStatus(_message.Message):
    __slots__ = ("name", "connector", "tasks", "type", "auto_restart")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    AUTO_RESTART_FIELD_NUMBER: _ClassVar[int]
    name: str
    connector: ConnectorInstanceStatus
    tasks: _containers.RepeatedCompositeFieldContainer[TaskStatus]
    type: ConnectorType
    auto_restart: AutoRestartStatus
    def __init__(self, name: _Optional[str] = ..., connector: _Optional[_Union[ConnectorInstanceStatus, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[TaskStatus, _Mapping]]] = ..., type: _Optional[_Union[ConnectorType, str]] = ..., auto_restart: _Optional[_Union[AutoRestartStatus, _Mapping]] = ...) -> None: ...

class AutoRestartStatus(_message.Message):
    __slots__ = ("count", "next_attempt_time", "last_restart_time", "gave_up")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_RESTART_TIME_FIELD_NUMBER: _ClassVar[int]
    GAVE_UP_FIELD_NUMBER: _ClassVar[int]
    count: int
    next_attempt_time: _timestamp_pb2.Timestamp
    last_restart_time: _timestamp_pb2.Timestamp
    gave_up: bool
    def __init__(self, count: _Optional[int] = ..., next_attempt_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_restart_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., gave_up: _Optional[bool] = ...) -> None: ...

class ConnectorListing(_message.Message):
    __slots__ = ("name", "info", "status")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    info: ConnectorInfo
    status: ConnectorStatus
    def __init__(self, name: _Optional[str] = ..., info: _Optional[_Union[ConnectorInfo, _Mapping]] = ..., status: _Optional[_Union[ConnectorStatus, _Mapping]] = ...) -> None: ...

class ListConnectorsRequest(_message.Message):
    __slots__ = ("expand_status", "expand_info", "page_size", "page_token")
    EXPAND_STATUS_FIELD_NUMBER: _ClassVar[int]
    EXPAND_INFO_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    expand_status: bool
    expand_info: bool
    page_size: int
    page_token: str
    def __init__(self, expand_status: _Optional[bool] = ..., expand_info: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListConnectorsResponse(_message.Message):
    __slots__ = ("connectors", "next_page_token")
    CONNECTORS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    connectors: _containers.RepeatedCompositeFieldContainer[ConnectorListing]
    next_page_token: str
    def __init__(self, connectors: _Optional[_Iterable[_Union[ConnectorListing, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetConnectorRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConnectorResponse(_message.Message):
    __slots__ = ("connector",)
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    connector: ConnectorInfo
    def __init__(self, connector: _Optional[_Union[ConnectorInfo, _Mapping]] = ...) -> None: ...

class CreateConnectorRequest(_message.Message):
    __slots__ = ("name", "config", "initial_state", "initial_offsets", "request_id")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    INITIAL_STATE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    initial_state: InitialState
    initial_offsets: ConnectorOffsets
    request_id: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., initial_state: _Optional[_Union[InitialState, str]] = ..., initial_offsets: _Optional[_Union[ConnectorOffsets, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateConnectorResponse(_message.Message):
    __slots__ = ("connector", "offsets_message", "resolved_offsets")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    connector: ConnectorInfo
    offsets_message: str
    resolved_offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    def __init__(self, connector: _Optional[_Union[ConnectorInfo, _Mapping]] = ..., offsets_message: _Optional[str] = ..., resolved_offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ...) -> None: ...

class PutConnectorConfigRequest(_message.Message):
    __slots__ = ("name", "config", "request_id", "etag")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class PutConnectorConfigResponse(_message.Message):
    __slots__ = ("connector", "created")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    connector: ConnectorInfo
    created: bool
    def __init__(self, connector: _Optional[_Union[ConnectorInfo, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class PatchConnectorConfigRequest(_message.Message):
    __slots__ = ("name", "config", "request_id", "etag")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.MessageMap[str, _struct_pb2.Value]
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class PatchConnectorConfigResponse(_message.Message):
    __slots__ = ("connector",)
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    connector: ConnectorInfo
    def __init__(self, connector: _Optional[_Union[ConnectorInfo, _Mapping]] = ...) -> None: ...

class GetConnectorConfigRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConnectorConfigResponse(_message.Message):
    __slots__ = ("config",)
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _containers.ScalarMap[str, str]
    def __init__(self, config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DeleteConnectorRequest(_message.Message):
    __slots__ = ("name", "request_id", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class DeleteConnectorResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetConnectorStatusRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConnectorStatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: ConnectorStatus
    def __init__(self, status: _Optional[_Union[ConnectorStatus, _Mapping]] = ...) -> None: ...

class GetTaskStatusRequest(_message.Message):
    __slots__ = ("name", "task_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    task_id: int
    def __init__(self, name: _Optional[str] = ..., task_id: _Optional[int] = ...) -> None: ...

class GetTaskStatusResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: TaskStatus
    def __init__(self, task: _Optional[_Union[TaskStatus, _Mapping]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskInfo]
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskInfo, _Mapping]]] = ...) -> None: ...

class PauseConnectorRequest(_message.Message):
    __slots__ = ("name", "request_id", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class PauseConnectorResponse(_message.Message):
    __slots__ = ("etag",)
    ETAG_FIELD_NUMBER: _ClassVar[int]
    etag: str
    def __init__(self, etag: _Optional[str] = ...) -> None: ...

class ResumeConnectorRequest(_message.Message):
    __slots__ = ("name", "request_id", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class ResumeConnectorResponse(_message.Message):
    __slots__ = ("etag",)
    ETAG_FIELD_NUMBER: _ClassVar[int]
    etag: str
    def __init__(self, etag: _Optional[str] = ...) -> None: ...

class StopConnectorRequest(_message.Message):
    __slots__ = ("name", "request_id", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class StopConnectorResponse(_message.Message):
    __slots__ = ("etag",)
    ETAG_FIELD_NUMBER: _ClassVar[int]
    etag: str
    def __init__(self, etag: _Optional[str] = ...) -> None: ...

class RestartConnectorRequest(_message.Message):
    __slots__ = ("name", "include_tasks", "only_failed", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_TASKS_FIELD_NUMBER: _ClassVar[int]
    ONLY_FAILED_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    include_tasks: bool
    only_failed: bool
    request_id: str
    def __init__(self, name: _Optional[str] = ..., include_tasks: _Optional[bool] = ..., only_failed: _Optional[bool] = ..., request_id: _Optional[str] = ...) -> None: ...

class RestartConnectorResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: ConnectorStatus
    def __init__(self, status: _Optional[_Union[ConnectorStatus, _Mapping]] = ...) -> None: ...

class RestartTaskRequest(_message.Message):
    __slots__ = ("name", "task_id", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    task_id: int
    request_id: str
    def __init__(self, name: _Optional[str] = ..., task_id: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class RestartTaskResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetOffsetsRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetOffsetsResponse(_message.Message):
    __slots__ = ("offsets",)
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    def __init__(self, offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ...) -> None: ...

class AlterOffsetsRequest(_message.Message):
    __slots__ = ("name", "offsets", "request_id", "all_partitions_record_time", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ALL_PARTITIONS_RECORD_TIME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    request_id: str
    all_partitions_record_time: _timestamp_pb2.Timestamp
    etag: str
    def __init__(self, name: _Optional[str] = ..., offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ..., request_id: _Optional[str] = ..., all_partitions_record_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., etag: _Optional[str] = ...) -> None: ...

class AlterOffsetsResponse(_message.Message):
    __slots__ = ("message", "resolved_offsets", "etag")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    message: str
    resolved_offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    etag: str
    def __init__(self, message: _Optional[str] = ..., resolved_offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ..., etag: _Optional[str] = ...) -> None: ...

class ResetOffsetsRequest(_message.Message):
    __slots__ = ("name", "request_id", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    request_id: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., request_id: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class ResetOffsetsResponse(_message.Message):
    __slots__ = ("message", "etag")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    message: str
    etag: str
    def __init__(self, message: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class ConfigKeyInfo(_message.Message):
    __slots__ = ("name", "type", "required", "default_value", "importance", "documentation", "group", "order_in_group", "width", "display_name", "dependents")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTATION_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ORDER_IN_GROUP_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DEPENDENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    required: bool
    default_value: str
    importance: str
    documentation: str
    group: str
    order_in_group: int
    width: str
    display_name: str
    dependents: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., required: _Optional[bool] = ..., default_value: _Optional[str] = ..., importance: _Optional[str] = ..., documentation: _Optional[str] = ..., group: _Optional[str] = ..., order_in_group: _Optional[int] = ..., width: _Optional[str] = ..., display_name: _Optional[str] = ..., dependents: _Optional[_Iterable[str]] = ...) -> None: ...

class ConfigValueInfo(_message.Message):
    __slots__ = ("name", "value", "recommended_values", "errors", "visible")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDED_VALUES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    recommended_values: _containers.RepeatedScalarFieldContainer[str]
    errors: _containers.RepeatedScalarFieldContainer[str]
    visible: bool
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., recommended_values: _Optional[_Iterable[str]] = ..., errors: _Optional[_Iterable[str]] = ..., visible: _Optional[bool] = ...) -> None: ...

class ConfigInfo(_message.Message):
    __slots__ = ("definition", "value")
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    definition: ConfigKeyInfo
    value: ConfigValueInfo
    def __init__(self, definition: _Optional[_Union[ConfigKeyInfo, _Mapping]] = ..., value: _Optional[_Union[ConfigValueInfo, _Mapping]] = ...) -> None: ...

class ValidateConfigRequest(_message.Message):
    __slots__ = ("plugin", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    config: _containers.ScalarMap[str, str]
    def __init__(self, plugin: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ValidateConfigResponse(_message.Message):
    __slots__ = ("name", "error_count", "groups", "configs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_COUNT_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    error_count: int
    groups: _containers.RepeatedScalarFieldContainer[str]
    configs: _containers.RepeatedCompositeFieldContainer[ConfigInfo]
    def __init__(self, name: _Optional[str] = ..., error_count: _Optional[int] = ..., groups: _Optional[_Iterable[str]] = ..., configs: _Optional[_Iterable[_Union[ConfigInfo, _Mapping]]] = ...) -> None: ...

class PluginInfo(_message.Message):
    __slots__ = ("class_name", "type", "version", "aliases", "config_definitions", "plugin_type")
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    CONFIG_DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_TYPE_FIELD_NUMBER: _ClassVar[int]
    class_name: str
    type: ConnectorType
    version: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    config_definitions: _containers.RepeatedCompositeFieldContainer[ConfigKeyInfo]
    plugin_type: str
    def __init__(self, class_name: _Optional[str] = ..., type: _Optional[_Union[ConnectorType, str]] = ..., version: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., config_definitions: _Optional[_Iterable[_Union[ConfigKeyInfo, _Mapping]]] = ..., plugin_type: _Optional[str] = ...) -> None: ...

class ListPluginsRequest(_message.Message):
    __slots__ = ("include_config_definitions", "all_plugin_types")
    INCLUDE_CONFIG_DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    ALL_PLUGIN_TYPES_FIELD_NUMBER: _ClassVar[int]
    include_config_definitions: bool
    all_plugin_types: bool
    def __init__(self, include_config_definitions: _Optional[bool] = ..., all_plugin_types: _Optional[bool] = ...) -> None: ...

class ListPluginsResponse(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[PluginInfo]
    def __init__(self, plugins: _Optional[_Iterable[_Union[PluginInfo, _Mapping]]] = ...) -> None: ...

class GetPluginConfigRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetPluginConfigResponse(_message.Message):
    __slots__ = ("plugin",)
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    plugin: PluginInfo
    def __init__(self, plugin: _Optional[_Union[PluginInfo, _Mapping]] = ...) -> None: ...

class WatchConnectorStatusRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class WatchConnectorStatusResponse(_message.Message):
    __slots__ = ("status", "deleted")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    status: ConnectorStatus
    deleted: bool
    def __init__(self, status: _Optional[_Union[ConnectorStatus, _Mapping]] = ..., deleted: _Optional[bool] = ...) -> None: ...

class GetClusterInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ("id", "address", "connectors", "tasks", "placements")
    ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    CONNECTORS_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    address: str
    connectors: _containers.RepeatedScalarFieldContainer[str]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskId]
    placements: _containers.RepeatedCompositeFieldContainer[PlacedTask]
    def __init__(self, id: _Optional[str] = ..., address: _Optional[str] = ..., connectors: _Optional[_Iterable[str]] = ..., tasks: _Optional[_Iterable[_Union[TaskId, _Mapping]]] = ..., placements: _Optional[_Iterable[_Union[PlacedTask, _Mapping]]] = ...) -> None: ...

class PlacedTask(_message.Message):
    __slots__ = ("task", "placement")
    TASK_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    task: TaskId
    placement: TaskPlacement
    def __init__(self, task: _Optional[_Union[TaskId, _Mapping]] = ..., placement: _Optional[_Union[TaskPlacement, _Mapping]] = ...) -> None: ...

class GetClusterInfoResponse(_message.Message):
    __slots__ = ("version", "mode", "kafka_cluster_id", "leader_id", "leader_address", "workers", "generation", "worker_id", "joined")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    KAFKA_CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    JOINED_FIELD_NUMBER: _ClassVar[int]
    version: str
    mode: str
    kafka_cluster_id: str
    leader_id: str
    leader_address: str
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    generation: int
    worker_id: str
    joined: bool
    def __init__(self, version: _Optional[str] = ..., mode: _Optional[str] = ..., kafka_cluster_id: _Optional[str] = ..., leader_id: _Optional[str] = ..., leader_address: _Optional[str] = ..., workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., generation: _Optional[int] = ..., worker_id: _Optional[str] = ..., joined: _Optional[bool] = ...) -> None: ...

class Logger(_message.Message):
    __slots__ = ("name", "level", "last_modified")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    LAST_MODIFIED_FIELD_NUMBER: _ClassVar[int]
    name: str
    level: str
    last_modified: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., level: _Optional[str] = ..., last_modified: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListLoggersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListLoggersResponse(_message.Message):
    __slots__ = ("loggers",)
    LOGGERS_FIELD_NUMBER: _ClassVar[int]
    loggers: _containers.RepeatedCompositeFieldContainer[Logger]
    def __init__(self, loggers: _Optional[_Iterable[_Union[Logger, _Mapping]]] = ...) -> None: ...

class GetLoggerRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetLoggerResponse(_message.Message):
    __slots__ = ("logger",)
    LOGGER_FIELD_NUMBER: _ClassVar[int]
    logger: Logger
    def __init__(self, logger: _Optional[_Union[Logger, _Mapping]] = ...) -> None: ...

class SetLogLevelRequest(_message.Message):
    __slots__ = ("name", "level", "scope")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    level: str
    scope: LogLevelScope
    def __init__(self, name: _Optional[str] = ..., level: _Optional[str] = ..., scope: _Optional[_Union[LogLevelScope, str]] = ...) -> None: ...

class SetLogLevelResponse(_message.Message):
    __slots__ = ("changed_loggers",)
    CHANGED_LOGGERS_FIELD_NUMBER: _ClassVar[int]
    changed_loggers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, changed_loggers: _Optional[_Iterable[str]] = ...) -> None: ...

class GetConnectorTopicsRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConnectorTopicsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class ResetConnectorTopicsRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ResetConnectorTopicsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PreviewPipelineRequest(_message.Message):
    __slots__ = ("name", "config", "samples", "from_topic")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    FROM_TOPIC_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    samples: PreviewSamples
    from_topic: PreviewTopicTail
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., samples: _Optional[_Union[PreviewSamples, _Mapping]] = ..., from_topic: _Optional[_Union[PreviewTopicTail, _Mapping]] = ...) -> None: ...

class PreviewSamples(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[PreviewSampleRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[PreviewSampleRecord, _Mapping]]] = ...) -> None: ...

class PreviewSampleRecord(_message.Message):
    __slots__ = ("topic", "partition", "offset", "timestamp_ms", "key", "value", "headers")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: PreviewSampleData
    value: PreviewSampleData
    headers: _containers.RepeatedCompositeFieldContainer[PreviewSampleHeader]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., key: _Optional[_Union[PreviewSampleData, _Mapping]] = ..., value: _Optional[_Union[PreviewSampleData, _Mapping]] = ..., headers: _Optional[_Iterable[_Union[PreviewSampleHeader, _Mapping]]] = ...) -> None: ...

class PreviewSampleData(_message.Message):
    __slots__ = ("json", "raw")
    JSON_FIELD_NUMBER: _ClassVar[int]
    RAW_FIELD_NUMBER: _ClassVar[int]
    json: str
    raw: bytes
    def __init__(self, json: _Optional[str] = ..., raw: _Optional[bytes] = ...) -> None: ...

class PreviewSampleHeader(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: PreviewSampleData
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PreviewSampleData, _Mapping]] = ...) -> None: ...

class PreviewTopicTail(_message.Message):
    __slots__ = ("topic", "last")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    topic: str
    last: int
    def __init__(self, topic: _Optional[str] = ..., last: _Optional[int] = ...) -> None: ...

class PreviewPipelineResponse(_message.Message):
    __slots__ = ("type", "records")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    type: ConnectorType
    records: _containers.RepeatedCompositeFieldContainer[RecordPreview]
    def __init__(self, type: _Optional[_Union[ConnectorType, str]] = ..., records: _Optional[_Iterable[_Union[RecordPreview, _Mapping]]] = ...) -> None: ...

class RecordPreview(_message.Message):
    __slots__ = ("input", "stages", "outcome", "output", "failure")
    INPUT_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    input: PreviewRecord
    stages: _containers.RepeatedCompositeFieldContainer[StagePreview]
    outcome: PreviewOutcome
    output: PreviewRecord
    failure: PreviewStageFailure
    def __init__(self, input: _Optional[_Union[PreviewRecord, _Mapping]] = ..., stages: _Optional[_Iterable[_Union[StagePreview, _Mapping]]] = ..., outcome: _Optional[_Union[PreviewOutcome, str]] = ..., output: _Optional[_Union[PreviewRecord, _Mapping]] = ..., failure: _Optional[_Union[PreviewStageFailure, _Mapping]] = ...) -> None: ...

class StagePreview(_message.Message):
    __slots__ = ("stage", "class_name", "alias", "predicate", "predicate_matched", "verdict", "record")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_MATCHED_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    stage: str
    class_name: str
    alias: str
    predicate: str
    predicate_matched: bool
    verdict: PreviewStageVerdict
    record: PreviewRecord
    def __init__(self, stage: _Optional[str] = ..., class_name: _Optional[str] = ..., alias: _Optional[str] = ..., predicate: _Optional[str] = ..., predicate_matched: _Optional[bool] = ..., verdict: _Optional[_Union[PreviewStageVerdict, str]] = ..., record: _Optional[_Union[PreviewRecord, _Mapping]] = ...) -> None: ...

class PreviewRecord(_message.Message):
    __slots__ = ("topic", "partition", "offset", "timestamp_ms", "key", "value", "headers")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: PreviewData
    value: PreviewData
    headers: _containers.RepeatedCompositeFieldContainer[PreviewHeader]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., key: _Optional[_Union[PreviewData, _Mapping]] = ..., value: _Optional[_Union[PreviewData, _Mapping]] = ..., headers: _Optional[_Iterable[_Union[PreviewHeader, _Mapping]]] = ...) -> None: ...

class PreviewData(_message.Message):
    __slots__ = ("raw", "connect")
    RAW_FIELD_NUMBER: _ClassVar[int]
    CONNECT_FIELD_NUMBER: _ClassVar[int]
    raw: bytes
    connect: ConnectData
    def __init__(self, raw: _Optional[bytes] = ..., connect: _Optional[_Union[ConnectData, _Mapping]] = ...) -> None: ...

class ConnectData(_message.Message):
    __slots__ = ("json", "schema")
    JSON_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    json: str
    schema: str
    def __init__(self, json: _Optional[str] = ..., schema: _Optional[str] = ...) -> None: ...

class PreviewHeader(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: PreviewData
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PreviewData, _Mapping]] = ...) -> None: ...

class PreviewStageFailure(_message.Message):
    __slots__ = ("stage", "class_name", "exception_class", "message", "action", "dead_letter_topic", "dead_letter_headers")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_CLASS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_TOPIC_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_HEADERS_FIELD_NUMBER: _ClassVar[int]
    stage: str
    class_name: str
    exception_class: str
    message: str
    action: PreviewFailureAction
    dead_letter_topic: str
    dead_letter_headers: _containers.RepeatedCompositeFieldContainer[PreviewHeader]
    def __init__(self, stage: _Optional[str] = ..., class_name: _Optional[str] = ..., exception_class: _Optional[str] = ..., message: _Optional[str] = ..., action: _Optional[_Union[PreviewFailureAction, str]] = ..., dead_letter_topic: _Optional[str] = ..., dead_letter_headers: _Optional[_Iterable[_Union[PreviewHeader, _Mapping]]] = ...) -> None: ...

class TaskConfig(_message.Message):
    __slots__ = ("config",)
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _containers.ScalarMap[str, str]
    def __init__(self, config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PutTaskConfigsRequest(_message.Message):
    __slots__ = ("name", "tasks", "worker_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    tasks: _containers.RepeatedCompositeFieldContainer[TaskConfig]
    worker_id: str
    def __init__(self, name: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[TaskConfig, _Mapping]]] = ..., worker_id: _Optional[str] = ...) -> None: ...

class PutTaskConfigsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FenceZombiesRequest(_message.Message):
    __slots__ = ("name", "worker_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    worker_id: str
    def __init__(self, name: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class FenceZombiesResponse(_message.Message):
    __slots__ = ("config_position",)
    CONFIG_POSITION_FIELD_NUMBER: _ClassVar[int]
    config_position: int
    def __init__(self, config_position: _Optional[int] = ...) -> None: ...
