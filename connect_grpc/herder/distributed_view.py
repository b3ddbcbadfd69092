"""This worker's view of the cluster's topics: the state every part of the DistributedHerder
shares.

The config topic as this worker has read it (:meth:`ClusterView.snapshot`), with the writes
it answered before its own tail read them back (read-your-writes), and what that view names:
the leader, the cluster's inter-worker session keys; and the status topic, where each worker
records its address and the assignment generation it has carried out. The reads, the
mutations, the leader's writer and loop, and the fencing of task generations all read
through this one object, so that none of them reaches into another for the snapshot.

Lock: ``_owed_lock`` guards only the owed config position (a max of two integers). No lock
is held while a read waits for the tail, and that wait is bounded by the caller's deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from connect_grpc.cluster.extension_records import LEADER_KEY, LeaderRecord
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import NotFoundError, UnavailableError
from connect_grpc.security.session_key import KeyRing, SessionKey
from connect_grpc.storage.config_codec import SESSION_KEY_KEY
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.kafka_status import KafkaStatusStore

#: Bound of the leader's own Kafka calls (opening its writer, publishing an assignment).
LEADER_CALL_TIMEOUT_S = 30.0
#: How long the leader waits for departed workers' UNASSIGNED statuses to be written.
STATUS_FLUSH_TIMEOUT_S = 5.0


def now_ms() -> int:
    """Wall-clock time in ms: session keys are compared across workers' clocks."""
    return int(time.time() * 1000)


class ClusterView:
    """The config and status topics as this worker reads them (thread-safe)."""

    def __init__(self, configs: KafkaConfigStore, statuses: KafkaStatusStore) -> None:
        #: The config topic's store: its tail, and the leader's unfenced writes.
        self.configs = configs
        #: The status topic's store: statuses, and the workers' records.
        self.statuses = statuses
        #: The config-topic position of the last unfenced write this worker answered before
        #: its own view had read it back (``LeaderWriter.write_in_term``): every read here
        #: waits for it.
        self._owed_config_position = 0
        self._owed_lock = threading.Lock()
        #: The leader record last read from the view, and the (id, address) it names.
        self._leader_named: tuple[object, tuple[str, str] | None] = (object(), None)
        self._session_keys = KeyRing()

    def snapshot(self) -> ConfigSnapshot:
        """The view, with every write this worker answered: a leader's unfenced write that
        landed right after the view's last record is answered before this worker's own tail
        has read it back (``write_in_term``), so whoever reads here waits for that first
        (within the caller's deadline; never the tail's thread, which is what reads it)."""
        owed = self._owed_config_position
        if owed > self.configs.position() and not self.configs.on_tail_thread():
            self.configs.wait_for_offset(
                owed, deadline.remaining(LEADER_CALL_TIMEOUT_S), before_listener=True
            )
        return self.configs.snapshot()

    @staticmethod
    def config_of(snapshot: ConfigSnapshot, name: str) -> Mapping[str, str]:
        config = snapshot.connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    @property
    def owed_position(self) -> int:
        """The end of the last write answered before this view read it back (0: none)."""
        return self._owed_config_position

    def owe(self, position: int) -> None:
        """Notes a write answered before this view read it back: reads wait for it."""
        with self._owed_lock:
            self._owed_config_position = max(self._owed_config_position, position)

    def config_position(self) -> int:
        """How far this worker's reads see the config topic (for read-your-writes
        elsewhere): what it has read, or the end of a write it answered before reading it
        back, which its reads wait for."""
        return max(self.configs.position(), self._owed_config_position)

    def wait_for_config_position(self, position: int, timeout: float) -> None:
        """Blocks until this worker has read the config topic up to ``position``."""
        self.configs.wait_for_offset(position, timeout)

    def leader_address(self) -> tuple[str, str] | None:
        """(id, address) of the leader as the config topic names it; None before any."""
        raw = self.snapshot().extensions.get(LEADER_KEY)
        seen, named = self._leader_named
        if raw is seen:  # asked on every forwarded write: parsed once per leader record
            return named
        leader = LeaderRecord.from_json(raw)
        named = (leader.worker_id, leader.address) if leader else None
        self._leader_named = (raw, named)
        return named

    def session_key(self) -> SessionKey | None:
        """The cluster's current inter-worker session key (KIP-507) as this worker read
        it; None before the first leader wrote one. Signs this worker's calls to others."""
        self._observe_session_key_once()
        return self._session_keys.current()

    def session_keys(self) -> tuple[SessionKey, ...]:
        """The session keys a call from another worker may be signed with: the current
        one and the one it replaced."""
        self._observe_session_key_once()
        return self._session_keys.known()

    def _observe_session_key_once(self) -> None:
        """Reads the key from the view until one is known; after that the config listener
        observes each new key as it is read (every forwarded call is signed and verified:
        neither should build a snapshot, which a write has just made stale)."""
        if self._session_keys.current() is None:
            self.observe_session_key()

    def observe_session_key(self) -> None:
        self._session_keys.observe(
            SessionKey.from_json(self.snapshot().extensions.get(SESSION_KEY_KEY))
        )

    def flush_statuses(self, log: Any) -> None:
        """Waits (bounded) until the statuses reported so far are in the status topic, as
        status writes are asynchronous. Should it take too long, a late UNASSIGNED still
        cannot hide a new owner's status: that one carries a newer generation."""
        try:
            self.statuses.flush(deadline.remaining(STATUS_FLUSH_TIMEOUT_S))
        except UnavailableError as exc:
            log.warning("departed_statuses_not_flushed", error=exc.message)
