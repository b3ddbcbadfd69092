"""The relay, on a follower, of the writes only the leader carries out: their bytes go to
the leader unparsed, and the leader's bytes come back, so the leader alone parses and
judges them. An unconditional pause or resume without a request id is not relayed: this
worker writes it itself, as Kafka Connect's workers do (decision 0100).

Separate from the forwarding of parsed calls (:func:`~connect_grpc.api.forwarding.forwardable`
under the servicer's methods): the relay runs before the servicer, as a server
interceptor, and both send through the same
:class:`~connect_grpc.api.forwarding.Forwarder`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from connect_grpc.api.errors import abort
from connect_grpc.api.forward_retry import LeaderAnswered, LeaderUnavailableError, ServeHere
from connect_grpc.api.forwarding import FORWARDED_BY, SERVICE, Forwarder, answer_with
from connect_grpc.kernel import deadline
from connect_grpc.v1 import connect_pb2 as pb

#: The writes only the leader carries out, whatever they name: a follower relays them whole.
#: (Plain restarts are not among them: they go to the worker that runs the instance, which
#: only the parsed request tells.)
LEADER_WRITES = (
    "CreateConnector",
    "PutConnectorConfig",
    "PatchConnectorConfig",
    "DeleteConnector",
    "PauseConnector",
    "ResumeConnector",
    "StopConnector",
    "AlterOffsets",
    "ResetOffsets",
    "ResetConnectorTopics",
)

#: Among them, those a follower writes itself when the request carries neither an etag nor
#: a request id (a target state, which Kafka Connect's workers write without the leader);
#: a conditional one, or one to run once per request id, still goes to the leader.
WRITTEN_HERE_UNLESS_CONDITIONAL: dict[str, type[Message]] = {
    "PauseConnector": pb.PauseConnectorRequest,
    "ResumeConnector": pb.ResumeConnectorRequest,
}


class LeaderWritesRelay(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """On a follower, passes the leader's writes to the leader as they came, bytes in and
    bytes out, before the servicer sees them (an interceptor: the generated servicer's
    methods are registered, so no generic handler could come first).

    A forwarded write then costs one gRPC hop and nothing more: the leader parses,
    validates and answers it exactly as a call sent to it directly (the caller cannot tell
    the difference), and this worker does no work the leader will do again. A call that
    was forwarded to us already, every call while this worker leads, and an unconditional
    pause or resume without a request id (``WRITTEN_HERE_UNLESS_CONDITIONAL``: this worker
    writes it, and forwards it after all if its view lacks the connector) go on to the
    servicer, whose ``@forwardable`` still covers a leadership lost in between.
    """

    def __init__(
        self, forwarder: Forwarder, leads: Callable[[], bool], *, writes_here: bool = True
    ) -> None:
        """``writes_here``: whether this worker may write a pause or resume itself (False
        while it authenticates its callers: then the leader's roles judge every write)."""
        self._forwarder = forwarder
        self._leads = leads
        self._methods = frozenset(f"/{SERVICE}/{name}" for name in LEADER_WRITES)
        self._written_here = {
            f"/{SERVICE}/{name}": request_type
            for name, request_type in WRITTEN_HERE_UNLESS_CONDITIONAL.items()
        } if writes_here else {}
        #: Per method, its relaying handler: built on the first call (a relay is on every
        #: forwarded write's path, where each allocation shows in the hop's cost).
        self._relaying: dict[str, Any] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        if not self._relays(handler_call_details):
            return continuation(handler_call_details)
        method = handler_call_details.method
        relaying = self._relaying.get(method)
        if relaying is None:
            # the servicer's own handler, for a call this worker ends up serving: the
            # registered handler of a method never changes once the server runs
            served_here = continuation(handler_call_details)
            relaying = grpc.unary_unary_rpc_method_handler(
                functools.partial(self._relay, method, served_here)
            )
            self._relaying[method] = relaying
        return relaying

    def _relays(self, details: grpc.HandlerCallDetails) -> bool:
        """Whether the call is a leader's write to relay: another worker leads, and it was
        not forwarded to us already."""
        if details.method not in self._methods or self._leads():
            return False
        metadata = details.invocation_metadata or ()
        return not any(key == FORWARDED_BY for key, _ in metadata)

    def _relay(
        self,
        method: str,
        served_here: Any,
        request: bytes,
        context: grpc.ServicerContext,
    ) -> bytes:
        if self._writes_here(method, request):
            return _serve(served_here, request, context)
        try:
            with deadline.scope(context.time_remaining()):
                return self._forwarder.relay(method, request, context.is_active)
        except ServeHere:
            return _serve(served_here, request, context)
        except LeaderAnswered as answered:
            answer_with(context, answered.status)
            return b""
        except LeaderUnavailableError as exc:
            abort(context, exc)

    def _writes_here(self, method: str, request: bytes) -> bool:
        """Whether this worker writes the call itself: a pause or resume with neither an
        etag nor a request id (a request that does not parse goes to the leader, which
        answers it as any malformed request)."""
        request_type = self._written_here.get(method)
        if request_type is None:
            return False
        try:
            parsed: Any = request_type.FromString(request)
        except DecodeError:
            return False
        return not parsed.etag and not parsed.request_id


def _serve(handler: Any, request: bytes, context: grpc.ServicerContext) -> bytes:
    """Serves a relayed call's bytes with the servicer's own handler (this worker was
    elected while the call waited for a leader)."""
    response = handler.unary_unary(handler.request_deserializer(request), context)
    serialized: bytes = handler.response_serializer(response)
    return serialized
