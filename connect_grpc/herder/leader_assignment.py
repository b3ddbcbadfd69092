"""The leader's assignment of connectors and tasks to the group's live workers.

The leader asks the group coordinator for the group's members (after a rebalance it was told
of, and at least every ``MEMBERS_REFRESH_S``), and publishes the next step towards a balanced
assignment once every live worker has confirmed the current one (or failed to for longer
than ``rebalance.timeout.ms``); the instances of workers that left show UNASSIGNED until
their new worker reports. Separate from the leader's loop, which only calls it after its
other duties: this is the one part that knows the group and the workers' confirmations, and
it keeps what the loop would otherwise rebuild on each run at scale (the members, the
instances to assign).

Locks: none of its own. Its state is the leader thread's (the rebalance counter is also
incremented on the election's thread). Its admin call is bounded by
``MEMBERS_CALL_TIMEOUT_S``, its writes by the loop's deadline scope.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from connect_grpc.cluster.assignment import rebalance, safe_step
from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.extension_records import (
    ASSIGNMENT_KEY,
    AssignmentRecord,
    WorkerRecord,
    assignment_in,
    worker_records,
)
from connect_grpc.cluster.membership import LeaderElection
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import InstanceStatus, State, TaskId
from connect_grpc.storage.config_codec import extension_record
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.kafka_admin import IsolatedAdmin

#: Bound of the leader's question for the group's members: short, so that a leader whose
#: coordinator does not answer (an outage) is back in its loop, and sees a deposal, soon.
MEMBERS_CALL_TIMEOUT_S = 5.0
#: Seconds the leader uses the group's members it last asked for, unless a rebalance
#: happened since (which it is told of at once).
MEMBERS_REFRESH_S = 2.0

_NO_RECORD = WorkerRecord("", "", -1)


class AssignmentPublisher:
    """The leader's publishing of assignment steps (called on the leader's thread)."""

    def __init__(
        self,
        view: ClusterView,
        writer: LeaderWriter,
        election: LeaderElection,
        admin: IsolatedAdmin,
        board: StatusBoard,
        *,
        cluster: DistributedConfig,
        worker_id: str,
        wake: threading.Event,
        log: Any,
    ) -> None:
        """``wake``: the leader loop's event, set when the group's members changed."""
        self._view = view
        self._statuses = view.statuses
        self._writer = writer
        self._election = election
        self._admin = admin
        self._board = board
        self._cluster = cluster
        self._id = worker_id
        self._leader_wake = wake
        self._log = log
        #: The generation the leader waits for workers to confirm, and since when.
        self._awaited: tuple[int, float] = (-1, 0.0)
        #: The instances of the last view's connectors (see ``_instances``).
        self._instances_of: tuple[object, object, dict[str, list[TaskId]]] | None = None
        #: Rebalances of the group this worker was told of (and elections won).
        self._rebalances = 0
        #: The group's members as last asked: (rebalances told then, when, the members).
        self._members: tuple[int, float, frozenset[str]] | None = None

    def count_rebalance(self) -> None:
        """An election won: the members are asked again before the next step."""
        self._rebalances += 1

    def prepare(self) -> None:
        """(A leader taking office.) Starts the admin client's child process, if it is not
        running, while the leader opens its writer and reads the config topic: the first
        publication asks for the group's members through it."""
        self._admin.start()

    def on_group_rebalanced(self) -> None:
        """The group's members changed (a worker joined or left): the leader asks for them
        again and looks now rather than at its next tick (recovery after a worker died
        starts sooner)."""
        self._rebalances += 1
        if self._election.is_leader():
            self._leader_wake.set()

    def _group_members(self) -> frozenset[str]:
        """The group's members, this worker included. Asked of the group coordinator (an
        admin call) only after a rebalance, else the last answer: the members change only
        in a rebalance, which every member takes part in, and the leader runs after every
        config change that may move instances (at a thousand connectors, twice a create).
        The last answer is checked again at least every MEMBERS_REFRESH_S, after a step
        (``_recheck_members``)."""
        known = self._members
        if known is None or known[0] != self._rebalances:
            known = self._ask_members()
        return known[2]

    def _ask_members(self) -> tuple[int, float, frozenset[str]]:
        told, now = self._rebalances, time.monotonic()
        with deadline.scope(MEMBERS_CALL_TIMEOUT_S):
            asked = self._admin.call("group_members", self._cluster.group_id)
        known = (told, now, frozenset([*asked, self._id]))
        self._members = known
        return known

    def _recheck_members(self, used: frozenset[str]) -> None:
        """Asks for the members again when the last answer is MEMBERS_REFRESH_S old, after
        the step rather than before it: a run woken by a write (a new connector to place)
        does not wait for the admin call; a change it finds wakes the loop for a step
        with the new members."""
        known = self._members
        if known is None or time.monotonic() - known[1] < MEMBERS_REFRESH_S:
            return
        if self._ask_members()[2] != used:
            self._leader_wake.set()

    def publish(self) -> None:
        """Publishes the next assignment step when the live members or the connectors and
        tasks changed and every live worker has carried out the current one."""
        members = self._group_members()
        self._publish(members)
        self._recheck_members(members)

    def _publish(self, members: frozenset[str]) -> None:
        snapshot = self._view.snapshot()
        current = assignment_in(snapshot)
        live_current = {w: a for w, a in current.workers.items() if w in members}
        reported = worker_records(self._statuses.extensions())
        waiting = [
            w for w in live_current
            if current.generation and reported.get(w, _NO_RECORD).generation < current.generation
        ]
        if waiting and not self._confirmation_overdue(current.generation, waiting):
            return
        instances = self._instances(snapshot)
        target = rebalance(members, instances, live_current).assignment
        step = safe_step(target, live_current)
        if step == dict(current.workers):
            return
        record = AssignmentRecord(current.generation + 1, self._id, step)
        self._mark_departed(current, members, instances)
        self._writer.write_in_term([extension_record(ASSIGNMENT_KEY, record.to_json())], None)
        self._log.info(
            "assignment_published",
            generation=record.generation,
            workers={w: a.size for w, a in step.items()},
        )

    def _instances(self, snapshot: ConfigSnapshot) -> dict[str, list[TaskId]]:
        """Each connector's task ids (the same objects as long as its task count is: making
        a thousand task ids on every run of the leader's loop cost milliseconds); the last
        answer again while the view's connectors and task configs are the same maps."""
        last = self._instances_of
        if last is not None and last[0] is snapshot.connectors and last[1] is snapshot.tasks:
            return last[2]
        known = {} if last is None else last[2]
        instances: dict[str, list[TaskId]] = {}
        for name in snapshot.connectors:
            count = len(snapshot.task_configs(name))
            tasks = known.get(name)
            if tasks is None or len(tasks) != count:
                tasks = [TaskId(name, n) for n in range(count)]
            instances[name] = tasks
        self._instances_of = (snapshot.connectors, snapshot.tasks, instances)
        return instances

    def _confirmation_overdue(self, generation: int, waiting: list[str]) -> bool:
        """Whether live workers have failed to confirm ``generation`` for longer than
        ``rebalance.timeout.ms`` (as Kafka's group would expel a member that long in a
        rebalance): the leader then goes on without them rather than stall every change.
        Instances they held stay theirs (``safe_step``)."""
        now = time.monotonic()
        if self._awaited[0] != generation:
            self._awaited = (generation, now)
            return False
        if (now - self._awaited[1]) * 1000 < self._cluster.rebalance_timeout_ms:
            return False
        self._log.warning("assignment_confirmation_overdue", generation=generation,
                          workers=sorted(waiting))
        return True

    def _mark_departed(
        self,
        previous: AssignmentRecord,
        members: frozenset[str],
        instances: Mapping[str, list[TaskId]],
    ) -> None:
        """Instances of workers that left the group show UNASSIGNED (under the departed
        worker's id) until their new worker reports: nobody runs them now. Written before
        the assignment that hands them over, so that no new owner's status can precede it.
        ``instances``: the connectors and tasks that still exist (no status for the rest)."""
        marked = False
        for worker, held in previous.workers.items():
            if worker in members:
                continue
            unassigned = InstanceStatus(State.UNASSIGNED, worker)
            connectors = [c for c in held.connectors if c in instances]
            tasks = [t for t in held.tasks if t in instances.get(t.connector, ())]
            for connector in connectors:
                self._board.on_connector_status(connector, unassigned)
            for task in tasks:
                self._board.on_task_status(task, unassigned)
            self._log.info("departed_worker_instances_unassigned", departed=worker,
                           connectors=len(connectors), tasks=len(tasks))
            marked = True
        if marked:
            self._view.flush_statuses(self._log)
