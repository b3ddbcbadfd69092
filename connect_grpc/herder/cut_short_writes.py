"""Removals and stops cut short, and how the leader finishes them.

A removal or a stop written without a transaction is its change first (the connector's
tombstone, the STOPPED target state), then cleanup records. A crash, or a deposed leader
whose later records were refused, may leave the change without its cleanup: task configs and
a target state behind a tombstone, which compaction would bring back to a reader from the
topic's start, or a STOPPED connector that still has task configs. The leader's loop
finishes both; a create of a name finishes its unfinished removal first
(:func:`removal_leftovers`). Separate from the mutations and the loop because both need the
rule of what is left over, and it is the one place that knows it.

Lock: each connector's lock (``ConnectorLocks``, the mutations' lock), taken by the leader's
loop around the check and the write it finishes; the wait is bounded by the loop's deadline
scope (``LEADER_CALL_TIMEOUT_S``).
"""

from __future__ import annotations

import functools
from typing import Any

from connect_grpc.cluster.fenced_writer import FencedWriter
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel.domain import TargetState
from connect_grpc.storage.config_codec import (
    RawRecord,
    removal_cleanup_records,
    task_config_records,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot


class CutShortWrites:
    """The leader's finishing of removals and stops cut short (on the leader's thread)."""

    def __init__(
        self, view: ClusterView, writer: LeaderWriter, locks: ConnectorLocks, log: Any
    ) -> None:
        self._view = view
        self._writer = writer
        self._connector_locks = locks
        self._log = log
        #: The leader's loop at scale: the maps of the last view in which no stop was left
        #: to finish (the walk is skipped while they are the same objects).
        self._no_stops_in: tuple[object, object] | None = None

    def finish_removals(self, writer: FencedWriter) -> None:
        """Finishes the removals cut short (a crash, or a deposed leader whose cleanup
        records were refused): tombstones their task configs and target state, which
        compaction would otherwise bring back to a reader from the topic's start once it
        dropped the connector tombstone. Idempotent (a removal is finished once its
        target-state tombstone is read); under the connector's lock and after this
        leader's term marker, so that no create of the name comes in between."""
        for name in list(self._view.snapshot().unfinished_removals):
            with self._connector_locks.hold(name):
                leftovers = removal_leftovers(self._view.snapshot(), name)
                if leftovers:
                    self._writer.write(writer, leftovers, wake_leader=False)
                    self._log.info("connector_removal_finished", connector=name)

    def finish_stops(self, writer: FencedWriter) -> None:
        """Finishes the stops cut short (a crash, or a deposed leader whose cleanup was
        refused): a STOPPED connector's task configs are emptied, as KIP-875's STOPPED
        means (offsets may be changed then). Under the connector's lock, checked again
        there and right before the write commits (a resume another worker wrote itself
        meanwhile takes no lock here: its connector keeps its tasks); idempotent."""
        snapshot = self._view.snapshot()
        # the answer depends on these two maps alone, which unchanged views share
        maps = (snapshot.target_states, snapshot.tasks)
        last = self._no_stops_in
        if last is not None and last[0] is maps[0] and last[1] is maps[1]:
            return
        stopped = _stops_cut_short(snapshot)
        for name in stopped:
            with self._connector_locks.hold(name):
                if _stopped_with_tasks(self._view.snapshot(), name):
                    try:
                        self._writer.write(
                            writer, task_config_records(name, []),
                            guard=functools.partial(_still_stopped_with_tasks, name),
                        )
                    except _NoLongerStopped:
                        self._log.info("connector_stop_not_finished", connector=name)
                        continue
                    self._log.info("connector_stop_finished", connector=name)
        if not stopped:
            self._no_stops_in = maps


def removal_leftovers(snapshot: ConfigSnapshot, name: str) -> list[RawRecord]:
    """The cleanup of the name's unfinished removal, if any, while it has no config."""
    count = snapshot.unfinished_removals.get(name)
    if count is None or snapshot.contains(name):
        return []
    return removal_cleanup_records(name, count)


def _stops_cut_short(snapshot: ConfigSnapshot) -> list[str]:
    """The connectors :func:`_stopped_with_tasks`, found among the STOPPED ones in one
    comprehension: the leader looks on every create, over every connector, and three calls
    per connector showed in its profile at a thousand connectors."""
    return [
        name for name, state in snapshot.target_states.items()
        if state is TargetState.STOPPED and snapshot.contains(name)
        and snapshot.task_configs(name)
    ]


def _stopped_with_tasks(snapshot: ConfigSnapshot, name: str) -> bool:
    """A stop cut short: STOPPED, with task configs still committed."""
    return snapshot.target_state(name) is TargetState.STOPPED and bool(snapshot.task_configs(name))


class _NoLongerStopped(Exception):
    """The connector left STOPPED (or lost its task configs) before the cleanup committed."""


def _still_stopped_with_tasks(name: str, snapshot: ConfigSnapshot) -> None:
    if not _stopped_with_tasks(snapshot, name):
        raise _NoLongerStopped(name)
