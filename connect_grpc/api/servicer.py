"""ConnectService: converts requests, calls the herder, converts results. No business logic.

Every request is normalised once, here, before anything else sees it: the connector name
is trimmed and checked (``_named``), so the herder, the request log and the answer all use
the same spelling.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from connect_grpc.api import convert
from connect_grpc.api.errors import mapped, mapped_stream
from connect_grpc.api.forwarding import Forwarder, forwardable, settled
from connect_grpc.api.idempotency import RequestLog
from connect_grpc.api.paging import PageRequest, answer_budget
from connect_grpc.herder.interface import Herder
from connect_grpc.herder.validation import validate_name
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    CreateResult,
    OffsetsChange,
    PutConfigResult,
    RestartRequest,
    TaskId,
)
from connect_grpc.kernel.errors import NotFoundError
from connect_grpc.logs.levels import LogLevelScope, parse_level, parse_logger_name
from connect_grpc.pipeline import preview_convert
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

R = TypeVar("R", bound=Message)

#: Bytes a listing adds to its response beyond its own size (field tag and length).
_LISTING_OVERHEAD = 8


def _named(request: R) -> R:
    """The request with its connector name normalised (trimmed and checked): the request
    itself when the name is already, else a copy (never changed in place: a copy of an
    AlterOffsetsRequest of 40,000 entries costs a fifth of a second)."""
    name = validate_name(request.name)  # type: ignore[attr-defined]
    if name == request.name:  # type: ignore[attr-defined]
        return request
    normalised = type(request)()
    normalised.CopyFrom(request)
    normalised.name = name  # type: ignore[attr-defined]
    return normalised


class ConnectServicer(pb_grpc.ConnectServiceServicer):  # type: ignore[misc]  # generated, untyped
    def __init__(
        self,
        herder: Herder,
        request_log: RequestLog | None = None,
        max_send_bytes: int = 4 * 1024 * 1024,
        forwarder: Forwarder | None = None,
    ) -> None:
        """``forwarder`` (distributed mode) re-sends a write the herder refuses with
        NotLeaderError to the leader; None (standalone) lets the error through."""
        self.forwarder = forwarder
        self._herder = herder
        self._requests = request_log or RequestLog()
        self._page_budget = answer_budget(max_send_bytes)

    @mapped
    @settled
    def ListConnectors(
        self, request: pb.ListConnectorsRequest, context: grpc.ServicerContext
    ) -> pb.ListConnectorsResponse:
        query = f"status={request.expand_status},info={request.expand_info}"
        page = PageRequest.parse(request.page_size, request.page_token, query)
        response = pb.ListConnectorsResponse()
        used = 0
        for name in page.candidates(self._herder.connectors()):
            try:
                listing = self._listing(name, request)
            except NotFoundError:
                continue  # deleted since the names were read
            size = listing.ByteSize() + _LISTING_OVERHEAD
            full = len(response.connectors) >= page.size or used + size > self._page_budget
            if full and response.connectors:
                response.next_page_token = page.token_after(response.connectors[-1].name)
                break
            response.connectors.append(listing)
            used += size
        return response

    def _listing(self, name: str, request: pb.ListConnectorsRequest) -> pb.ConnectorListing:
        listing = pb.ConnectorListing(name=name)
        if request.expand_info:
            listing.info.CopyFrom(convert.connector_info_to_pb(self._herder.connector_info(name)))
        if request.expand_status:
            listing.status.CopyFrom(
                convert.connector_status_to_pb(self._herder.connector_status(name))
            )
        return listing

    @mapped
    @settled
    def GetConnector(
        self, request: pb.GetConnectorRequest, context: grpc.ServicerContext
    ) -> pb.GetConnectorResponse:
        request = _named(request)
        info = self._herder.connector_info(request.name)
        return pb.GetConnectorResponse(connector=convert.connector_info_to_pb(info))

    @mapped
    @forwardable(pb.CreateConnectorResponse)
    def CreateConnector(
        self, request: pb.CreateConnectorRequest, context: grpc.ServicerContext
    ) -> pb.CreateConnectorResponse:
        request = _named(request)

        def act() -> CreateResult:
            given = request.HasField("initial_offsets")
            initial_offsets = (
                convert.connector_offsets_from_pb(
                    request.initial_offsets.offsets, "initial_offsets.offsets"
                )
                if given
                else None
            )
            initial_time_ms = (
                convert.optional_record_time_from_pb(
                    request.initial_offsets, "initial_offsets.all_partitions_record_time"
                )
                if given
                else None
            )
            return self._herder.create_connector(
                request.name,
                dict(request.config),
                convert.initial_state_from_pb(request.initial_state),
                initial_offsets,
                initial_time_ms,
            )

        def answer(result: CreateResult) -> pb.CreateConnectorResponse:
            return pb.CreateConnectorResponse(
                connector=convert.connector_info_to_pb(result.info),
                offsets_message=result.offsets_message,
                resolved_offsets=[
                    convert.connector_offset_to_pb(o) for o in result.resolved_offsets
                ],
            )

        return self._requests.run(
            "CreateConnector", request, pb.CreateConnectorResponse, act, answer
        )

    @mapped
    @forwardable(pb.PutConnectorConfigResponse)
    def PutConnectorConfig(
        self, request: pb.PutConnectorConfigRequest, context: grpc.ServicerContext
    ) -> pb.PutConnectorConfigResponse:
        request = _named(request)

        def answer(result: PutConfigResult) -> pb.PutConnectorConfigResponse:
            return pb.PutConnectorConfigResponse(
                connector=convert.connector_info_to_pb(result.info), created=result.created
            )

        return self._requests.run(
            "PutConnectorConfig",
            request,
            pb.PutConnectorConfigResponse,
            lambda: self._herder.put_connector_config(
                request.name, dict(request.config), request.etag
            ),
            answer,
        )

    @mapped
    @forwardable(pb.PatchConnectorConfigResponse)
    def PatchConnectorConfig(
        self, request: pb.PatchConnectorConfigRequest, context: grpc.ServicerContext
    ) -> pb.PatchConnectorConfigResponse:
        request = _named(request)
        patch = convert.config_patch_from_pb(request.config, "config")

        def answer(result: PutConfigResult) -> pb.PatchConnectorConfigResponse:
            return pb.PatchConnectorConfigResponse(
                connector=convert.connector_info_to_pb(result.info)
            )

        return self._requests.run(
            "PatchConnectorConfig",
            request,
            pb.PatchConnectorConfigResponse,
            lambda: self._herder.patch_connector_config(request.name, patch, request.etag),
            answer,
        )

    @mapped
    @settled
    def GetConnectorConfig(
        self, request: pb.GetConnectorConfigRequest, context: grpc.ServicerContext
    ) -> pb.GetConnectorConfigResponse:
        request = _named(request)
        return pb.GetConnectorConfigResponse(config=self._herder.connector_config(request.name))

    @mapped
    @forwardable(pb.DeleteConnectorResponse)
    def DeleteConnector(
        self, request: pb.DeleteConnectorRequest, context: grpc.ServicerContext
    ) -> pb.DeleteConnectorResponse:
        request = _named(request)

        return self._requests.run(
            "DeleteConnector",
            request,
            pb.DeleteConnectorResponse,
            lambda: self._herder.delete_connector(request.name, request.etag),
            lambda _: pb.DeleteConnectorResponse(),
        )

    @mapped
    @settled
    def GetConnectorStatus(
        self, request: pb.GetConnectorStatusRequest, context: grpc.ServicerContext
    ) -> pb.GetConnectorStatusResponse:
        request = _named(request)
        status = self._herder.connector_status(request.name)
        return pb.GetConnectorStatusResponse(status=convert.connector_status_to_pb(status))

    @mapped
    @settled
    def GetTaskStatus(
        self, request: pb.GetTaskStatusRequest, context: grpc.ServicerContext
    ) -> pb.GetTaskStatusResponse:
        request = _named(request)
        task = self._herder.task_status(TaskId(request.name, request.task_id))
        return pb.GetTaskStatusResponse(task=convert.task_status_to_pb(task))

    @mapped
    @settled
    def ListTasks(
        self, request: pb.ListTasksRequest, context: grpc.ServicerContext
    ) -> pb.ListTasksResponse:
        request = _named(request)
        tasks = self._herder.task_configs(request.name)
        return pb.ListTasksResponse(tasks=[convert.task_info_to_pb(task) for task in tasks])

    @mapped
    @forwardable(pb.PauseConnectorResponse)
    def PauseConnector(
        self, request: pb.PauseConnectorRequest, context: grpc.ServicerContext
    ) -> pb.PauseConnectorResponse:
        request = _named(request)

        return self._requests.run(
            "PauseConnector",
            request,
            pb.PauseConnectorResponse,
            lambda: self._herder.pause_connector(request.name, request.etag),
            lambda etag: pb.PauseConnectorResponse(etag=etag),
        )

    @mapped
    @forwardable(pb.ResumeConnectorResponse)
    def ResumeConnector(
        self, request: pb.ResumeConnectorRequest, context: grpc.ServicerContext
    ) -> pb.ResumeConnectorResponse:
        request = _named(request)

        return self._requests.run(
            "ResumeConnector",
            request,
            pb.ResumeConnectorResponse,
            lambda: self._herder.resume_connector(request.name, request.etag),
            lambda etag: pb.ResumeConnectorResponse(etag=etag),
        )

    @mapped
    @forwardable(pb.StopConnectorResponse)
    def StopConnector(
        self, request: pb.StopConnectorRequest, context: grpc.ServicerContext
    ) -> pb.StopConnectorResponse:
        request = _named(request)

        return self._requests.run(
            "StopConnector",
            request,
            pb.StopConnectorResponse,
            lambda: self._herder.stop_connector(request.name, request.etag),
            lambda etag: pb.StopConnectorResponse(etag=etag),
        )

    @mapped
    @forwardable(pb.RestartConnectorResponse)
    @settled
    def RestartConnector(
        self, request: pb.RestartConnectorRequest, context: grpc.ServicerContext
    ) -> pb.RestartConnectorResponse:
        request = _named(request)

        def answer(status: ConnectorStatus | None) -> pb.RestartConnectorResponse:
            response = pb.RestartConnectorResponse()
            if status is not None:
                response.status.CopyFrom(convert.connector_status_to_pb(status))
            return response

        return self._requests.run(
            "RestartConnector",
            request,
            pb.RestartConnectorResponse,
            lambda: self._herder.restart_connector(
                RestartRequest(request.name, request.include_tasks, request.only_failed)
            ),
            answer,
        )

    @mapped
    @forwardable(pb.RestartTaskResponse)
    @settled
    def RestartTask(
        self, request: pb.RestartTaskRequest, context: grpc.ServicerContext
    ) -> pb.RestartTaskResponse:
        request = _named(request)

        return self._requests.run(
            "RestartTask",
            request,
            pb.RestartTaskResponse,
            lambda: self._herder.restart_task(TaskId(request.name, request.task_id)),
            lambda _: pb.RestartTaskResponse(),
        )

    @mapped
    @settled
    def GetOffsets(
        self, request: pb.GetOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.GetOffsetsResponse:
        request = _named(request)
        offsets = self._herder.connector_offsets(request.name)
        return pb.GetOffsetsResponse(
            offsets=[convert.connector_offset_to_pb(offset) for offset in offsets]
        )

    @mapped
    @forwardable(pb.AlterOffsetsResponse)
    def AlterOffsets(
        self, request: pb.AlterOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.AlterOffsetsResponse:
        request = _named(request)

        def act() -> OffsetsChange:
            offsets = convert.connector_offsets_from_pb(request.offsets, "offsets")
            time_ms = convert.optional_record_time_from_pb(request, "all_partitions_record_time")
            return self._herder.alter_offsets(request.name, offsets, time_ms, request.etag)

        return self._requests.run(
            "AlterOffsets",
            request,
            pb.AlterOffsetsResponse,
            act,
            lambda change: pb.AlterOffsetsResponse(
                message=change.message,
                resolved_offsets=[convert.connector_offset_to_pb(o) for o in change.resolved],
                etag=change.etag,
            ),
        )

    @mapped
    @forwardable(pb.ResetOffsetsResponse)
    def ResetOffsets(
        self, request: pb.ResetOffsetsRequest, context: grpc.ServicerContext
    ) -> pb.ResetOffsetsResponse:
        request = _named(request)

        return self._requests.run(
            "ResetOffsets",
            request,
            pb.ResetOffsetsResponse,
            lambda: self._herder.reset_offsets(request.name, request.etag),
            lambda change: pb.ResetOffsetsResponse(message=change.message, etag=change.etag),
        )

    @mapped
    def ValidateConfig(
        self, request: pb.ValidateConfigRequest, context: grpc.ServicerContext
    ) -> pb.ValidateConfigResponse:
        infos = self._herder.validate_config(dict(request.config), request.plugin or None)
        return convert.config_infos_to_pb(infos)

    @mapped
    def ListPlugins(
        self, request: pb.ListPluginsRequest, context: grpc.ServicerContext
    ) -> pb.ListPluginsResponse:
        plugins = self._herder.plugins(
            request.include_config_definitions, request.all_plugin_types
        )
        return pb.ListPluginsResponse(plugins=[convert.plugin_to_pb(p) for p in plugins])

    @mapped
    def GetPluginConfig(
        self, request: pb.GetPluginConfigRequest, context: grpc.ServicerContext
    ) -> pb.GetPluginConfigResponse:
        plugin = self._herder.plugin_config(request.name)
        return pb.GetPluginConfigResponse(plugin=convert.plugin_to_pb(plugin))

    @mapped_stream
    @settled
    def WatchConnectorStatus(
        self, request: pb.WatchConnectorStatusRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.WatchConnectorStatusResponse]:
        request = _named(request)
        for status in self._herder.watch_status(request.name, context.is_active):
            if status is None:
                yield pb.WatchConnectorStatusResponse(deleted=True)
                return
            yield pb.WatchConnectorStatusResponse(status=convert.connector_status_to_pb(status))

    @mapped
    @settled
    def GetClusterInfo(
        self, request: pb.GetClusterInfoRequest, context: grpc.ServicerContext
    ) -> pb.GetClusterInfoResponse:
        return convert.cluster_info_to_pb(self._herder.cluster_info())

    # loggers (KIP-495, KIP-976)

    @mapped
    @settled
    def ListLoggers(
        self, request: pb.ListLoggersRequest, context: grpc.ServicerContext
    ) -> pb.ListLoggersResponse:
        levels = self._herder.loggers()
        return pb.ListLoggersResponse(
            loggers=[convert.logger_to_pb(name, level) for name, level in levels.items()]
        )

    @mapped
    @settled
    def GetLogger(
        self, request: pb.GetLoggerRequest, context: grpc.ServicerContext
    ) -> pb.GetLoggerResponse:
        name = parse_logger_name(request.name)
        level = self._herder.logger_level(name)
        return pb.GetLoggerResponse(logger=convert.logger_to_pb(name, level))

    @mapped
    @forwardable(pb.SetLogLevelResponse)
    def SetLogLevel(
        self, request: pb.SetLogLevelRequest, context: grpc.ServicerContext
    ) -> pb.SetLogLevelResponse:
        """A WORKER level is set here (never forwarded); a CLUSTER one is written by the
        leader (a follower's herder raises NotLeaderError: forwarded)."""
        namespace = parse_logger_name(request.name)
        level = parse_level(request.level)
        if convert.log_level_scope_from_pb(request.scope) is LogLevelScope.CLUSTER:
            self._herder.set_cluster_log_level(namespace, level)
            return pb.SetLogLevelResponse()
        changed = self._herder.set_worker_log_level(namespace, level)
        return pb.SetLogLevelResponse(changed_loggers=changed)

    # topic tracking (KIP-558)

    @mapped
    @settled
    def GetConnectorTopics(
        self, request: pb.GetConnectorTopicsRequest, context: grpc.ServicerContext
    ) -> pb.GetConnectorTopicsResponse:
        request = _named(request)
        return pb.GetConnectorTopicsResponse(topics=self._herder.connector_topics(request.name))

    @mapped
    @forwardable(pb.ResetConnectorTopicsResponse)
    def ResetConnectorTopics(
        self, request: pb.ResetConnectorTopicsRequest, context: grpc.ServicerContext
    ) -> pb.ResetConnectorTopicsResponse:
        request = _named(request)
        self._herder.reset_connector_topics(request.name)
        return pb.ResetConnectorTopicsResponse()

    # ---- Pipeline preview ----
    @mapped
    def PreviewPipeline(
        self, request: pb.PreviewPipelineRequest, context: grpc.ServicerContext
    ) -> pb.PreviewPipelineResponse:
        preview = self._herder.preview_pipeline(preview_convert.request_from_pb(request))
        return preview_convert.preview_to_pb(preview)
