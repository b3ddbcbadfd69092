"""A typed Python client of ``connect.v1.ConnectService``.

Every RPC has one method here (a unit test checks that none is missing and none is extra).
Methods take and return the domain types of :mod:`connect_grpc.kernel.domain` and raise the
domain exceptions of :mod:`connect_grpc.kernel.errors`, read back from the server's rich gRPC
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

The client is one class put together from the groups of RPCs in this package's private
modules: the channel, the lifecycle and the unary call every RPC goes through
(``_channel``); a connector's config, status, tasks, target state and restarts
(``_connectors``); its offsets and topics (``_offsets``); the plugins, the cluster, the
loggers and the pipeline preview (``_cluster``). Import everything from here.
"""

from __future__ import annotations

from connect_grpc.client._cluster import ClusterCalls
from connect_grpc.client._connectors import ConnectorCalls
from connect_grpc.client._offsets import OffsetCalls
from connect_grpc.client.connection import ConnectionSettings, TlsOptions
from connect_grpc.client.convert import ConnectorListing

# The types of the client's signatures stay importable from here, as before the client was
# a package (``__all__`` names the client's own API).
from connect_grpc.kernel.domain import ClusterInfo as ClusterInfo
from connect_grpc.kernel.domain import ConfigInfos as ConfigInfos
from connect_grpc.kernel.domain import ConnectorInfo as ConnectorInfo
from connect_grpc.kernel.domain import ConnectorOffset as ConnectorOffset
from connect_grpc.kernel.domain import ConnectorStatus as ConnectorStatus
from connect_grpc.kernel.domain import CreateResult as CreateResult
from connect_grpc.kernel.domain import OffsetsChange as OffsetsChange
from connect_grpc.kernel.domain import PluginDesc as PluginDesc
from connect_grpc.kernel.domain import PutConfigResult as PutConfigResult
from connect_grpc.kernel.domain import TargetState as TargetState
from connect_grpc.kernel.domain import TaskInfo as TaskInfo
from connect_grpc.kernel.domain import TaskStatus as TaskStatus
from connect_grpc.logs.level_model import LoggerLevel as LoggerLevel
from connect_grpc.logs.level_model import LogLevelScope as LogLevelScope
from connect_grpc.pipeline.preview_model import PipelinePreview as PipelinePreview
from connect_grpc.pipeline.preview_model import PreviewRequest as PreviewRequest
from connect_grpc.pipeline.preview_model import SampleRecord as SampleRecord
from connect_grpc.pipeline.preview_model import TopicTail as TopicTail

__all__ = ["ConnectClient", "ConnectionSettings", "ConnectorListing", "TlsOptions"]


class ConnectClient(ConnectorCalls, OffsetCalls, ClusterCalls):
    """A client of one worker.

    Every method raises the domain exception of the gRPC status it gets back (see
    ``client.convert.error_from_status``). Besides those each method lists, any call may raise
    :class:`~connect_grpc.kernel.errors.InvalidArgumentError` for a bad connector name (empty,
    control characters, longer than 255 characters) or a ``request_id`` reused with another
    request,
    :class:`~connect_grpc.kernel.errors.UnavailableError` (with ``retry_after_seconds``) when the
    worker cannot answer in time (Kafka unreachable, a busy connector), and a plain
    :class:`~connect_grpc.kernel.errors.ConnectError` for INTERNAL and other codes.

    A worker that authenticates its callers answers UNAUTHENTICATED
    (:class:`~connect_grpc.kernel.errors.UnauthenticatedError`) to a call without a valid token or
    client certificate, and PERMISSION_DENIED
    (:class:`~connect_grpc.kernel.errors.PermissionDeniedError`) to a call the caller's role does
    not allow (a viewer's mutation); neither changes anything.

    When the client made the channel from settings and a call fails the way a plaintext
    channel fails at a TLS listener (or a TLS channel at a plaintext one), the
    UnavailableError's message ends with a hint to connect with (or without) TLS.

    Args:
        target: A ``host:port`` address (a plaintext channel is created and closed with the
            client), :class:`~connect_grpc.client.connection.ConnectionSettings` (address, TLS,
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
