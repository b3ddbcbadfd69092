"""A typed Python client of ``connect.v1.ConnectService``.

Every RPC has one method here (a unit test checks that none is missing and none is extra).
Methods take and return the domain types of :mod:`connect_grpc.domain` and raise the
domain exceptions of :mod:`connect_grpc.errors`, read back from the server's rich gRPC
status; the original ``grpc.RpcError`` is kept as the exception's ``__cause__``.

Example::

    with ConnectClient("localhost:8083") as client:
        client.create_connector("files", {"connector.class": "FileStreamSource", ...})
        status = client.get_connector_status("files")

Thread safety: a client may be shared by threads (gRPC channels and stubs are thread-safe).

Idempotence: every mutation accepts a ``request_id``. A retry carrying the same id gets the
answer of the first successful call back (remembered for a while, ten minutes by
default) instead of applying the change twice or failing with, e.g., ALREADY_EXISTS on a retried
create. Use a fresh id (a UUID) per logical change.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc
from google.protobuf import struct_pb2

from connect_grpc import client_convert as cc
from connect_grpc import preview_convert
from connect_grpc.client_convert import ConnectorListing
from connect_grpc.connection import ConnectionSettings, TlsOptions
from connect_grpc.domain import (
    ClusterInfo,
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    CreateResult,
    OffsetsChange,
    PluginDesc,
    PutConfigResult,
    TargetState,
    TaskInfo,
    TaskStatus,
)
from connect_grpc.loggers import LoggerLevel, LogLevelScope
from connect_grpc.preview import PipelinePreview, PreviewRequest, SampleRecord, TopicTail
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

__all__ = ["ConnectClient", "ConnectionSettings", "ConnectorListing", "TlsOptions"]

R = TypeVar("R")

#: The smallest per-attempt deadline, so that a retry never sends a deadline of zero.
_MIN_TIMEOUT = 0.001


def _repeatable(request: Any) -> bool:
    """Whether sending ``request`` twice is safe: a read (no ``request_id`` field), or a
    mutation whose ``request_id`` makes the server answer a repeat with the first answer."""
    field = request.DESCRIPTOR.fields_by_name.get("request_id")
    return field is None or bool(request.request_id)


class ConnectClient:
    """A client of one worker.

    Every method raises the domain exception of the gRPC status it gets back (see
    ``client_convert.error_from_status``). Besides those each method lists, any call may raise
    :class:`~connect_grpc.errors.InvalidArgumentError` for a bad connector name (empty, control
    characters, longer than 255 characters) or a ``request_id`` reused with another request,
    :class:`~connect_grpc.errors.UnavailableError` (with ``retry_after_seconds``) when the
    worker cannot answer in time (Kafka unreachable, a busy connector), and a plain
    :class:`~connect_grpc.errors.ConnectError` for INTERNAL and other codes.

    A worker that authenticates its callers answers UNAUTHENTICATED
    (:class:`~connect_grpc.errors.UnauthenticatedError`) to a call without a valid token or
    client certificate, and PERMISSION_DENIED
    (:class:`~connect_grpc.errors.PermissionDeniedError`) to a call the caller's role does
    not allow (a viewer's mutation); neither changes anything.

    When the client made the channel from settings and a call fails the way a plaintext
    channel fails at a TLS listener (or a TLS channel at a plaintext one), the
    UnavailableError's message ends with a hint to connect with (or without) TLS.

    Args:
        target: A ``host:port`` address (a plaintext channel is created and closed with the
            client), :class:`~connect_grpc.connection.ConnectionSettings` (address, TLS,
            bearer token; the channel is created and closed with the client), or an
            existing ``grpc.Channel`` (left open; its owner closes it).
        timeout: Deadline in seconds of each unary call (retries included).
        retry_unavailable: When the worker answers UNAVAILABLE with a retry delay (no
            leader yet, a rebalance), wait that delay and call again while ``timeout``
            allows; only for reads and for mutations that carry a ``request_id`` (a repeat
            then cannot apply the change twice). A transport failure is not retried.

    Raises:
        InvalidArgumentError: settings whose files cannot be read, or a malformed token.
    """

    def __init__(
        self,
        target: str | ConnectionSettings | grpc.Channel,
        *,
        timeout: float = 30.0,
        retry_unavailable: bool = False,
    ) -> None:
        if isinstance(target, str):
            target = ConnectionSettings(target)
        if isinstance(target, ConnectionSettings):
            self._channel: grpc.Channel = target.channel()
            self._owns_channel = True
            self._tls: bool | None = target.tls is not None
        else:
            self._channel = target
            self._owns_channel = False
            self._tls = None
        self._stub = pb_grpc.ConnectServiceStub(self._channel)
        self.timeout = timeout
        self.retry_unavailable = retry_unavailable

    # lifecycle

    def close(self) -> None:
        """Closes the channel if the client created it. Idempotent."""
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, rpc: Callable[..., Any], request: Any, convert: Callable[[Any], R]) -> R:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                response = rpc(request, timeout=max(deadline - time.monotonic(), _MIN_TIMEOUT))
            except grpc.RpcError as error:
                delay = self._retry_delay(error, request, deadline)
                if delay is None:
                    raise cc.error_from_rpc_error(error, tls=self._tls) from error
                time.sleep(delay)
                continue
            return convert(response)

    def _retry_delay(self, error: grpc.RpcError, request: Any, deadline: float) -> float | None:
        """How long to wait before calling again; None: do not (see ``retry_unavailable``)."""
        if not self.retry_unavailable or not _repeatable(request):
            return None
        delay = cc.server_retry_delay(error)
        if delay is None or time.monotonic() + delay >= deadline:
            return None
        return delay

    # connectors

    def list_connectors(
        self, expand_status: bool = False, expand_info: bool = False, *, page_size: int = 0
    ) -> list[ConnectorListing]:
        """Lists every connector, sorted by name, reading page after page.

        Args:
            expand_status: Include each connector's status.
            expand_info: Include each connector's config and tasks.
            page_size: The most connectors per call (0: the server's default). The server
                also ends a page early to keep each answer under 4 MiB.

        Returns:
            One listing per connector; ``info``/``status`` are None unless expanded. A
            connector created or deleted while the pages are read may be missing or listed.
        """
        listings: list[ConnectorListing] = []
        token = ""
        while True:
            request = pb.ListConnectorsRequest(
                expand_status=expand_status,
                expand_info=expand_info,
                page_size=page_size,
                page_token=token,
            )
            page, token = self._call(
                self._stub.ListConnectors,
                request,
                lambda r: ([cc.connector_listing_from_pb(c) for c in r.connectors],
                           r.next_page_token),
            )
            listings.extend(page)
            if not token:
                return listings

    def get_connector(self, name: str) -> ConnectorInfo:
        """Returns a connector's config and task ids.

        Raises:
            NotFoundError: No connector has that name.
        """
        return self._call(
            self._stub.GetConnector,
            pb.GetConnectorRequest(name=name),
            lambda r: cc.connector_info_from_pb(r.connector),
        )

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState | str = TargetState.STARTED,
        initial_offsets: Iterable[ConnectorOffset] | None = None,
        *,
        request_id: str = "",
        initial_offsets_time_ms: int | None = None,
    ) -> CreateResult:
        """Creates a connector (KIP-980 initial state, KIP-995 initial offsets).

        Not idempotent by itself (a second create raises AlreadyExistsError); pass a
        ``request_id`` to make retries of the same create return the first answer.

        Args:
            name: The connector name (trimmed by the server).
            config: The connector config; a ``name`` entry, if any, must equal ``name``.
            initial_state: STARTED (the default), PAUSED or STOPPED; also accepted as text
                (``"running"``, ``"PAUSED"``, ...).
            initial_offsets: Offsets to start from; they replace any stored under this name.
                A sink's entry may give ``record_time_ms`` instead of an offset.
            request_id: Optional idempotency key.
            initial_offsets_time_ms: A sink's every partition starts at its first record at
                or after this time (milliseconds since the epoch), or at its end.

        Returns:
            The created connector, a message when initial offsets were written, and the
            offsets record times resolved to.

        Raises:
            AlreadyExistsError: A connector with that name exists.
            InvalidArgumentError: Bad name, config, state or offsets; see ``violations``.
        """
        state = (
            TargetState.parse_initial(initial_state)
            if isinstance(initial_state, str)
            else initial_state
        )
        request = pb.CreateConnectorRequest(
            name=name,
            config=dict(config),
            initial_state=cc.initial_state_to_pb(state),
            request_id=request_id,
        )
        if initial_offsets is not None or initial_offsets_time_ms is not None:
            request.initial_offsets.SetInParent()
            request.initial_offsets.offsets.extend(
                cc.connector_offset_to_pb(o) for o in initial_offsets or []
            )
        if initial_offsets_time_ms is not None:
            request.initial_offsets.all_partitions_record_time.CopyFrom(
                cc.record_time_to_pb(initial_offsets_time_ms)
            )
        return self._call(
            self._stub.CreateConnector,
            request,
            lambda r: CreateResult(
                info=cc.connector_info_from_pb(r.connector),
                offsets_message=r.offsets_message,
                resolved_offsets=tuple(
                    cc.connector_offsets_from_pb(r.resolved_offsets, "resolved_offsets")
                ),
            ),
        )

    def put_connector_config(
        self, name: str, config: Mapping[str, str], *, request_id: str = "", etag: str = ""
    ) -> PutConfigResult:
        """Creates the connector or replaces its whole config.

        Idempotent in effect: putting the same config again leaves the same connector
        (the second answer says ``created=False``); a ``request_id`` replays the first answer.

        Args:
            name: The connector name.
            config: The full new config.
            request_id: Optional idempotency key.
            etag: Optional (AIP-154): replace only if the connector's etag is still this
                one; a connector that does not exist is then NotFoundError.

        Returns:
            The connector after the change (with its new etag), and whether it was created.

        Raises:
            InvalidArgumentError: The config is invalid; see ``violations``.
            AbortedError: ``etag`` is stale; its ``current_etag`` is the connector's now.
        """
        return self._call(
            self._stub.PutConnectorConfig,
            pb.PutConnectorConfigRequest(
                name=name, config=dict(config), request_id=request_id, etag=etag
            ),
            lambda r: PutConfigResult(
                info=cc.connector_info_from_pb(r.connector), created=r.created
            ),
        )

    def patch_connector_config(
        self,
        name: str,
        config: Mapping[str, str | None],
        *,
        request_id: str = "",
        etag: str = "",
    ) -> ConnectorInfo:
        """Changes some keys of a connector's config (KIP-477) and leaves the others.

        The merged config is validated as a whole, as ``put_connector_config`` validates.

        Args:
            name: The connector name.
            config: The keys to change: a string sets the key, None removes it.
            request_id: Optional idempotency key.
            etag: Optional (AIP-154): patch only if the connector's etag is still this one.

        Returns:
            The connector after the change, with its whole config and its new etag.

        Raises:
            NotFoundError: No connector has that name.
            InvalidArgumentError: The merged config is invalid; see ``violations``.
            AbortedError: ``etag`` is stale; its ``current_etag`` is the connector's now.
        """
        request = pb.PatchConnectorConfigRequest(name=name, request_id=request_id, etag=etag)
        for key, value in config.items():
            if value is None:
                request.config[key].null_value = struct_pb2.NULL_VALUE
            else:
                request.config[key].string_value = value
        return self._call(
            self._stub.PatchConnectorConfig,
            request,
            lambda r: cc.connector_info_from_pb(r.connector),
        )

    def get_connector_config(self, name: str) -> dict[str, str]:
        """Returns a connector's config.

        Raises:
            NotFoundError: No connector has that name.
        """
        return self._call(
            self._stub.GetConnectorConfig,
            pb.GetConnectorConfigRequest(name=name),
            lambda r: dict(r.config),
        )

    def delete_connector(self, name: str, *, request_id: str = "", etag: str = "") -> None:
        """Deletes a connector; its tasks and the connector stop with ``connector_deleted``.

        Not idempotent by itself (deleting again raises NotFoundError); pass a
        ``request_id`` to make a retried delete succeed. ``etag`` (optional, AIP-154):
        delete only if the connector's etag is still this one.

        Raises:
            NotFoundError: No connector has that name.
            AbortedError: ``etag`` is stale; nothing was deleted.
        """
        self._call(
            self._stub.DeleteConnector,
            pb.DeleteConnectorRequest(name=name, request_id=request_id, etag=etag),
            lambda r: None,
        )

    # status and tasks

    def get_connector_status(self, name: str) -> ConnectorStatus:
        """Returns the state of the connector and each of its tasks.

        Raises:
            NotFoundError: No connector has that name.
        """
        return self._call(
            self._stub.GetConnectorStatus,
            pb.GetConnectorStatusRequest(name=name),
            lambda r: cc.connector_status_from_pb(r.status),
        )

    def get_task_status(self, name: str, task_id: int) -> TaskStatus:
        """Returns the state of one task.

        Raises:
            NotFoundError: No such connector or task.
        """
        return self._call(
            self._stub.GetTaskStatus,
            pb.GetTaskStatusRequest(name=name, task_id=task_id),
            lambda r: cc.task_status_from_pb(r.task),
        )

    def list_tasks(self, name: str) -> list[TaskInfo]:
        """Lists a connector's tasks with the configs the connector generated, by task number.

        Raises:
            NotFoundError: No connector has that name.
        """
        return self._call(
            self._stub.ListTasks,
            pb.ListTasksRequest(name=name),
            lambda r: [cc.task_info_from_pb(t) for t in r.tasks],
        )

    def watch_connector_status(
        self, name: str, *, timeout: float | None = None
    ) -> Generator[ConnectorStatus | None, None, None]:
        """Streams the connector's status: the current one first, then every change.

        The stream yields ``None`` once when the connector is deleted, then ends. Closing
        the generator (``close()``, or dropping it after leaving a ``for`` loop) cancels the
        call. Reading only: safe to retry or reopen at any time.

        Args:
            name: The connector name.
            timeout: Deadline of the whole stream in seconds; None (the default) for none.

        Raises:
            NotFoundError: No connector has that name (raised on the first ``next``).
        """
        try:
            call = self._stub.WatchConnectorStatus(
                pb.WatchConnectorStatusRequest(name=name), timeout=timeout
            )
        except grpc.RpcError as error:  # pragma: no cover - stream calls fail lazily
            raise cc.error_from_rpc_error(error, tls=self._tls) from error
        try:
            for message in call:
                if message.deleted:
                    yield None
                    return
                yield cc.connector_status_from_pb(message.status)
        except grpc.RpcError as error:
            raise cc.error_from_rpc_error(error, tls=self._tls) from error
        finally:
            call.cancel()

    # target states and restarts

    def pause_connector(self, name: str, *, request_id: str = "", etag: str = "") -> str:
        """Pauses the connector and its tasks. Idempotent. ``etag`` (optional, AIP-154):
        only if the connector's etag is still this one. Returns the etag after the change.

        Raises:
            NotFoundError: No connector has that name.
            AbortedError: ``etag`` is stale; its ``current_etag`` is the connector's now.
        """
        return self._call(
            self._stub.PauseConnector,
            pb.PauseConnectorRequest(name=name, request_id=request_id, etag=etag),
            lambda r: str(r.etag),
        )

    def resume_connector(self, name: str, *, request_id: str = "", etag: str = "") -> str:
        """Resumes a paused or stopped connector. Idempotent. ``etag`` and the answer as
        ``pause_connector``'s.

        Raises:
            NotFoundError: No connector has that name.
            AbortedError: ``etag`` is stale; its ``current_etag`` is the connector's now.
        """
        return self._call(
            self._stub.ResumeConnector,
            pb.ResumeConnectorRequest(name=name, request_id=request_id, etag=etag),
            lambda r: str(r.etag),
        )

    def stop_connector(self, name: str, *, request_id: str = "", etag: str = "") -> str:
        """Stops the connector and removes its tasks (KIP-875). Idempotent. ``etag`` and the
        answer as ``pause_connector``'s.

        Raises:
            NotFoundError: No connector has that name.
            AbortedError: ``etag`` is stale; its ``current_etag`` is the connector's now.
        """
        return self._call(
            self._stub.StopConnector,
            pb.StopConnectorRequest(name=name, request_id=request_id, etag=etag),
            lambda r: str(r.etag),
        )

    def restart_connector(
        self,
        name: str,
        include_tasks: bool = False,
        only_failed: bool = False,
        *,
        request_id: str = "",
    ) -> ConnectorStatus | None:
        """Restarts the connector and, optionally, its (failed) tasks (KIP-745).

        Each call restarts again; pass a ``request_id`` so that a retry does not.

        Args:
            name: The connector name.
            include_tasks: Also restart the tasks.
            only_failed: Restart only the instances that are FAILED.
            request_id: Optional idempotency key.

        Returns:
            None for a plain restart (no flags); otherwise the status with every instance
            chosen for restart shown RESTARTING.

        Raises:
            NotFoundError: No connector has that name.
            ConnectError: A plain restart whose connector failed to start (INTERNAL, reason
                INSTANCE_FAILED); the connector is FAILED and its trace is in its status.
        """
        return self._call(
            self._stub.RestartConnector,
            pb.RestartConnectorRequest(
                name=name,
                include_tasks=include_tasks,
                only_failed=only_failed,
                request_id=request_id,
            ),
            lambda r: cc.connector_status_from_pb(r.status) if r.HasField("status") else None,
        )

    def restart_task(self, name: str, task_id: int, *, request_id: str = "") -> None:
        """Restarts one task.

        Each call restarts again; pass a ``request_id`` so that a retry does not.

        Raises:
            NotFoundError: No such connector or task.
            ConnectError: The task failed to start (INTERNAL, reason INSTANCE_FAILED); it is
                FAILED and its trace is in its status.
        """
        self._call(
            self._stub.RestartTask,
            pb.RestartTaskRequest(name=name, task_id=task_id, request_id=request_id),
            lambda r: None,
        )

    # offsets (KIP-875)

    def get_offsets(self, name: str) -> list[ConnectorOffset]:
        """Reads the connector's offsets; integers come back exact (up to 2^63-1).

        Raises:
            NotFoundError: No connector has that name.
        """
        return self._call(
            self._stub.GetOffsets,
            pb.GetOffsetsRequest(name=name),
            lambda r: cc.connector_offsets_from_pb(r.offsets, "offsets"),
        )

    def alter_offsets(
        self,
        name: str,
        offsets: Iterable[ConnectorOffset] = (),
        *,
        request_id: str = "",
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        """Merges offsets into those of a STOPPED connector; ``offset=None`` resets a partition.

        A sink may be rewound by time instead: an entry's ``record_time_ms`` (milliseconds
        since the epoch), or ``all_partitions_time_ms`` for every partition of its topics,
        sets the partition to its first record at or after that time, or to its end.

        Idempotent in effect (the same offsets again leave the same offsets); a
        ``request_id`` also replays the first answer.

        ``etag`` (optional, AIP-154): alter only if the connector's etag is still this one
        (AbortedError otherwise).

        Returns:
            What was altered, and where; the offsets record times resolved to; the
            connector's etag after the change.

        Raises:
            NotFoundError: No connector has that name.
            FailedPreconditionError: The connector is not STOPPED; see ``violations``.
            InvalidArgumentError: Malformed offsets; see ``violations``.
        """
        return self._call(
            self._stub.AlterOffsets,
            pb.AlterOffsetsRequest(
                name=name,
                offsets=[cc.connector_offset_to_pb(o) for o in offsets],
                request_id=request_id,
                all_partitions_record_time=(
                    None if all_partitions_time_ms is None
                    else cc.record_time_to_pb(all_partitions_time_ms)
                ),
                etag=etag,
            ),
            lambda r: OffsetsChange(
                str(r.message),
                tuple(cc.connector_offsets_from_pb(r.resolved_offsets, "resolved_offsets")),
                str(r.etag),
            ),
        )

    def reset_offsets(self, name: str, *, request_id: str = "", etag: str = "") -> str:
        """Resets all offsets of a STOPPED connector. Idempotent in effect. ``etag``
        (optional, AIP-154): reset only if the connector's etag is still this one
        (AbortedError otherwise); ``get_connector`` then gives the new one.

        Returns:
            What was reset, and where.

        Raises:
            NotFoundError: No connector has that name.
            FailedPreconditionError: The connector is not STOPPED.
        """
        return self._call(
            self._stub.ResetOffsets,
            pb.ResetOffsetsRequest(name=name, request_id=request_id, etag=etag),
            lambda r: str(r.message),
        )

    # plugins and cluster

    def validate_config(
        self, *, plugin: str | None = None, config: Mapping[str, str]
    ) -> ConfigInfos:
        """Validates a config against its plugin's definitions; changes nothing.

        Keyword-only, in the proto's field order (``plugin``, ``config``).

        Args:
            plugin: The plugin's class name or alias; None for ``config["connector.class"]``.
            config: The config to validate.

        Returns:
            Per-key definitions and errors; ``error_count`` is 0 for a valid config (invalid
            values are reported here, not raised).

        Raises:
            InvalidArgumentError: No plugin given and no ``connector.class`` in the config, or
                an unknown plugin (the message lists the available ones).
        """
        return self._call(
            self._stub.ValidateConfig,
            pb.ValidateConfigRequest(plugin=plugin or "", config=dict(config)),
            cc.config_infos_from_pb,
        )

    def list_plugins(
        self, include_config_definitions: bool = False, all_plugin_types: bool = False
    ) -> list[PluginDesc]:
        """Lists the installed connector plugins: the sinks, then the sources, each sorted by
        class name (Kafka Connect's order).

        Args:
            include_config_definitions: Include each plugin's config key definitions.
            all_plugin_types: Also list the transformations, predicates, converters and
                header converters, after the connectors (each type sorted by class name,
                in Kafka Connect's order of types).
        """
        return self._call(
            self._stub.ListPlugins,
            pb.ListPluginsRequest(
                include_config_definitions=include_config_definitions,
                all_plugin_types=all_plugin_types,
            ),
            lambda r: [cc.plugin_from_pb(p) for p in r.plugins],
        )

    def get_plugin_config(self, name: str) -> PluginDesc:
        """Describes one plugin with its config definitions (KIP-769).

        Args:
            name: The plugin's class name or any of its aliases (a connector, transformation,
                predicate, converter or header converter).

        Returns:
            The plugin; for a connector its own keys first, then the framework's connector
            keys it does not define.

        Raises:
            NotFoundError: No plugin has that name (the message names the closest one).
        """
        return self._call(
            self._stub.GetPluginConfig,
            pb.GetPluginConfigRequest(name=name),
            lambda r: cc.plugin_from_pb(r.plugin),
        )

    def get_cluster_info(self) -> ClusterInfo:
        """Describes the cluster: mode, version, leader, live workers, generation."""
        return self._call(
            self._stub.GetClusterInfo, pb.GetClusterInfoRequest(), cc.cluster_info_from_pb
        )

    def list_loggers(self) -> dict[str, LoggerLevel]:
        """The worker's known loggers whose level is not OFF, by name (``root`` first), each
        with its effective level (a Kafka level name) and when it was last set through
        :meth:`set_log_level` (ms since the epoch; None if never)."""
        return self._call(
            self._stub.ListLoggers,
            pb.ListLoggersRequest(),
            lambda r: {logger.name: cc.logger_level_from_pb(logger) for logger in r.loggers},
        )

    def get_logger(self, name: str) -> LoggerLevel:
        """One logger's level on the worker that answers (``root`` for the root logger).

        Raises:
            NotFoundError: The worker knows no logger of that name.
        """
        return self._call(
            self._stub.GetLogger,
            pb.GetLoggerRequest(name=name),
            lambda r: cc.logger_level_from_pb(r.logger),
        )

    def set_log_level(
        self, name: str, level: str, scope: LogLevelScope = LogLevelScope.WORKER
    ) -> list[str]:
        """Sets ``level`` (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL or OFF, any case) on
        the logger ``name`` and every known logger whose name starts with it.

        With ``LogLevelScope.WORKER`` on the worker that answers; returns the loggers whose
        level changed, sorted. With ``LogLevelScope.CLUSTER`` on every worker, including
        those that join later (through the config topic); returns an empty list.

        Raises:
            InvalidArgumentError: An empty name, or a level that is not one of those above.
        """
        return self._call(
            self._stub.SetLogLevel,
            pb.SetLogLevelRequest(name=name, level=level, scope=cc.log_level_scope_to_pb(scope)),
            lambda r: list(r.changed_loggers),
        )

    # topic tracking (KIP-558)

    def get_connector_topics(self, name: str) -> list[str]:
        """The topics the connector's tasks wrote to (source) or read from (sink), sorted;
        empty for a connector that used none, or is unknown.

        Raises:
            FailedPreconditionError: The worker does not track topics
                (``topic.tracking.enable=false``).
        """
        return self._call(
            self._stub.GetConnectorTopics,
            pb.GetConnectorTopicsRequest(name=name),
            lambda r: list(r.topics),
        )

    def reset_connector_topics(self, name: str) -> None:
        """Forgets the topics the connector's tasks used (any state; a running task records
        a topic again when it next uses it). Idempotent.

        Raises:
            FailedPreconditionError: The worker does not track topics, or does not allow
                their reset (``topic.tracking.allow.reset=false``).
        """
        self._call(
            self._stub.ResetConnectorTopics,
            pb.ResetConnectorTopicsRequest(name=name),
            lambda r: None,
        )

    # ---- Pipeline preview (issue 26 item 6) ----
    def preview_pipeline(
        self,
        *,
        name: str = "",
        config: Mapping[str, str] | None = None,
        samples: Sequence[SampleRecord] | None = None,
        from_topic: TopicTail | None = None,
    ) -> PipelinePreview:
        """Runs records through a connector's converters and transformations and returns
        every stage's output, or the failed stage with the dead-letter headers it would
        get; writes nothing, runs no task, creates no connector.

        Keyword-only, in the proto's field order.

        Args:
            name: An existing connector, whose config is previewed (or give ``config``).
            config: A connector config, validated as CreateConnector validates it.
            samples: Sample records (or give ``from_topic``): for a sink, key, value and
                header values as consumed (str: JSON text, taken as its UTF-8 bytes); for a
                source, as polled (str: JSON read as JsonConverter reads it).
            from_topic: The last records of a topic (sink connectors only).

        Raises:
            InvalidArgumentError: an invalid config (the field violations of a create) or
                request.
            NotFoundError: no connector ``name``.
            UnavailableError: Kafka did not answer in time (``from_topic``).
        """
        request = PreviewRequest(
            name=name,
            config=dict(config) if config else None,
            samples=tuple(samples) if samples is not None else None,
            from_topic=from_topic,
        )
        return self._call(
            self._stub.PreviewPipeline,
            preview_convert.request_to_pb(request),
            preview_convert.preview_from_pb,
        )
