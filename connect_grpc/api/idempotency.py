"""Replays of mutations carrying a ``request_id``: automation may retry a call whose answer
it lost, and gets the first answer back instead of a second effect (or a spurious error
such as ALREADY_EXISTS on a retried create).

Only successful answers are remembered; a failed call changed nothing and may be retried.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


class RequestLog:
    """Remembers the answers to the last ``capacity`` request ids for ``ttl_seconds``."""

    def __init__(self, capacity: int = 10_000, ttl_seconds: float = 600.0) -> None:
        self._capacity = capacity
        self._ttl = ttl_seconds
        self._answers: OrderedDict[tuple[str, str], tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self._in_flight: dict[tuple[str, str], threading.Lock] = {}

    def run(self, method: str, request_id: str, response_type: type[M], call: Callable[[], M]) -> M:
        """Runs ``call`` once per (method, request_id); replays its answer afterwards."""
        if not request_id:
            return call()
        key = (method, request_id)
        with self._lock:
            key_lock = self._in_flight.setdefault(key, threading.Lock())
        with key_lock:
            cached = self._lookup(key)
            if cached is not None:
                return response_type.FromString(cached)
            response = call()
            self._remember(key, response.SerializeToString())
            return response

    def _lookup(self, key: tuple[str, str]) -> bytes | None:
        with self._lock:
            entry = self._answers.get(key)
            if entry is None:
                return None
            stored_at, payload = entry
            if time.monotonic() - stored_at > self._ttl:
                del self._answers[key]
                return None
            return payload

    def _remember(self, key: tuple[str, str], payload: bytes) -> None:
        with self._lock:
            self._answers[key] = (time.monotonic(), payload)
            self._answers.move_to_end(key)
            while len(self._answers) > self._capacity:
                oldest, _ = self._answers.popitem(last=False)
                self._in_flight.pop(oldest, None)
