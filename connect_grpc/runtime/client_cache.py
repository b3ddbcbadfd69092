"""This process's long-lived Kafka clients: the cache an executor Python worker keeps them in,
a task's own client on the driver, and how an executor Python worker is prepared.

Their Kafka clients live as long as the executor's Python worker (Spark reuses it from one
task to the next, ``spark.python.worker.reuse``): a new idempotent producer costs ≈ 0.5 s
before its first record is acknowledged, a connected one ≈ 10 ms for a batch. One client
per configuration is kept in :data:`CLIENTS`; a client that failed a batch is dropped (and
closed once), so the retry starts from a fresh one, and clients idle for longer than
:data:`CLIENT_IDLE_S` are dropped when the worker is next used.

The cache holds clients of any kind: the producer (``produce.CachedProducer``) and the
consumer (in ``range_reader``) are defined with the producing and the reading they serve,
and handed here as ``kind``; so this module imports neither, and both share one cache.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import structlog

from connect_grpc.kernel.gc_tuning import tune_for_batches

#: Seconds an executor's cached client may go unused before it is dropped.
CLIENT_IDLE_S = 300.0
#: Clients an executor Python worker keeps at most (least recently used dropped first).
MAX_CACHED_CLIENTS = 16


def prepare_executor() -> None:
    """Executor Python workers log (rate-limited client lines) in the worker's format and
    collect garbage in large steps, as the worker does (see ``kernel.gc_tuning``)."""
    import os

    from connect_grpc.logs.output import configure_logging

    tune_for_batches()
    if not structlog.is_configured():
        configure_logging(os.environ.get("CONNECT_LOG_FORMAT", "console"))


class ClientCache:
    """This process's long-lived clients, one per configuration, least recently used first.

    Not thread-safe: an executor Python worker runs one Spark task at a time.
    """

    def __init__(self, idle_s: float = CLIENT_IDLE_S, capacity: int = MAX_CACHED_CLIENTS) -> None:
        self._idle_s = idle_s
        self._capacity = capacity
        self._entries: OrderedDict[tuple[Any, ...], tuple[Any, float]] = OrderedDict()

    def get(self, kind: Callable[[Mapping[str, str]], Any], conf: Mapping[str, str]) -> Any:
        """The cached client of ``kind`` for ``conf``, created on first use."""
        now = time.monotonic()
        self._drop_idle(now)
        key = (kind, *sorted(conf.items()))
        entry = self._entries.pop(key, None)
        client = entry[0] if entry is not None else kind(conf)
        self._entries[key] = (client, now)
        while len(self._entries) > self._capacity:
            _, (oldest, _) = self._entries.popitem(last=False)
            oldest.close()
        return client

    def drop(self, client: Any) -> None:
        """Closes ``client`` and forgets it (after a failed batch)."""
        for key, (cached, _) in list(self._entries.items()):
            if cached is client:
                del self._entries[key]
        client.close()

    def __len__(self) -> int:
        return len(self._entries)

    def _drop_idle(self, now: float) -> None:
        for key, (client, used) in list(self._entries.items()):
            if now - used > self._idle_s:
                del self._entries[key]
                client.close()


#: The clients of this process (an executor Python worker, or the driver in local tests).
CLIENTS = ClientCache()


# ---- driver side: batches too small to pay for a Spark job --------------------------------


class _Closeable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closeable)


class DriverClient(Generic[_C]):
    """One task's own client on the driver, for its small batches.

    Created on first use, kept across batches, dropped (and closed once) after a batch it
    failed, closed by :meth:`close` when the task stops. Used by the task's loop thread only.
    """

    def __init__(self, kind: Callable[[Mapping[str, str]], _C], conf: Mapping[str, str]) -> None:
        self._kind = kind
        self._conf = conf
        self._cached: _C | None = None

    def _client(self) -> _C:
        if self._cached is None:
            self._cached = self._kind(self._conf)
        return self._cached

    def close(self) -> None:
        cached, self._cached = self._cached, None
        if cached is not None:
            cached.close()
