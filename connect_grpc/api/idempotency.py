"""Replays of mutations carrying a ``request_id``: automation may retry a call whose answer
it lost, and gets the first answer back instead of a second effect (or a spurious error
such as ALREADY_EXISTS on a retried create).

An id names one request (AIP-155): it is bound to the RPC and to the request's payload
(normalised, without the id). The same id with another payload or another RPC is the
caller's mistake, and is rejected rather than answered with the first request's answer.
Only successful answers are remembered; a failed call changed nothing and may be retried.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import Message

from connect_grpc.errors import InvalidArgumentError

M = TypeVar("M", bound=Message)


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


class RequestLog:
    """Remembers the answers to the last ``capacity`` request ids for ``ttl_seconds``."""

    def __init__(self, capacity: int = 10_000, ttl_seconds: float = 600.0) -> None:
        self._capacity = capacity
        self._ttl = ttl_seconds
        self._answers: OrderedDict[str, _Answer] = OrderedDict()
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Lock] = {}

    def run(
        self, method: str, request: Message, response_type: type[M], call: Callable[[], M]
    ) -> M:
        """Runs ``call`` once per request id; replays its answer to the same request.

        ``request`` must already be normalised (e.g. its connector name trimmed), so that
        retries that differ only in spelling count as the same request.

        Raises:
            InvalidArgumentError: the id was used for another request within the TTL.
        """
        request_id: str = getattr(request, "request_id", "")
        if not request_id:
            return call()
        asked = fingerprint(method, request)
        with self._lock:
            id_lock = self._in_flight.setdefault(request_id, threading.Lock())
        with id_lock:
            answer = self._lookup(request_id)
            if answer is not None:
                if answer.fingerprint != asked:
                    raise InvalidArgumentError.for_field(
                        "request_id",
                        f"request_id {request_id!r} was already used for a different request "
                        f"in the last {self._ttl:.0f} s; a new request needs a new id",
                    )
                return response_type.FromString(answer.payload)
            try:
                response = call()
            except BaseException:
                with self._lock:
                    if request_id not in self._answers:
                        self._in_flight.pop(request_id, None)
                raise
            payload = response.SerializeToString()
            self._remember(request_id, _Answer(time.monotonic(), asked, payload))
            return response

    def _lookup(self, request_id: str) -> _Answer | None:
        with self._lock:
            answer = self._answers.get(request_id)
            if answer is None:
                return None
            if time.monotonic() - answer.stored_at > self._ttl:
                del self._answers[request_id]
                return None
            return answer

    def _remember(self, request_id: str, answer: _Answer) -> None:
        with self._lock:
            self._answers[request_id] = answer
            self._answers.move_to_end(request_id)
            while len(self._answers) > self._capacity:
                oldest, _ = self._answers.popitem(last=False)
                self._in_flight.pop(oldest, None)
