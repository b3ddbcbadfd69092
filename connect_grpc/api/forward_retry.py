"""When a forward to the leader is tried again, how long it waits, and how it ends.

The forwarding client (:class:`~connect_grpc.api.forwarding.Forwarder`) retries, with
back-off, while the target is not the leader or cannot be reached, until the caller's
deadline. Here: the back-off, which answers are worth another attempt (a status read back
from the target, rich or bare), the least time left an attempt is worth making, and the
outcomes that end the retries: the leader's final answer, no leader in time, or this
worker leading now. Separate from the client and the relay (:mod:`.leader_relay`), which
both end their calls with these outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.security.session_key import SESSION_KEY_UNKNOWN

#: The ErrorInfo reason of a forward that found no leader before the caller's deadline.
LEADER_UNAVAILABLE = "LEADER_UNAVAILABLE"
#: A forward is not attempted with less time than this left: it could not complete.
MIN_ATTEMPT_S = 0.01


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
class _BareStatus(grpc.Status):
    """A status with no ``google.rpc`` details (transport failures, deadlines)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, bytes], ...]


def status_of(exc: grpc.RpcError) -> grpc.Status:
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


def retryable(status: grpc.Status) -> bool:
    """True for "try the leader again": the target is not the leader (one hop ended
    there), it could not be reached (UNAVAILABLE from the transport, no details), or it
    has not read the session key this worker signed with (or this worker the new one)."""
    reason = _reason(status)
    if status.code == grpc.StatusCode.UNAUTHENTICATED:
        return reason == SESSION_KEY_UNKNOWN
    if status.code != grpc.StatusCode.UNAVAILABLE:
        return False
    return reason is None or reason == NotLeaderError.reason
