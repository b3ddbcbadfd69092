"""The typed client's calls about a connector's life: its config (create, read, replace,
patch, delete), its status and its tasks (read once, or watched as a stream), its target
state (pause, resume, stop) and its restarts.

Separate from the channel handling (:mod:`._channel`) these calls share, and from the
calls about offsets and topics (:mod:`._offsets`) and about the worker, its plugins and the
cluster (:mod:`._cluster`); :class:`connect_grpc.client.ConnectClient` combines them.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping

import grpc
from google.protobuf import struct_pb2

from connect_grpc.client import convert as cc
from connect_grpc.client._channel import ChannelClient
from connect_grpc.client.convert import ConnectorListing
from connect_grpc.kernel.domain import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    CreateResult,
    PutConfigResult,
    TargetState,
    TaskInfo,
    TaskStatus,
)
from connect_grpc.v1 import connect_pb2 as pb


class ConnectorCalls(ChannelClient):
    """The RPCs about one connector's config, status, tasks, target state and restarts."""

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
