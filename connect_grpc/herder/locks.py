"""Per-connector locks: the mutations of one connector run one at a time, each waiting at
most as long as its caller's deadline allows.

A herder-wide lock held across plugin, Spark or Kafka I/O lets one slow request stall every
other one (reads included); a lock per connector confines the wait to the connector that is
busy. Locks live as long as someone holds or waits for them.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import UnavailableError

#: The retry hint given to a caller that found its connector busy.
BUSY_RETRY_S = 1.0


class _Lock:
    """A lock object that can be weakly referenced (``threading.Lock`` cannot)."""

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


class ConnectorLocks:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: weakref.WeakValueDictionary[str, _Lock] = weakref.WeakValueDictionary()

    def _lock(self, name: str) -> _Lock:
        with self._guard:
            lock = self._locks.get(name)
            if lock is None:
                lock = _Lock()
                self._locks[name] = lock
            return lock

    @contextlib.contextmanager
    def hold(self, name: str, *, bounded: bool = True) -> Iterator[None]:
        """Holds the connector's lock for the block.

        ``bounded`` (API calls): the wait ends with the caller's deadline, in
        UnavailableError. Unbounded (background threads): waits as long as it takes.
        """
        lock = self._lock(name)
        acquired = (
            lock.lock.acquire(timeout=deadline.remaining()) if bounded else lock.lock.acquire()
        )
        if not acquired:
            raise UnavailableError(
                f"Connector {name} is busy with another change (a restart, an offsets change "
                "or a slow plugin); retry the call",
                retry_after_seconds=BUSY_RETRY_S,
            )
        try:
            yield
        finally:
            lock.lock.release()
