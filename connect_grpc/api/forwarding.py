"""Forwarding of mutations from a follower to the cluster's leader, at the gRPC layer.

Kafka Connect forwards at its REST layer: the herder throws ``NotLeaderException`` and the
REST resource re-sends the request to the leader's URL. We do the same one layer down: the
herder raises :class:`~connect_grpc.errors.NotLeaderError`, and :func:`forwardable` (applied
under ``@mapped`` on each mutating RPC) re-issues the *same request message* to the leader
through a :class:`Forwarder`, then answers the caller with the leader's answer, unchanged.

On a worker that does not lead, the eight writes only the leader carries out never reach
the servicer: :class:`LeaderWritesRelay`, a server interceptor, hands their bytes to the
same :class:`Forwarder` and answers with the leader's bytes, so the leader alone parses and
judges them. ``forwardable`` still covers the rest: the plain restarts (sent to the worker
that runs the instance) and a write that reached the servicer just as leadership moved.

Rules, as the distributed-mode issue states them:

* **One hop.** A forwarded call carries ``x-connect-forwarded-by: <worker id>``. A call that
  carries it and meets ``NotLeaderError`` is not forwarded again: ``mapped`` answers it
  UNAVAILABLE with ErrorInfo ``NOT_LEADER``, and the *original* worker retries.
* **Retry until the caller's deadline.** The original worker retries, with back-off, while
  the target says ``NOT_LEADER`` or cannot be reached, asking ``leader_lookup`` for the
  current leader before each retry. When the deadline is near it answers UNAVAILABLE with
  ErrorInfo ``LEADER_UNAVAILABLE`` and a RetryInfo: the caller never sees "not the leader".
* **This worker may become the leader meanwhile.** A worker just elected, still taking
  office (or one re-elected after an outage), names itself as leader while it cannot yet
  write: the retries go on until ``serves_itself`` says it carries out the leader's writes
  now, and then the call is served here (:class:`ServeHere`), not held to its deadline.
* **The leader's answer is final.** Any other status (INVALID_ARGUMENT with its BadRequest,
  NOT_FOUND, ALREADY_EXISTS, an UNAVAILABLE that carries a reason, …) reaches the caller
  with the same code, message and ``google.rpc`` details.

* **Read-your-writes.** The leader's answer to a forwarded call carries, in trailing
  metadata ``x-connect-config-position``, how far its view of the config topic had got
  after the write. The forwarding worker answers at once and remembers that position;
  whatever it is asked next that reads its own view (every RPC decorated with
  :func:`settled`: the reads, and the plain restarts, which the worker running the
  instance carries out) first waits until its view has got that far. So a read sent to
  it right after sees the write, and a write pays for the wait only when a read actually
  follows it before the worker's tail caught up.

Idempotency (``request_id``) applies on the leader only: the follower's ``RequestLog.run``
stores nothing for a call that raised (``NotLeaderError`` included), and the forwarded
message still carries its ``request_id``, so the leader's request log decides whether the
request is new or a replay.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import grpc
import structlog
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_grpc import deadline
from connect_grpc.api.caller import current_caller
from connect_grpc.api.errors import abort
from connect_grpc.api.tls import PeerCredentials
from connect_grpc.errors import NotLeaderError, UnavailableError
from connect_grpc.security.roles import NO_CREDENTIAL
from connect_grpc.security.session_key import (
    SESSION_KEY_UNKNOWN,
    NoSessionKeyError,
    RequestSigner,
    SignedCall,
)

log = structlog.get_logger(__name__)

#: Metadata key marking a call as forwarded; its value is the forwarding worker's id.
FORWARDED_BY = "x-connect-forwarded-by"
#: Trailing metadata of a forwarded call's answer: the leader's config-topic position.
CONFIG_POSITION = "x-connect-config-position"
#: The gRPC service every forwarded method belongs to (the proto's ``package`` + service).
SERVICE = "connect.v1.ConnectService"
#: The ErrorInfo reason of a forward that found no leader before the caller's deadline.
LEADER_UNAVAILABLE = "LEADER_UNAVAILABLE"
#: A forward is not attempted with less time than this left: it could not complete.
MIN_ATTEMPT_S = 0.01

#: Channel options for worker-to-worker channels: a restarted leader at the same address is
#: reached again within about a second (gRPC's default reconnect back-off grows to 2 min).
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)

M = TypeVar("M", bound=Message)
F = TypeVar("F", bound=Callable[..., Any])

#: Who leads now, as ``(worker id, advertised address)``; None while unknown or moving.
LeaderLookup = Callable[[], tuple[str, str] | None]


@dataclass(frozen=True, slots=True)
class _Call:
    """A method and how its messages cross the wire (None: as bytes, untouched)."""

    method: str
    serializer: Callable[[Any], bytes] | None
    deserializer: Callable[[bytes], Any] | None


class ChannelPool:
    """One long-lived channel per worker address, created on first use, closed once.

    With ``credentials`` (a TLS listener) the channels use TLS; when the certificate files
    change, the next call to an address gets a new channel (the old one is closed with the
    pool, so that calls still on it finish).
    """

    def __init__(
        self,
        options: Sequence[tuple[str, Any]] = CHANNEL_OPTIONS,
        credentials: PeerCredentials | None = None,
    ) -> None:
        self._options = list(options)
        self._credentials = credentials
        self._channels: dict[str, tuple[int, grpc.Channel]] = {}
        self._retired: list[grpc.Channel] = []
        self._callables: dict[tuple[str, _Call], grpc.UnaryUnaryMultiCallable[Any, Any]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def get(self, address: str) -> grpc.Channel | None:
        """The channel to ``address``; None once the pool is closed."""
        version, credentials = (
            (0, None) if self._credentials is None else self._credentials.current()
        )
        with self._lock:
            if self._closed:
                return None
            known = self._channels.get(address)
            if known is not None and known[0] == version:
                return known[1]
            if known is not None:
                self._retired.append(known[1])
                self._callables = {k: v for k, v in self._callables.items() if k[0] != address}
            channel = (
                grpc.insecure_channel(address, options=self._options)
                if credentials is None
                else grpc.secure_channel(address, credentials, options=self._options)
            )
            self._channels[address] = (version, channel)
            return channel

    def callable(self, address: str, call: _Call) -> grpc.UnaryUnaryMultiCallable[Any, Any] | None:
        """The multi-callable of ``call`` on the channel to ``address``, built once (building
        one per call costs about as much as a small call); None once the pool is closed."""
        key = (address, call)
        channel = self.get(address)
        if channel is None:
            return None
        stub = self._callables.get(key)
        if stub is not None:
            return stub
        stub = channel.unary_unary(
            call.method,
            request_serializer=call.serializer,
            response_deserializer=call.deserializer,
        )
        with self._lock:
            if self._closed:
                return None
            return self._callables.setdefault(key, stub)

    def close(self) -> None:
        """Closes every channel. Idempotent."""
        with self._lock:
            self._closed = True
            self._callables.clear()
            channels = [channel for _, channel in self._channels.values()] + self._retired
            self._channels, self._retired = {}, []
        for channel in channels:
            channel.close()


class ConfigView(Protocol):
    """A worker's view of the config topic, for read-your-writes after a forward."""

    def config_position(self) -> int: ...

    def wait_for_config_position(self, position: int, timeout: float) -> None: ...


class LeaderUnavailableError(UnavailableError):
    """No leader accepted a forwarded write before the caller's deadline: retry the call.

    It replaces the leader's own "not the leader" answer, which a caller must never see.
    """

    reason = LEADER_UNAVAILABLE


class ServeHere(Exception):  # an outcome, not a failure
    """This worker carries out the leader's writes now (it was elected while the call
    waited for a leader): the call is to be served here, not forwarded."""


class LeaderAnswered(Exception):  # an outcome to pass on, not a failure of ours
    """The leader answered the forwarded call with an error status, to pass on unchanged."""

    def __init__(self, status: grpc.Status) -> None:
        super().__init__(status.details)
        self.status = status


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between forwarding attempts: ``initial_s`` doubling up to ``max_s``."""

    initial_s: float = 0.05
    max_s: float = 1.0

    def next(self, current: float) -> float:
        return min(self.max_s, current * 2)


@dataclass(frozen=True, slots=True)
class _Target:
    leader_id: str
    address: str


class Forwarder:
    """Re-issues calls to the leader over one long-lived channel per leader address.

    Thread-safe: every gRPC handler thread of the worker shares one instance. Channels are
    created on first use of an address and closed once, by :meth:`close`.
    """

    def __init__(
        self,
        worker_id: str,
        leader_lookup: LeaderLookup,
        *,
        backoff: Backoff | None = None,
        channel_options: Sequence[tuple[str, Any]] = CHANNEL_OPTIONS,
        view: ConfigView | None = None,
        signer: RequestSigner | None = None,
        credentials: PeerCredentials | None = None,
        serves_itself: Callable[[], bool] = lambda: False,
    ) -> None:
        """``view`` (this worker's config topic view) makes the answer to a forwarded
        write wait until this worker has read that write. ``signer`` signs each forwarded
        call with the cluster's session key on behalf of the original caller (whom the
        receiving worker then authorises); ``credentials``: TLS to the other workers.
        ``serves_itself``: whether this worker carries out the leader's writes now (asked
        between retries, so that a call waiting for a leader is served by this worker as
        soon as it is one)."""
        self.view = view
        self._serves_itself = serves_itself
        self._acknowledged = 0
        self._acknowledged_lock = threading.Lock()
        self._worker_id = worker_id
        self._leader_lookup = leader_lookup
        self._backoff = backoff or Backoff()
        self._signer = signer
        self._channels = ChannelPool(channel_options, credentials)

    def forward(
        self,
        method: str,
        request: Message,
        response_type: type[M],
        error: NotLeaderError,
        is_active: Callable[[], bool] = lambda: True,
    ) -> M:
        """Sends ``request`` to the leader ``error`` names (or, later, the one
        ``leader_lookup`` names) and returns its response, retrying while no leader takes
        it, until the caller's deadline (the ambient :mod:`connect_grpc.deadline` scope).

        Args:
            method: the full method name, e.g. ``/connect.v1.ConnectService/CreateConnector``.
            request: the request as the caller sent it (with its ``request_id``).
            response_type: the RPC's response message class.
            error: what this worker's herder raised; names the first target, if known.
            is_active: False once the caller went away; stops the retries early.

        Raises:
            LeaderAnswered: the leader answered with an error status (final).
            LeaderUnavailableError: no leader took the call in time.
            ServeHere: this worker leads now; serve the call here.
        """
        target = _Target(error.leader_id, error.leader_address) if error.leader_address else None
        # serialized once: the bytes sent are the bytes signed
        response: M = self._forward(
            method, request.SerializeToString(), None, response_type.FromString, target,
            is_active,
        )
        return response

    def relay(self, method: str, request: bytes, is_active: Callable[[], bool]) -> bytes:
        """Like :meth:`forward` for a request still in its wire form, answered in wire form:
        the leader ``leader_lookup`` names first, then whoever it names on each retry."""
        answer: bytes = self._forward(method, request, None, None, self._lookup(), is_active)
        return answer

    def _forward(
        self,
        method: str,
        request: Any,
        serializer: Callable[[Any], bytes] | None,
        deserializer: Callable[[bytes], Any] | None,
        target: _Target | None,
        is_active: Callable[[], bool],
    ) -> Any:
        give_up_at = time.monotonic() + deadline.remaining()
        call = _Call(method, serializer, deserializer)
        delay = self._backoff.initial_s
        attempt = 0
        while True:
            if target is not None:
                attempt += 1
                response = self._attempt(call, request, target, give_up_at)
                if response is not None:
                    return response
            wait = min(delay, give_up_at - time.monotonic())
            if wait <= 0 or not is_active():
                raise self._gave_up(method, target, attempt)
            time.sleep(wait)
            if self._serves_itself():
                raise ServeHere
            delay = self._backoff.next(delay)
            target = self._lookup()

    def close(self) -> None:
        """Closes every channel. Idempotent; a forward after it finds no leader."""
        self._channels.close()

    def settle(self) -> None:
        """Waits, within the caller's deadline, until this worker's view of the config topic
        shows every write it acknowledged after forwarding it (read-your-writes).

        Raises:
            UnavailableError: the view did not get that far in time; the call may be retried.
        """
        with self._acknowledged_lock:
            position = self._acknowledged
        if self.view is None or position <= self.view.config_position():
            return
        try:
            self.view.wait_for_config_position(position, deadline.remaining())
        except UnavailableError:
            raise UnavailableError(
                f"this worker has not yet read up to position {position} of the config topic, "
                "where a write it acknowledged is; retry",
                retry_after_seconds=0.1,
            ) from None

    def _lookup(self) -> _Target | None:
        leader = self._leader_lookup()
        # this worker named as leader: it refused the write itself, so it is not one now
        if leader is None or not leader[1] or leader[0] == self._worker_id:
            return None
        return _Target(*leader)

    def _attempt(
        self, call: _Call, request: Any, target: _Target, give_up_at: float
    ) -> Any | None:
        """One call to ``target``: its response, or None when another attempt may succeed.

        Raises:
            LeaderAnswered: a final error status.
        """
        timeout = give_up_at - time.monotonic()
        if timeout < MIN_ATTEMPT_S:
            return None
        stub = self._channels.callable(target.address, call)
        if stub is None:
            return None
        try:
            metadata = self._metadata(call.method, request)
        except NoSessionKeyError:
            log.info("forward_waiting_for_session_key", rpc=call.method)
            return None
        try:
            response, answered = stub.with_call(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as exc:
            status = _status_of(exc)
            if _retryable(status):
                log.info(
                    "forward_retrying",
                    rpc=call.method,
                    leader_id=target.leader_id,
                    leader_address=target.address,
                    code=status.code.name,
                )
                return None
            raise LeaderAnswered(status) from None
        self._note_acknowledged(_config_position(answered))
        return response

    def _metadata(self, method: str, body: bytes) -> tuple[tuple[str, str | bytes], ...]:
        """The forwarded mark, signed for the credential of the caller being served (none
        known: no credential, which a worker that authenticates its callers refuses).
        Raises NoSessionKeyError before this worker has read the cluster's session key."""
        marked: tuple[tuple[str, str | bytes], ...] = ((FORWARDED_BY, self._worker_id),)
        if self._signer is None:
            return marked
        caller = current_caller()
        credential = caller.credential if caller is not None else NO_CREDENTIAL
        signed = SignedCall(method, body, self._worker_id, credential)
        return marked + self._signer.metadata(signed)

    def _note_acknowledged(self, position: int | None) -> None:
        """Remembers how far the view must have got before this worker answers a read."""
        if position is None:
            return
        with self._acknowledged_lock:
            self._acknowledged = max(self._acknowledged, position)

    def _gave_up(
        self, method: str, target: _Target | None, attempts: int
    ) -> LeaderUnavailableError:
        log.warning(
            "forward_gave_up",
            rpc=method,
            attempts=attempts,
            leader_id=target.leader_id if target else "",
        )
        where = f"leader {target.leader_id!r} did not accept it" if target else "no leader known"
        return LeaderUnavailableError(
            f"the write could not reach the cluster's leader before the deadline ({where}; "
            f"{attempts} attempt(s)); retry",
            retry_after_seconds=self._backoff.max_s,
        )


@dataclass(frozen=True, slots=True)
class _BareStatus(grpc.Status):
    """A status with no ``google.rpc`` details (transport failures, deadlines)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, bytes], ...]


def _config_position(answered: grpc.Call) -> int | None:
    for key, value in answered.trailing_metadata() or ():
        if key == CONFIG_POSITION:
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _status_of(exc: grpc.RpcError) -> grpc.Status:
    """The status the target answered: its rich status (code, message, details) when it
    sent one, else the bare code and message (a connection failure, a deadline)."""
    call: grpc.Call = exc  # type: ignore[assignment]  # a unary call's RpcError is its Call
    try:
        rich = rpc_status.from_call(call)
    except ValueError:  # details that disagree with the code: keep the code
        rich = None
    if rich is not None:
        status: grpc.Status = rpc_status.to_status(rich)
        return status
    return _BareStatus(call.code(), call.details() or "", ())


def _reason(status: grpc.Status) -> str | None:
    """The ErrorInfo reason of a rich status, None when it carries none."""
    for key, value in status.trailing_metadata or ():
        if key != "grpc-status-details-bin":
            continue
        rich = status_pb2.Status.FromString(value)
        for detail in rich.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return str(info.reason)
    return None


def _retryable(status: grpc.Status) -> bool:
    """True for "try the leader again": the target is not the leader (one hop ended
    there), it could not be reached (UNAVAILABLE from the transport, no details), or it
    has not read the session key this worker signed with (or this worker the new one)."""
    reason = _reason(status)
    if status.code == grpc.StatusCode.UNAUTHENTICATED:
        return reason == SESSION_KEY_UNKNOWN
    if status.code != grpc.StatusCode.UNAVAILABLE:
        return False
    return reason is None or reason == NotLeaderError.reason


def forwarded_by(context: grpc.ServicerContext) -> str | None:
    """The id of the worker that forwarded this call to us; None for a caller's own call."""
    for key, value in context.invocation_metadata() or ():
        if key == FORWARDED_BY:
            return str(value)
    return None


def _answer_with(context: grpc.ServicerContext, status: grpc.Status) -> None:
    """Makes the call end with ``status`` without raising, so that ``mapped`` (around us)
    neither turns it into INTERNAL nor replaces it: aborting raises, and ``mapped`` would
    catch that as an unexpected exception."""
    context.set_trailing_metadata(status.trailing_metadata)
    context.set_code(status.code)
    context.set_details(status.details)


def forwardable(response_type: type[M]) -> Callable[[F], F]:
    """Decorates a mutating servicer method (under ``@mapped``) so that a ``NotLeaderError``
    it raises forwards the call to the leader through ``self.forwarder``.

    The servicer needs an attribute ``forwarder: Forwarder | None``; None (standalone mode)
    or a missing attribute lets the error through, as does a call that was forwarded to us
    already (one hop: ``mapped`` answers it UNAVAILABLE / NOT_LEADER).
    """

    def decorate(method: F) -> F:
        full_name = f"/{SERVICE}/{method.__name__}"

        @functools.wraps(method)
        def wrapper(self: Any, request: Message, context: grpc.ServicerContext) -> Any:
            forwarder: Forwarder | None = getattr(self, "forwarder", None)
            while True:
                try:
                    response = method(self, request, context)
                    break
                except NotLeaderError as exc:
                    if forwarder is None or forwarded_by(context) is not None:
                        raise
                    try:
                        return forwarder.forward(
                            full_name, request, response_type, exc, context.is_active
                        )
                    except ServeHere:
                        continue
                    except LeaderAnswered as answered:
                        _answer_with(context, answered.status)
                        return response_type()
            if forwarder is not None and forwarder.view is not None and forwarded_by(context):
                position = forwarder.view.config_position()
                context.set_trailing_metadata(((CONFIG_POSITION, str(position)),))
            return response

        return wrapper  # type: ignore[return-value]

    return decorate



def settled(method: F) -> F:
    """Decorates an RPC (under ``@mapped`` / ``@mapped_stream``) that answers from this
    worker's view: it first waits until the view shows every write the worker acknowledged
    (``self.forwarder``; nothing to wait for without one, in standalone mode)."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Message, context: grpc.ServicerContext) -> Any:
        forwarder: Forwarder | None = getattr(self, "forwarder", None)
        if forwarder is not None:
            forwarder.settle()
        return method(self, request, context)

    return wrapper  # type: ignore[return-value]


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


class LeaderWritesRelay(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """On a follower, passes the leader's writes to the leader as they came, bytes in and
    bytes out, before the servicer sees them (an interceptor: the generated servicer's
    methods are registered, so no generic handler could come first).

    A forwarded write then costs one gRPC hop and nothing more: the leader parses,
    validates and answers it exactly as a call sent to it directly (the caller cannot tell
    the difference), and this worker does no work the leader will do again. A call that
    was forwarded to us already, and every call while this worker leads, goes on to the
    servicer, whose ``@forwardable`` still covers a leadership lost in between.
    """

    def __init__(self, forwarder: Forwarder, leads: Callable[[], bool]) -> None:
        self._forwarder = forwarder
        self._leads = leads
        self._methods = frozenset(f"/{SERVICE}/{name}" for name in LEADER_WRITES)
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
        try:
            with deadline.scope(context.time_remaining()):
                return self._forwarder.relay(method, request, context.is_active)
        except ServeHere:
            return _serve(served_here, request, context)
        except LeaderAnswered as answered:
            _answer_with(context, answered.status)
            return b""
        except LeaderUnavailableError as exc:
            abort(context, exc)


def _serve(handler: Any, request: bytes, context: grpc.ServicerContext) -> bytes:
    """Serves a relayed call's bytes with the servicer's own handler (this worker was
    elected while the call waited for a leader)."""
    response = handler.unary_unary(handler.request_deserializer(request), context)
    serialized: bytes = handler.response_serializer(response)
    return serialized
