"""Proto → domain conversions for the Python client, and gRPC status → domain exception.

The inverse of :mod:`connect_grpc.api.convert` (domain → proto) and of
:mod:`connect_grpc.api.errors` (domain exception → rich gRPC status). Pure functions; where
``convert.py`` already has the helper (offsets, instance states), it is reused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_grpc.api.convert import (
    connector_offset_to_pb,
    connector_offsets_from_pb,
    record_time_to_pb,
    state_from_pb,
)
from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ClusterInfo,
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorInfo,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    PlacementKind,
    PluginDesc,
    TargetState,
    TaskId,
    TaskInfo,
    TaskPlacement,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.kernel.errors import (
    AbortedError,
    AlreadyExistsError,
    ConnectError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionViolation,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
)
from connect_grpc.logs.level_model import LoggerLevel, LogLevelScope
from connect_grpc.v1 import connect_pb2 as pb

__all__ = [
    "CallFailure",
    "ConnectorListing",
    "call_failure_of",
    "cluster_info_from_pb",
    "config_infos_from_pb",
    "config_key_from_pb",
    "connector_info_from_pb",
    "connector_listing_from_pb",
    "connector_offset_to_pb",
    "connector_offsets_from_pb",
    "connector_status_from_pb",
    "error_from_rpc_error",
    "error_from_status",
    "initial_state_to_pb",
    "instance_status_from_pb",
    "plugin_from_pb",
    "record_time_to_pb",
    "server_retry_delay",
    "task_id_from_pb",
    "task_info_from_pb",
    "task_status_from_pb",
    "transport_hint",
    "type_from_pb",
]

#: Used when an UNAVAILABLE status carries no RetryInfo (e.g. the transport failed).
DEFAULT_RETRY_AFTER_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class ConnectorListing:
    """One connector of ``ListConnectors``: its name, plus what the caller asked to expand."""

    name: str
    info: ConnectorInfo | None = None
    status: ConnectorStatus | None = None


_INITIAL_STATE_TO_PB: dict[TargetState, pb.InitialState] = {
    TargetState.STARTED: pb.INITIAL_STATE_RUNNING,
    TargetState.PAUSED: pb.INITIAL_STATE_PAUSED,
    TargetState.STOPPED: pb.INITIAL_STATE_STOPPED,
}
_TYPE_FROM_PB: dict[int, ConnectorType] = {
    pb.CONNECTOR_TYPE_SOURCE: ConnectorType.SOURCE,
    pb.CONNECTOR_TYPE_SINK: ConnectorType.SINK,
}


def initial_state_to_pb(state: TargetState) -> pb.InitialState:
    """The ``InitialState`` of a target state (STARTED is sent as RUNNING)."""
    return _INITIAL_STATE_TO_PB[state]


def type_from_pb(value: int) -> ConnectorType:
    """The connector type; UNSPECIFIED and values newer than this client are UNKNOWN."""
    return _TYPE_FROM_PB.get(value, ConnectorType.UNKNOWN)


def task_id_from_pb(message: pb.TaskId) -> TaskId:
    return TaskId(connector=message.connector, task=message.task)


def connector_info_from_pb(message: pb.ConnectorInfo) -> ConnectorInfo:
    return ConnectorInfo(
        name=message.name,
        config=dict(message.config),
        tasks=tuple(task_id_from_pb(task) for task in message.tasks),
        type=type_from_pb(message.type),
        etag=message.etag,
    )


def task_info_from_pb(message: pb.TaskInfo) -> TaskInfo:
    return TaskInfo(id=task_id_from_pb(message.id), config=dict(message.config))


def instance_status_from_pb(message: pb.ConnectorInstanceStatus) -> InstanceStatus:
    return InstanceStatus(
        state=state_from_pb(message.state),
        worker_id=message.worker_id,
        trace=message.trace,
        revision=message.revision,
        version=message.version,
    )


_PLACEMENT_FROM_PB = {
    pb.TaskPlacement.KIND_DRIVER: PlacementKind.DRIVER,
    pb.TaskPlacement.KIND_SPARK_EXECUTOR: PlacementKind.SPARK_EXECUTOR,
}


def placement_from_pb(message: pb.TaskPlacement) -> TaskPlacement | None:
    """None when unset, or of a kind this client does not know."""
    kind = _PLACEMENT_FROM_PB.get(message.kind)
    return None if kind is None else TaskPlacement(kind, message.host)


def task_status_from_pb(message: pb.TaskStatus) -> TaskStatus:
    return TaskStatus(
        id=message.id,
        status=InstanceStatus(
            state=state_from_pb(message.state),
            worker_id=message.worker_id,
            trace=message.trace,
            placement=placement_from_pb(message.placement),
            revision=message.revision,
            version=message.version,
        ),
        transactional_id=message.transactional_id,
    )


def connector_status_from_pb(message: pb.ConnectorStatus) -> ConnectorStatus:
    return ConnectorStatus(
        name=message.name,
        connector=instance_status_from_pb(message.connector),
        tasks=tuple(task_status_from_pb(task) for task in message.tasks),
        type=type_from_pb(message.type),
        auto_restart=(
            auto_restart_from_pb(message.auto_restart)
            if message.HasField("auto_restart") else None
        ),
    )


def auto_restart_from_pb(message: pb.AutoRestartStatus) -> AutoRestartStatus:
    def millis(field: str) -> int:
        return message.__getattribute__(field).ToMilliseconds() if message.HasField(field) else 0

    return AutoRestartStatus(
        count=message.count,
        next_attempt_ms=millis("next_attempt_time"),
        last_restart_ms=millis("last_restart_time"),
        gave_up=message.gave_up,
    )


def connector_listing_from_pb(message: pb.ConnectorListing) -> ConnectorListing:
    return ConnectorListing(
        name=message.name,
        info=connector_info_from_pb(message.info) if message.HasField("info") else None,
        status=connector_status_from_pb(message.status) if message.HasField("status") else None,
    )


def config_key_from_pb(message: pb.ConfigKeyInfo) -> ConfigKeyInfo:
    return ConfigKeyInfo(
        name=message.name,
        type=message.type,
        required=message.required,
        default_value=(
            message.default_value if message.HasField("default_value") else None
        ),
        importance=message.importance,
        documentation=message.documentation,
        group=message.group,
        order_in_group=message.order_in_group,
        width=message.width,
        display_name=message.display_name,
        dependents=tuple(message.dependents),
    )


def _config_value_from_pb(message: pb.ConfigValueInfo) -> ConfigValueInfo:
    return ConfigValueInfo(
        name=message.name,
        value=message.value if message.HasField("value") else None,
        errors=tuple(message.errors),
        recommended_values=tuple(message.recommended_values),
        visible=message.visible,
    )


def config_infos_from_pb(message: pb.ValidateConfigResponse) -> ConfigInfos:
    """A ``ValidateConfigResponse`` as the domain's validation result."""
    return ConfigInfos(
        name=message.name,
        error_count=message.error_count,
        groups=tuple(message.groups),
        configs=tuple(
            ConfigInfo(
                definition=(
                    config_key_from_pb(entry.definition)
                    if entry.HasField("definition")
                    else None
                ),
                value=_config_value_from_pb(entry.value),
            )
            for entry in message.configs
        ),
    )


def plugin_from_pb(message: pb.PluginInfo) -> PluginDesc:
    return PluginDesc(
        class_name=message.class_name,
        type=type_from_pb(message.type),
        version=message.version,
        aliases=tuple(message.aliases),
        config_definitions=tuple(config_key_from_pb(key) for key in message.config_definitions),
        plugin_type=message.plugin_type,
    )


def cluster_info_from_pb(message: pb.GetClusterInfoResponse) -> ClusterInfo:
    """A ``GetClusterInfoResponse`` as the domain's cluster description."""
    return ClusterInfo(
        version=message.version,
        mode=message.mode,
        kafka_cluster_id=message.kafka_cluster_id,
        leader_id=message.leader_id,
        leader_address=message.leader_address,
        workers=tuple(
            WorkerDesc(
                id=w.id,
                address=w.address,
                connectors=tuple(w.connectors),
                tasks=tuple(task_id_from_pb(t) for t in w.tasks),
                placements={
                    task_id_from_pb(placed.task): placement
                    for placed in w.placements
                    if (placement := placement_from_pb(placed.placement)) is not None
                },
            )
            for w in message.workers
        ),
        generation=message.generation,
        worker_id=message.worker_id,
        joined=message.joined,
    )


# errors: the inverse of connect_grpc.api.errors.to_status


M = TypeVar("M", bound=Message)


def _unpack_all(details: Iterable[any_pb2.Any], kind: type[M]) -> list[M]:
    found: list[M] = []
    for detail in details:
        message = kind()
        if detail.Unpack(message):
            found.append(message)
    return found


def error_from_status(status: status_pb2.Status) -> ConnectError:
    """The domain exception of a rich status, with the details its type carries.

    INVALID_ARGUMENT keeps its ``BadRequest`` field violations, FAILED_PRECONDITION its
    ``PreconditionFailure`` violations, UNAVAILABLE its ``RetryInfo`` delay (1 s when absent).
    Codes with no domain exception of their own (INTERNAL, DEADLINE_EXCEEDED, ...) become a
    plain :class:`ConnectError`.
    """
    code = int(status.code)
    message = str(status.message)
    details = list(status.details)
    if code == code_pb2.NOT_FOUND:
        return NotFoundError(message)
    if code == code_pb2.ALREADY_EXISTS:
        return AlreadyExistsError(message)
    if code == code_pb2.ABORTED:
        infos = _unpack_all(details, error_details_pb2.ErrorInfo)
        return AbortedError(message, str(infos[0].metadata.get("etag", "")) if infos else "")
    if code == code_pb2.INVALID_ARGUMENT:
        return InvalidArgumentError(
            message,
            [
                FieldViolation(field=v.field, description=v.description)
                for bad_request in _unpack_all(details, error_details_pb2.BadRequest)
                for v in bad_request.field_violations
            ],
        )
    if code == code_pb2.FAILED_PRECONDITION:
        return FailedPreconditionError(
            message,
            [
                PreconditionViolation(
                    type=v.type, subject=v.subject, description=v.description
                )
                for failure in _unpack_all(details, error_details_pb2.PreconditionFailure)
                for v in failure.violations
            ],
        )
    if code == code_pb2.UNAVAILABLE:
        retries = _unpack_all(details, error_details_pb2.RetryInfo)
        delay = (
            retries[0].retry_delay.ToMilliseconds() / 1000
            if retries and retries[0].HasField("retry_delay")
            else DEFAULT_RETRY_AFTER_SECONDS
        )
        return UnavailableError(message, retry_after_seconds=delay)
    if code == code_pb2.UNIMPLEMENTED:
        return UnimplementedError(message)
    if code == code_pb2.UNAUTHENTICATED:
        return UnauthenticatedError(message)
    if code == code_pb2.PERMISSION_DENIED:
        return PermissionDeniedError(message)
    return ConnectError(message)


#: What a plaintext channel meets at a TLS listener: the server drops the connection at the
#: first bytes, which gRPC reports as this (a port where nothing listens is "refused").
_PLAINTEXT_AT_TLS = ("Socket closed", "Connection reset")
#: What a TLS channel meets at a plaintext listener: the handshake reads an HTTP/2 frame.
_TLS_AT_PLAINTEXT = ("WRONG_VERSION_NUMBER",)

PLAINTEXT_AT_TLS_HINT = (
    "the worker may require TLS: connect with TLS (ctl: --tls, or --cacert FILE for a "
    "private CA; Python: ConnectionSettings(address, tls=TlsOptions(...)))"
)
TLS_AT_PLAINTEXT_HINT = (
    "the worker may not use TLS (a grpc:// listener): connect in plaintext (ctl: without "
    "--tls, --cacert, --cert, --key; Python: ConnectionSettings without tls)"
)


def error_from_rpc_error(error: grpc.RpcError, *, tls: bool | None = None) -> ConnectError:
    """The domain exception of a failed call (a ``grpc.RpcError`` that is also a ``grpc.Call``).

    Reads the rich ``google.rpc.Status`` from the trailing metadata when the server sent one;
    otherwise (transport failures, plain ``context.abort``) uses the bare code and details.
    ``tls`` says whether the channel used TLS (None: unknown); when the transport failed the
    way a plaintext/TLS mismatch makes it fail, the message ends with a hint.
    """
    status = _status_of_rpc_error(error)
    hint = transport_hint(status, tls)
    if hint is not None:
        status = status_pb2.Status(code=status.code, message=f"{status.message} ({hint})")
    return error_from_status(status)


def server_retry_delay(error: grpc.RpcError) -> float | None:
    """The delay an UNAVAILABLE answer's ``RetryInfo`` asks for; None when the call did not
    fail with UNAVAILABLE or the server sent no RetryInfo (e.g. the transport failed)."""
    status = _status_of_rpc_error(error)
    if int(status.code) != code_pb2.UNAVAILABLE:
        return None
    retries = _unpack_all(status.details, error_details_pb2.RetryInfo)
    if not retries or not retries[0].HasField("retry_delay"):
        return None
    return float(retries[0].retry_delay.ToMilliseconds() / 1000)


def transport_hint(status: status_pb2.Status, tls: bool | None) -> str | None:
    """The TLS hint for an UNAVAILABLE status the transport made (no details), or None."""
    if tls is None or int(status.code) != code_pb2.UNAVAILABLE or status.details:
        return None
    signs, hint = (
        (_TLS_AT_PLAINTEXT, TLS_AT_PLAINTEXT_HINT) if tls
        else (_PLAINTEXT_AT_TLS, PLAINTEXT_AT_TLS_HINT)
    )
    return hint if any(sign in status.message for sign in signs) else None


def _status_of_rpc_error(error: grpc.RpcError) -> status_pb2.Status:
    status: status_pb2.Status | None = None
    if isinstance(error, grpc.Call):
        try:
            status = rpc_status.from_call(error)
        except ValueError:  # code or message disagree with the rich status: trust the call
            status = None
    if status is None:
        code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = (error.details() if isinstance(error, grpc.Call) else None) or str(error)
        status = status_pb2.Status(code=code.value[0], message=details)
    return status


@dataclass(frozen=True, slots=True)
class CallFailure:
    """How a call failed, beyond what its domain exception says."""

    #: The gRPC status code.
    code: grpc.StatusCode
    #: The ``ErrorInfo`` reason (e.g. ``INSTANCE_FAILED``); the exception's own when none came.
    reason: str


_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}
_CODE_OF_ERROR: tuple[tuple[type[ConnectError], grpc.StatusCode], ...] = (
    (NotFoundError, grpc.StatusCode.NOT_FOUND),
    (AlreadyExistsError, grpc.StatusCode.ALREADY_EXISTS),
    (AbortedError, grpc.StatusCode.ABORTED),
    (InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT),
    (FailedPreconditionError, grpc.StatusCode.FAILED_PRECONDITION),
    (UnavailableError, grpc.StatusCode.UNAVAILABLE),
    (UnimplementedError, grpc.StatusCode.UNIMPLEMENTED),
    (UnauthenticatedError, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDeniedError, grpc.StatusCode.PERMISSION_DENIED),
)


def call_failure_of(error: ConnectError) -> CallFailure:
    """The status code and reason of an error a :class:`~connect_grpc.client.ConnectClient`
    call raised: read from the failed call (the error's ``__cause__``); for an error raised
    before any call (the client's own checks), the code of its type (UNKNOWN for a plain
    ConnectError)."""
    cause = error.__cause__
    if isinstance(cause, grpc.RpcError):
        status = _status_of_rpc_error(cause)
        infos = _unpack_all(status.details, error_details_pb2.ErrorInfo)
        return CallFailure(
            _STATUS_CODES.get(int(status.code), grpc.StatusCode.UNKNOWN),
            str(infos[0].reason) if infos else error.reason,
        )
    code = next((c for kind, c in _CODE_OF_ERROR if isinstance(error, kind)),
                grpc.StatusCode.UNKNOWN)
    return CallFailure(code, error.reason)


def logger_level_from_pb(message: pb.Logger) -> LoggerLevel:
    last_modified = (
        message.last_modified.ToMilliseconds() if message.HasField("last_modified") else None
    )
    return LoggerLevel(message.level, last_modified)


def log_level_scope_to_pb(scope: LogLevelScope) -> pb.LogLevelScope:
    if scope is LogLevelScope.CLUSTER:
        return pb.LOG_LEVEL_SCOPE_CLUSTER
    return pb.LOG_LEVEL_SCOPE_WORKER
