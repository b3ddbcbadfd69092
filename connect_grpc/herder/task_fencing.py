"""Exactly-once source support on a cluster: fencing task generations (Kafka Connect's
KIP-618).

Before a task of a connector's new task configs writes transactionally, the leader fences
the transactional producers of the previous generation and records the new task count
(``tasks-fencing-<c>``); any worker asks the leader for that, and waits until its own view
shows it. An offsets change with exactly-once on fences every task producer and writes the
offsets in one transaction under ``<group.id>-<connector>``. Separate from the mutations:
its clients (the runtime, before a task starts; the offset manager; the leader's cluster
service) and its Kafka calls (producer fencing, a connector's own transactional writer) are
its own.

Lock: each connector's lock (``ConnectorLocks``), held by ``fence_zombies`` across the
fencing and the write, bounded by the caller's deadline (``FENCING_TIMEOUT_S`` at most for
the fencing); ``write_offsets_exactly_once`` runs under the lock its caller (an offsets
change) holds. ``await_fenced_generation`` holds no lock while it waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.fenced_writer import FencedWriter
from connect_grpc.cluster.membership import LeaderElection
from connect_grpc.cluster.zombie_fencing import fence_producers
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.runtime.transactions import (
    ExactlyOnceSource,
    connector_transactional_id,
    task_transactional_id,
)
from connect_grpc.storage.base import OffsetEntry
from connect_grpc.storage.config_codec import task_count_records
from connect_grpc.storage.connector_offsets import ConnectorOffsetStores, put_fallback
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore, encode_records

#: How long a worker waits for the leader to fence a connector's previous task generation
#: before a task of the new one fails to start (exactly-once source support).
FENCING_TIMEOUT_S = 20.0
#: Pause between two requests of a fencing the leader could not do yet.
FENCING_RETRY_S = 0.5

#: Asks the leader to fence a connector's zombies: (leader address, connector, timeout) →
#: the config position to wait for.
FencingRequester = Callable[[str, str, float], int]


class TaskFencing:
    """The fencing of connectors' task generations, and exactly-once offsets changes."""

    def __init__(
        self,
        view: ClusterView,
        writer: LeaderWriter,
        election: LeaderElection,
        locks: ConnectorLocks,
        *,
        config: WorkerConfig,
        cluster: DistributedConfig,
        client: dict[str, str],
        offsets: KafkaOffsetStore,
        connector_offsets: ConnectorOffsetStores,
        request_fencing: FencingRequester | None,
        worker_id: str,
        log: Any,
    ) -> None:
        """``offsets``: the worker's offsets store; ``request_fencing`` asks the leader
        (None: this worker cannot ask another)."""
        self._view = view
        self._configs = view.configs
        self._writer = writer
        self._election = election
        self._connector_locks = locks
        self._config = config
        self._cluster = cluster
        self._client = client
        self._offsets = offsets
        self._connector_offsets = connector_offsets
        self._request_fencing = request_fencing
        self._id = worker_id
        self._log = log

    def exactly_once(self) -> ExactlyOnceSource | None:
        """How source tasks write with ``exactly.once.source.support=enabled``, else None."""
        if not self._config.exactly_once_source_enabled:
            return None
        return ExactlyOnceSource(
            self._cluster.group_id, self._cluster.offset_topic, self.await_fenced_generation
        )

    def fence_zombies(self, name: str) -> int:
        """(Leader) If the connector's latest task configs were not fenced yet: fences the
        transactional producers of its previous generation, ``<group.id>-<name>-0…N-1``
        with N its last task count, and writes the new task count. Nothing to fence when it
        never had a task count (no task of it wrote transactionally) or when both
        generations are one task (the new task's producer fences the old one itself).
        Returns the config position that has the task count."""
        with self._connector_locks.hold(name):
            writer = self._writer.for_write()
            snapshot = self._view.snapshot()
            self._view.config_of(snapshot, name)
            if name not in snapshot.pending_fencing:
                return snapshot.offset
            previous = snapshot.task_counts.get(name)
            current = len(snapshot.task_configs(name))
            if previous is not None and (previous, current) != (1, 1):
                ids = [task_transactional_id(self._cluster.group_id, name, t)
                       for t in range(previous)]
                fence_producers(
                    self._producer_config(), ids, deadline.remaining(FENCING_TIMEOUT_S)
                )
            self._writer.write(writer, task_count_records(name, current))
            self._log.info("task_generation_fenced", connector=name, previous=previous,
                           tasks=current)
            return self._view.snapshot().offset

    def write_offsets_exactly_once(
        self, name: str, config: Mapping[str, str], entries: Sequence[OffsetEntry]
    ) -> None:
        """(Leader, under the connector's lock: it is STOPPED, or being created) Fences every
        producer the connector's tasks may still hold, ``<group.id>-<name>-0…N-1`` with N
        its task count, then writes the offsets in one transaction under
        ``<group.id>-<name>``, then records a task count of 0: until a task runs again, the
        next change has nothing to fence. A fencing that fails writes nothing."""
        records = encode_records(name, entries)
        if not records:
            return
        group = self._cluster.group_id
        previous = self._view.snapshot().task_counts.get(name, 0)
        ids = [task_transactional_id(group, name, t) for t in range(previous)]
        store = self._connector_offsets.primary(config)
        fence_producers(self._producer_config(), ids, deadline.remaining(FENCING_TIMEOUT_S))
        writer = FencedWriter.open(
            self._producer_config(),
            store.topic,
            connector_transactional_id(group, name),
            deadline.remaining(LEADER_CALL_TIMEOUT_S),
            worker_id=self._id,
        )
        try:
            written = writer.send_all(records, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        finally:
            writer.close(deadline.remaining(LEADER_CALL_TIMEOUT_S))
        store.wait_for(written, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        if store is not self._offsets:
            put_fallback(self._offsets, name, entries)
        if previous:
            self._writer.write(self._writer.for_write(), task_count_records(name, 0))
        self._log.info("offsets_written_exactly_once", connector=name, fenced=len(ids),
                       records=len(records))

    def _producer_config(self) -> dict[str, str]:
        """Settings of the leader's producers that fence and write for a connector."""
        return {**self._client, **self._config.prefixed("producer.")}

    def await_fenced_generation(self, name: str) -> None:
        """(Any worker, before it starts a task of an exactly-once source) Returns once the
        connector's latest task configs are fenced in this worker's view, asking the leader
        to fence them if need be. Raises UnavailableError if that takes FENCING_TIMEOUT_S,
        FailedPreconditionError if the leader cannot fence (the task then fails with it)."""
        give_up_at = time.monotonic() + FENCING_TIMEOUT_S
        while name in self._view.snapshot().pending_fencing:
            left = give_up_at - time.monotonic()
            try:
                position = self._fencing_position(name, left)
                self._configs.wait_for_offset(position, max(0.0, give_up_at - time.monotonic()))
            except UnavailableError as exc:
                if time.monotonic() + FENCING_RETRY_S >= give_up_at:
                    raise UnavailableError(
                        f"the previous task generation of {name} was not fenced within "
                        f"{FENCING_TIMEOUT_S:.0f} s: {exc.message}",
                        exc.retry_after_seconds,
                    ) from exc
                time.sleep(FENCING_RETRY_S)

    def _fencing_position(self, name: str, timeout: float) -> int:
        if self._election.is_leader():
            with deadline.scope(timeout):
                try:
                    return self.fence_zombies(name)
                except NotLeaderError:
                    pass
        leader = self._view.leader_address()
        if leader is None or leader[0] == self._id or self._request_fencing is None:
            raise UnavailableError("no leader to ask for zombie fencing", 1.0)
        return self._request_fencing(leader[1], name, timeout)
