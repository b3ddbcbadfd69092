"""Proto ⇄ domain conversion. Pure functions; no business logic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from google.protobuf import struct_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ConfigInfos,
    ConfigKeyInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    OffsetMap,
    OffsetPrimitive,
    PlacementKind,
    PluginDesc,
    State,
    TargetState,
    TaskId,
    TaskInfo,
    TaskPlacement,
    TaskStatus,
)
from connect_grpc.kernel.domain import ClusterInfo as DomainClusterInfo
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.logs.level_model import LoggerLevel, LogLevelScope
from connect_grpc.v1 import connect_pb2 as pb

_STATE_TO_PB = {
    State.UNASSIGNED: pb.INSTANCE_STATE_UNASSIGNED,
    State.RUNNING: pb.INSTANCE_STATE_RUNNING,
    State.PAUSED: pb.INSTANCE_STATE_PAUSED,
    State.FAILED: pb.INSTANCE_STATE_FAILED,
    State.RESTARTING: pb.INSTANCE_STATE_RESTARTING,
    State.STOPPED: pb.INSTANCE_STATE_STOPPED,
    State.RETRYING: pb.INSTANCE_STATE_RETRYING,
}
_TYPE_TO_PB = {
    ConnectorType.SOURCE: pb.CONNECTOR_TYPE_SOURCE,
    ConnectorType.SINK: pb.CONNECTOR_TYPE_SINK,
    ConnectorType.UNKNOWN: pb.CONNECTOR_TYPE_UNSPECIFIED,
}
_INITIAL_STATE_FROM_PB: dict[int, TargetState] = {
    pb.INITIAL_STATE_UNSPECIFIED: TargetState.STARTED,
    pb.INITIAL_STATE_RUNNING: TargetState.STARTED,
    pb.INITIAL_STATE_PAUSED: TargetState.PAUSED,
    pb.INITIAL_STATE_STOPPED: TargetState.STOPPED,
}


def initial_state_from_pb(value: int) -> TargetState:
    try:
        return _INITIAL_STATE_FROM_PB[value]
    except KeyError:
        raise InvalidArgumentError.for_field(
            "initial_state", f"unknown initial state {value}: expected RUNNING, PAUSED or STOPPED"
        ) from None


def state_to_pb(state: State) -> pb.InstanceState:
    return _STATE_TO_PB[state]


def state_from_pb(value: int) -> State:
    for state, number in _STATE_TO_PB.items():
        if number == value:
            return state
    raise ValueError(f"unknown instance state {value}")


def type_to_pb(connector_type: ConnectorType) -> pb.ConnectorType:
    return _TYPE_TO_PB[connector_type]


def task_id_to_pb(task: TaskId) -> pb.TaskId:
    return pb.TaskId(connector=task.connector, task=task.task)


def connector_info_to_pb(info: ConnectorInfo) -> pb.ConnectorInfo:
    return pb.ConnectorInfo(
        name=info.name,
        config=dict(info.config),
        tasks=[task_id_to_pb(task) for task in info.tasks],
        type=type_to_pb(info.type),
        etag=info.etag,
    )


def task_info_to_pb(info: TaskInfo) -> pb.TaskInfo:
    return pb.TaskInfo(id=task_id_to_pb(info.id), config=dict(info.config))


def instance_status_to_pb(status: InstanceStatus) -> pb.ConnectorInstanceStatus:
    return pb.ConnectorInstanceStatus(
        state=state_to_pb(status.state),
        worker_id=status.worker_id,
        trace=status.trace,
        revision=status.revision,
        version=status.version,
    )


_PLACEMENT_TO_PB = {
    PlacementKind.DRIVER: pb.TaskPlacement.KIND_DRIVER,
    PlacementKind.SPARK_EXECUTOR: pb.TaskPlacement.KIND_SPARK_EXECUTOR,
}


def placement_to_pb(placement: TaskPlacement | None) -> pb.TaskPlacement | None:
    if placement is None:
        return None
    return pb.TaskPlacement(kind=_PLACEMENT_TO_PB[placement.kind], host=placement.host)


def task_status_to_pb(task: TaskStatus) -> pb.TaskStatus:
    return pb.TaskStatus(
        id=task.id,
        state=state_to_pb(task.status.state),
        worker_id=task.status.worker_id,
        trace=task.status.trace,
        transactional_id=task.transactional_id,
        placement=placement_to_pb(task.status.placement),
        revision=task.status.revision,
        version=task.status.version,
    )


def connector_status_to_pb(status: ConnectorStatus) -> pb.ConnectorStatus:
    return pb.ConnectorStatus(
        name=status.name,
        connector=instance_status_to_pb(status.connector),
        tasks=[task_status_to_pb(task) for task in status.tasks],
        type=type_to_pb(status.type),
        auto_restart=auto_restart_to_pb(status.auto_restart),
    )


def auto_restart_to_pb(progress: AutoRestartStatus | None) -> pb.AutoRestartStatus | None:
    if progress is None:
        return None
    message = pb.AutoRestartStatus(count=progress.count, gave_up=progress.gave_up)
    if progress.next_attempt_ms:
        message.next_attempt_time.FromMilliseconds(progress.next_attempt_ms)
    if progress.last_restart_ms:
        message.last_restart_time.FromMilliseconds(progress.last_restart_ms)
    return message


def config_key_to_pb(key: ConfigKeyInfo) -> pb.ConfigKeyInfo:
    message = pb.ConfigKeyInfo(
        name=key.name,
        type=key.type,
        required=key.required,
        importance=key.importance,
        documentation=key.documentation,
        group=key.group,
        order_in_group=key.order_in_group,
        width=key.width,
        display_name=key.display_name,
        dependents=list(key.dependents),
    )
    if key.default_value is not None:
        message.default_value = key.default_value
    return message


def config_infos_to_pb(infos: ConfigInfos) -> pb.ValidateConfigResponse:
    configs = []
    for info in infos.configs:
        value = pb.ConfigValueInfo(
            name=info.value.name,
            recommended_values=list(info.value.recommended_values),
            errors=list(info.value.errors),
            visible=info.value.visible,
        )
        if info.value.value is not None:
            value.value = info.value.value
        entry = pb.ConfigInfo(value=value)
        if info.definition is not None:
            entry.definition.CopyFrom(config_key_to_pb(info.definition))
        configs.append(entry)
    return pb.ValidateConfigResponse(
        name=infos.name, error_count=infos.error_count, groups=list(infos.groups), configs=configs
    )


def plugin_to_pb(plugin: PluginDesc) -> pb.PluginInfo:
    return pb.PluginInfo(
        class_name=plugin.class_name,
        type=type_to_pb(plugin.type),
        version=plugin.version,
        aliases=list(plugin.aliases),
        config_definitions=[config_key_to_pb(key) for key in plugin.config_definitions],
        plugin_type=plugin.plugin_type,
    )


def cluster_info_to_pb(info: DomainClusterInfo) -> pb.GetClusterInfoResponse:
    return pb.GetClusterInfoResponse(
        version=info.version,
        mode=info.mode,
        kafka_cluster_id=info.kafka_cluster_id,
        leader_id=info.leader_id,
        leader_address=info.leader_address,
        workers=[
            pb.WorkerInfo(
                id=w.id,
                address=w.address,
                connectors=list(w.connectors),
                tasks=[task_id_to_pb(t) for t in w.tasks],
                placements=[
                    pb.PlacedTask(task=task_id_to_pb(t), placement=placement_to_pb(p))
                    for t, p in sorted(w.placements.items())
                ],
            )
            for w in info.workers
        ],
        generation=info.generation,
        worker_id=info.worker_id,
        joined=info.joined,
    )


# config patches (KIP-477): a string sets a key, null removes it


def config_patch_from_pb(
    values: Mapping[str, struct_pb2.Value], field_path: str
) -> dict[str, str | None]:
    """The patch as the herder takes it: key to new value, None to remove the key."""
    return {
        key: _patch_value_from_pb(value, f"{field_path}.{key}") for key, value in values.items()
    }


def _patch_value_from_pb(value: struct_pb2.Value, field_path: str) -> str | None:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    # grpcurl sends a JSON null of this map as a Value with no kind set: null too
    if kind in ("null_value", None):
        return None
    raise InvalidArgumentError.for_field(
        field_path,
        f"must be a string (to set the key) or null (to remove it), not a "
        f'{kind.removesuffix("_value")}; config values are strings, e.g. "2" rather than 2',
    )


# offsets: exact primitives, no doubles for integers


def offset_value_to_pb(value: OffsetPrimitive) -> pb.OffsetValue:
    if value is None:
        return pb.OffsetValue(null_value="NULL_VALUE")
    if isinstance(value, bool):
        return pb.OffsetValue(bool_value=value)
    if isinstance(value, int):
        return pb.OffsetValue(integer_value=value)
    if isinstance(value, float):
        return pb.OffsetValue(number_value=value)
    return pb.OffsetValue(string_value=value)


def offset_value_from_pb(value: pb.OffsetValue, field_path: str) -> OffsetPrimitive:
    kind = value.WhichOneof("kind")
    if kind is None:
        raise InvalidArgumentError.for_field(field_path, "value has no kind set")
    result: OffsetPrimitive = None if kind == "null_value" else getattr(value, kind)
    return result


def offset_map_to_pb(values: OffsetMap) -> pb.OffsetFields:
    return pb.OffsetFields(fields={k: offset_value_to_pb(v) for k, v in values.items()})


def offset_map_from_pb(message: pb.OffsetFields, field_path: str) -> dict[str, OffsetPrimitive]:
    try:
        return _offset_map(message)
    except _KindlessValue as exc:
        raise InvalidArgumentError.for_field(
            f"{field_path}.{exc.key}", "value has no kind set"
        ) from None


class _KindlessValue(Exception):
    """An offset value with no kind set, under ``key``; the caller names its field."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _offset_map(message: pb.OffsetFields) -> dict[str, OffsetPrimitive]:
    """The map; a value without kind is a _KindlessValue. Field paths are only made for an
    error: a request may hold tens of thousands of maps."""
    values: dict[str, OffsetPrimitive] = {}
    for key, value in message.fields.items():
        kind = value.WhichOneof("kind")
        if kind is None:
            raise _KindlessValue(key)
        values[key] = None if kind == "null_value" else getattr(value, kind)
    return values


def record_time_to_pb(time_ms: int) -> Timestamp:
    seconds, millis = divmod(time_ms, 1000)
    return Timestamp(seconds=seconds, nanos=millis * 1_000_000)


def record_time_from_pb(message: Timestamp, field_path: str) -> int:
    """Milliseconds since the epoch, rounded up: Kafka's timestamps are milliseconds, and the
    first record "at or after" a time within a millisecond is in the next one. A time before
    the epoch is refused where the offsets are validated, with the request's field."""
    if not 0 <= message.nanos <= 999_999_999:
        raise InvalidArgumentError.for_field(
            field_path, f"nanos must be within 0 and 999999999, got {message.nanos}"
        )
    return message.seconds * 1000 + -(-message.nanos // 1_000_000)


def connector_offset_to_pb(offset: ConnectorOffset) -> pb.ConnectorOffset:
    message = pb.ConnectorOffset()
    if offset.partition is not None:
        message.partition.CopyFrom(offset_map_to_pb(offset.partition))
    if offset.offset is not None:
        message.offset.CopyFrom(offset_map_to_pb(offset.offset))
    if offset.record_time_ms is not None:
        message.record_time.CopyFrom(record_time_to_pb(offset.record_time_ms))
    return message


def connector_offsets_from_pb(
    messages: Iterable[pb.ConnectorOffset], field_path: str
) -> list[ConnectorOffset]:
    result = []
    for index, message in enumerate(messages):
        map_field = "partition"
        try:
            partition = _offset_map(message.partition) if message.HasField("partition") else None
            map_field = "offset"
            offset = _offset_map(message.offset) if message.HasField("offset") else None
        except _KindlessValue as exc:
            raise InvalidArgumentError.for_field(
                f"{field_path}[{index}].{map_field}.{exc.key}", "value has no kind set"
            ) from None
        record_time = (
            record_time_from_pb(message.record_time, f"{field_path}[{index}].record_time")
            if message.HasField("record_time")
            else None
        )
        result.append(ConnectorOffset(partition, offset, record_time))
    return result


def optional_record_time_from_pb(
    message: pb.AlterOffsetsRequest | pb.ConnectorOffsets, field_path: str
) -> int | None:
    """``all_partitions_record_time`` in ms, or None when unset."""
    if not message.HasField("all_partitions_record_time"):
        return None
    return record_time_from_pb(message.all_partitions_record_time, field_path)


def logger_to_pb(name: str, level: LoggerLevel) -> pb.Logger:
    message = pb.Logger(name=name, level=level.level)
    if level.last_modified is not None:
        message.last_modified.FromMilliseconds(level.last_modified)
    return message


def log_level_scope_from_pb(value: int) -> LogLevelScope:
    """UNSPECIFIED is WORKER, Kafka Connect's default scope."""
    if value == pb.LOG_LEVEL_SCOPE_CLUSTER:
        return LogLevelScope.CLUSTER
    if value in (pb.LOG_LEVEL_SCOPE_UNSPECIFIED, pb.LOG_LEVEL_SCOPE_WORKER):
        return LogLevelScope.WORKER
    raise InvalidArgumentError.for_field(
        "scope", f"unknown scope {value}; valid scopes: WORKER, CLUSTER"
    )
