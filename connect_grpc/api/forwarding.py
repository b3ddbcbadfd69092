"""Forwarding of mutations from a follower to the cluster's leader, at the gRPC layer.

Kafka Connect forwards at its REST layer: the herder throws ``NotLeaderException`` and the
REST resource re-sends the request to the leader's URL. We do the same one layer down: the
herder raises :class:`~connect_grpc.kernel.errors.NotLeaderError`, and :func:`forwardable` (applied
under ``@mapped`` on each mutating RPC) re-issues the *same request message* to the leader
through a :class:`Forwarder`, then answers the caller with the leader's answer, unchanged.

On a worker that does not lead, the writes only the leader carries out (``LEADER_WRITES``)
never reach the servicer: :class:`~connect_grpc.api.leader_relay.LeaderWritesRelay`, a server
interceptor, hands their bytes to the same :class:`Forwarder` and answers with the leader's
bytes, so the leader alone parses and judges them. ``forwardable`` still covers the rest:
the plain restarts (sent to the worker that runs the instance), a write that reached the
servicer just as leadership moved, and an unconditional pause or resume without a request
id, which the follower writes itself (decision 0100) unless its view lacks the connector.

The rules:

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
  now, and then the call is served here (:class:`~connect_grpc.api.forward_retry.ServeHere`),
  not held to its deadline.
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

This module holds the forwarding client (:class:`Forwarder`) and what the servicer's
methods are decorated with (:func:`forwardable`, :func:`settled`); beside it are the relay
of unparsed writes (:mod:`.leader_relay`), the retry policy and the outcomes of a forward
(:mod:`.forward_retry`), and the channels to the other workers (:mod:`.peer_channels`).
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

from connect_grpc.api.caller import current_caller
from connect_grpc.api.forward_retry import (
    MIN_ATTEMPT_S,
    Backoff,
    LeaderAnswered,
    LeaderUnavailableError,
    ServeHere,
    retryable,
    status_of,
)
from connect_grpc.api.peer_channels import CHANNEL_OPTIONS, ChannelPool, MethodCall
from connect_grpc.api.tls import PeerCredentials
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.security.roles import NO_CREDENTIAL
from connect_grpc.security.session_key import NoSessionKeyError, RequestSigner, SignedCall

log = structlog.get_logger(__name__)

#: Metadata key marking a call as forwarded; its value is the forwarding worker's id.
FORWARDED_BY = "x-connect-forwarded-by"
#: Trailing metadata of a forwarded call's answer: the leader's config-topic position.
CONFIG_POSITION = "x-connect-config-position"
#: The gRPC service every forwarded method belongs to (the proto's ``package`` + service).
SERVICE = "connect.v1.ConnectService"

M = TypeVar("M", bound=Message)
F = TypeVar("F", bound=Callable[..., Any])

#: Who leads now, as ``(worker id, advertised address)``; None while unknown or moving.
LeaderLookup = Callable[[], tuple[str, str] | None]


class ConfigView(Protocol):
    """A worker's view of the config topic, for read-your-writes after a forward."""

    def config_position(self) -> int: ...

    def wait_for_config_position(self, position: int, timeout: float) -> None: ...


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
        it, until the caller's deadline (the ambient :mod:`connect_grpc.kernel.deadline` scope).

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
        call = MethodCall(method, serializer, deserializer)
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
        # once a write was acknowledged the wait decides, not how far the view applied the
        # topic: a record is applied before the herder's listener has acted on it (a cluster
        # log level, say), and a read must see both; the wait returns at once when it has
        if self.view is None or position <= 0:
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
        self, call: MethodCall, request: Any, target: _Target, give_up_at: float
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
            status = status_of(exc)
            if retryable(status):
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


def _config_position(answered: grpc.Call) -> int | None:
    for key, value in answered.trailing_metadata() or ():
        if key == CONFIG_POSITION:
            try:
                return int(value)
            except ValueError:
                return None
    return None


def forwarded_by(context: grpc.ServicerContext) -> str | None:
    """The id of the worker that forwarded this call to us; None for a caller's own call."""
    for key, value in context.invocation_metadata() or ():
        if key == FORWARDED_BY:
            return str(value)
    return None


def answer_with(context: grpc.ServicerContext, status: grpc.Status) -> None:
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
                        answer_with(context, answered.status)
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
