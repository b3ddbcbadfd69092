"""Following statuses as WatchConnectorStatus streams them: what changed between two
statuses, when the instances of a restart have settled, when a watch has reached its state.

Pure logic, fed by the commands with the statuses of the stream, so it is unit-tested without
a worker. The stream sends a connector's status when it changes, not every intermediate one
(two quick changes may arrive as one), so nothing here counts on seeing each state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from connect_grpc.kernel.domain import AutoRestartStatus, ConnectorStatus, InstanceStatus, State

#: An instance of a connector: None for the connector itself, else the task's id.
InstanceKey = int | None

#: States a restarted instance ends in (RESTARTING, UNASSIGNED and RETRYING are on the way).
SETTLED = frozenset({State.RUNNING, State.FAILED, State.PAUSED, State.STOPPED})


def instances(status: ConnectorStatus) -> dict[InstanceKey, InstanceStatus]:
    """The connector's and each task's status, by instance."""
    found: dict[InstanceKey, InstanceStatus] = {None: status.connector}
    found.update((task.id, task.status) for task in status.tasks)
    return found


def label(key: InstanceKey) -> str:
    return "connector" if key is None else f"task {key}"


def _order(key: InstanceKey) -> int:
    return -1 if key is None else key


@dataclass(frozen=True, slots=True)
class Change:
    """An instance's new status (None: the instance is gone)."""

    connector: str
    instance: InstanceKey
    status: InstanceStatus | None


@dataclass(frozen=True, slots=True)
class RestartsChange:
    """Where the connector's auto-restart policy stands, new or changed."""

    connector: str
    progress: AutoRestartStatus


def restarts_change(
    connector: str, before: ConnectorStatus | None, after: ConnectorStatus | None
) -> RestartsChange | None:
    """The connector's auto-restart progress when ``after`` shows one that ``before`` did
    not (None: unchanged, or no policy)."""
    now = after.auto_restart if after is not None else None
    was = before.auto_restart if before is not None else None
    return None if now is None or now == was else RestartsChange(connector, now)


def changes(
    connector: str,
    before: Mapping[InstanceKey, InstanceStatus],
    after: Mapping[InstanceKey, InstanceStatus],
    only: Iterable[InstanceKey] | None = None,
    traces: bool = True,
) -> list[Change]:
    """The instances whose status differs, or whose revision does (a new report of the same
    status: both statuses come from one worker's stream); ``traces=False``: whose state or
    worker differs (the statuses may come from two workers). Connector first, then tasks
    by id."""
    keys = set(only) if only is not None else set(before) | set(after)
    return [
        Change(connector, key, after.get(key))
        for key in sorted(keys, key=_order)
        if _shown(before.get(key), traces) != _shown(after.get(key), traces)
    ]


def _shown(status: InstanceStatus | None, traces: bool) -> object:
    if status is None:
        return None
    if traces:
        return status, status.revision
    return status.state, status.worker_id


@dataclass
class RestartFollower:
    """Follows the instances a flagged restart chose (those its answer shows RESTARTING) until
    each has settled (RUNNING, FAILED, or PAUSED/STOPPED by the target state) or is gone.

    ``baseline`` (the status read before the restart, from the worker the stream comes
    from) is for a worker whose view may lag the restart, as a follower of a cluster
    reading the status topic: there an instance counts as restarted only once it was seen
    RESTARTING or shows a later status than the baseline: a higher revision (a restart
    that failed as before reads as the baseline but is a new report), or one that differs.
    Without it (standalone: the worker answered after marking the instances RESTARTING),
    any settled status after the answer counts.
    """

    connector: str
    answer: ConnectorStatus
    baseline: ConnectorStatus | None = None
    pending: set[InstanceKey] = field(init=False)
    ended: dict[InstanceKey, InstanceStatus | None] = field(init=False, default_factory=dict)
    _last: dict[InstanceKey, InstanceStatus] = field(init=False)
    _seen_restarting: set[InstanceKey] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        shown = instances(self.answer)
        self.pending = {key for key, item in shown.items() if item.state is State.RESTARTING}
        self._last = {key: shown[key] for key in self.pending}

    @property
    def restarted(self) -> list[InstanceKey]:
        """The instances the restart chose, connector first."""
        return sorted({*self.pending, *self.ended}, key=_order)

    @property
    def waiting(self) -> list[InstanceKey]:
        """The restarted instances that have not settled yet, connector first."""
        return sorted(self.pending, key=_order)

    @property
    def done(self) -> bool:
        return not self.pending

    @property
    def failed(self) -> list[InstanceKey]:
        """The restarted instances that ended FAILED."""
        return [key for key, item in sorted(self.ended.items(), key=lambda kv: _order(kv[0]))
                if item is not None and item.state is State.FAILED]

    def observe(self, status: ConnectorStatus) -> list[Change]:
        """Takes the next status of the stream; returns what changed among the restarted
        instances."""
        now = instances(status)
        followed = self.restarted
        # the answer shows the old trace of a FAILED instance it restarts; that is no news
        found = changes(self.connector, self._last, now, only=followed, traces=False)
        self._last = {key: now[key] for key in followed if key in now}
        for key in list(self.pending):
            self._settle(key, now.get(key))
        return found

    def _settle(self, key: InstanceKey, current: InstanceStatus | None) -> None:
        if current is None:
            self.pending.discard(key)
            self.ended[key] = None
        elif current.state is State.RESTARTING:
            self._seen_restarting.add(key)
        elif current.state in SETTLED and self._after_restart(key, current):
            self.pending.discard(key)
            self.ended[key] = current

    def _after_restart(self, key: InstanceKey, current: InstanceStatus) -> bool:
        if self.baseline is None or key in self._seen_restarting:
            return True
        before = instances(self.baseline).get(key)
        if before is None or before != current:
            return True
        return bool(before.revision) and current.revision > before.revision


@dataclass
class WatchBoard:
    """The latest status of each watched connector (None: deleted), as the streams report."""

    names: list[str]
    statuses: dict[str, ConnectorStatus | None] = field(default_factory=dict)

    def update(self, name: str, status: ConnectorStatus | None) -> list[Change]:
        """Records the connector's new status; returns what changed (every instance on the
        first status; each instance gone when deleted)."""
        previous = self.statuses.get(name)
        self.statuses[name] = status
        before = instances(previous) if previous is not None else {}
        after = instances(status) if status is not None else {}
        return changes(name, before, after)

    def deleted(self) -> list[str]:
        return [name for name in self.names if name in self.statuses
                and self.statuses[name] is None]

    def reached(self, state: State) -> bool:
        """Whether every watched connector and all of its tasks are in ``state`` (for RUNNING,
        with at least one task: a connector that has just started has none yet)."""
        return all(self._in_state(self.statuses.get(name), state) for name in self.names)

    @staticmethod
    def _in_state(status: ConnectorStatus | None, state: State) -> bool:
        if status is None or status.connector.state is not state:
            return False
        if state is State.RUNNING and not status.tasks:
            return False
        return all(task.status.state is state for task in status.tasks)

    def failed(self) -> list[tuple[str, InstanceKey]]:
        """Every FAILED instance of the watched connectors."""
        return [
            (name, key)
            for name in self.names
            if (status := self.statuses.get(name)) is not None
            for key, item in sorted(instances(status).items(), key=lambda kv: _order(kv[0]))
            if item.state is State.FAILED
        ]
