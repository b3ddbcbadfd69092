"""Replays of mutations carrying a ``request_id``: automation may retry a call whose answer
it lost, and gets the first answer back instead of a second effect (or a spurious error
such as ALREADY_EXISTS on a retried create).

An id names one request (AIP-155): it is bound to the RPC and to the request's payload
(normalised, without the id). The same id with another payload or another RPC is the
caller's mistake, and is rejected rather than answered with the first request's answer.
Only successful answers are remembered; a failed call changed nothing and may be retried.

Where answers live: in this process (standalone), or, in distributed mode, in the config
topic through a :class:`SharedAnswers` store (the herder's), so that a retry that reaches
another worker or a new leader after a failover gets the same answer. A herder that
writes a change as one transaction takes the answer into it
(``connect_grpc.kernel.request_answer``), so that change and answer are written together or
not at all; other answers are stored
right after the change. The in-process log stays in front of it: concurrent retries to one
worker wait for the first to finish.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import structlog
from google.protobuf.message import Message

from connect_grpc.kernel import request_answer
from connect_grpc.kernel.errors import ConnectError, InvalidArgumentError

log = structlog.get_logger(__name__)

M = TypeVar("M", bound=Message)
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class _Answer:
    stored_at: float
    fingerprint: bytes
    payload: bytes


def fingerprint(method: str, request: Message) -> bytes:
    """What a request asks for: the RPC and the payload without its ``request_id``."""
    copy = type(request)()
    copy.CopyFrom(request)
    copy.ClearField("request_id")
    return hashlib.sha256(
        method.encode() + b"\0" + copy.SerializeToString(deterministic=True)
    ).digest()


class SharedAnswers(Protocol):
    """Answers kept where every worker reads them (distributed mode: the config topic)."""

    def answer_for(self, request_id: str) -> tuple[float, bytes, bytes] | None:
        """(stored at, as ``time.time()``; fingerprint; serialized answer), or None."""

    def remember_answer(
        self, request_id: str, stored_at: float, fingerprint: bytes, payload: bytes
    ) -> None:
        """Stores an answer (on the leader); raises ConnectError if it could not."""


class RequestLog:
    """Remembers the answers to the last ``capacity`` request ids for ``ttl_seconds``, in
    this process and, when given, in ``shared``."""

    def __init__(
        self,
        capacity: int = 10_000,
        ttl_seconds: float = 600.0,
        shared: SharedAnswers | None = None,
    ) -> None:
        self._capacity = capacity
        self._ttl = ttl_seconds
        self._shared = shared
        self._answers: OrderedDict[str, _Answer] = OrderedDict()
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Lock] = {}

    def run(
        self,
        method: str,
        request: Message,
        response_type: type[M],
        act: Callable[[], R],
        answer: Callable[[R], M],
    ) -> M:
        """Carries out ``act`` once per request id and answers ``answer(result)``; replays
        that answer to the same request.

        ``request`` must already be normalised (e.g. its connector name trimmed), so that
        retries that differ only in spelling count as the same request.

        Raises:
            InvalidArgumentError: the id was used for another request within the TTL.
        """
        request_id: str = getattr(request, "request_id", "")
        if not request_id:
            return answer(act())
        asked = fingerprint(method, request)
        with self._lock:
            id_lock = self._in_flight.setdefault(request_id, threading.Lock())
        with id_lock:
            known = self._lookup(request_id)
            if known is not None:
                if known.fingerprint != asked:
                    raise InvalidArgumentError.for_field(
                        "request_id",
                        f"request_id {request_id!r} was already used for a different request "
                        f"in the last {self._ttl:.0f} s; a new request needs a new id",
                    )
                return response_type.FromString(known.payload)
            pending = request_answer.PendingAnswer(
                request_id, asked, time.time(), lambda result: answer(result).SerializeToString()
            )
            try:
                with request_answer.scope(pending):
                    result = act()
                response = answer(result)
            except BaseException:
                with self._lock:
                    if request_id not in self._answers:
                        self._in_flight.pop(request_id, None)
                raise
            stored = _Answer(pending.stored_at, asked, response.SerializeToString())
            self._remember(request_id, stored)
            if pending.taken is None:  # not written with the change: store it now
                self._share(request_id, stored)
            return response

    def _lookup(self, request_id: str) -> _Answer | None:
        with self._lock:
            answer = self._answers.get(request_id)
            if answer is not None and time.time() - answer.stored_at > self._ttl:
                del self._answers[request_id]
                answer = None
        if answer is None and self._shared is not None:
            stored = self._shared.answer_for(request_id)
            if stored is not None and time.time() - stored[0] <= self._ttl:
                answer = _Answer(*stored)
        return answer

    def _share(self, request_id: str, answer: _Answer) -> None:
        """Stores the answer for the other workers. The request succeeded whatever happens
        here: a failure only narrows the replay to this worker (logged)."""
        if self._shared is None:
            return
        try:
            self._shared.remember_answer(
                request_id, answer.stored_at, answer.fingerprint, answer.payload
            )
        except ConnectError as exc:
            log.warning("request_answer_not_shared", request_id=request_id, error=exc.message)

    def _remember(self, request_id: str, answer: _Answer) -> None:
        with self._lock:
            self._answers[request_id] = answer
            self._answers.move_to_end(request_id)
            while len(self._answers) > self._capacity:
                oldest, _ = self._answers.popitem(last=False)
                self._in_flight.pop(oldest, None)
