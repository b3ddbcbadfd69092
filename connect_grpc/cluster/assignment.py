"""Which live worker runs which connector and task: the leader's assignment (issue 8, item 7).

Pure logic: the leader calls :func:`rebalance` with the live workers (the group's current
members), the connectors and their tasks (from the config topic) and the assignment in force,
and publishes the result; each worker stops what :attr:`WorkerChange.revoked` lists before
the new owners start what :attr:`WorkerChange.assigned` lists.

What it guarantees, as Kafka Connect's incremental cooperative assignor aims to:

* **Balance.** Each live worker's connector count is ``floor(C/W)`` or ``ceil(C/W)``, its
  task count ``floor(T/W)`` or ``ceil(T/W)``, and its total (connectors + tasks) differs from
  any other worker's by at most 1.
* **Least movement.** Among all balanced assignments, one that keeps the most instances on
  their current (live) owner. Only the "+1" slots (which workers get ``ceil`` rather than
  ``floor``) are a choice, and each is worth at most one kept instance, so they go to the
  workers that would otherwise have to give an instance up.
* **Completeness.** Every connector and task is assigned exactly once; deleted ones are
  dropped; a dead worker's instances (and any instance listed under two workers) go to the
  workers with room.
* **Determinism.** The same input gives the same output: workers and instances are sorted by
  id wherever a choice is made.

Unlike Kafka Connect we do not delay reassigning a departed worker's instances
(``scheduled.rebalance.max.delay.ms``): the group noticing its absence is the delay.

The leader asks twice a second, and the answer almost never changes, while computing it for
a thousand connectors and tasks costs tens of milliseconds (sorting task ids): each function
keeps its last input and answer and answers an equal input with the same object.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from connect_grpc.domain import TaskId

#: An instance id: a connector name or a task id.
InstanceT = TypeVar("InstanceT", str, TaskId)
R = TypeVar("R")


def task_order(task: TaskId) -> tuple[str, int]:
    """A task id's sort key: the same order as TaskId's own, compared without calling its
    Python-level ``__lt__`` (sorting a thousand task ids that way took milliseconds)."""
    return task.connector, task.task


def _order(instance: str | TaskId) -> str | tuple[str, int]:
    return task_order(instance) if isinstance(instance, TaskId) else instance


class _LastAnswer(Generic[R]):
    """One function's last input and answer (a pure function: an equal input gets the same
    answer). Thread-safe: the pair is read and replaced as one object."""

    def __init__(self) -> None:
        self._entry: tuple[Any, R] | None = None

    def get(self, key: Any) -> R | None:
        entry = self._entry
        if entry is not None and (entry[0] is key or entry[0] == key):
            return entry[1]
        return None

    def put(self, key: Any, answer: R) -> R:
        self._entry = (key, answer)
        return answer


@dataclass(frozen=True, slots=True)
class WorkerAssignment:
    """The instances one worker runs, each tuple sorted by id."""

    connectors: tuple[str, ...] = ()
    tasks: tuple[TaskId, ...] = ()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[TaskId] = ()) -> WorkerAssignment:
        """Sorted and without duplicates, so equal assignments compare equal."""
        return cls(tuple(sorted(set(connectors))), tuple(sorted(set(tasks), key=task_order)))

    @property
    def size(self) -> int:
        """How many instances (connectors + tasks) the worker runs."""
        return len(self.connectors) + len(self.tasks)

    def minus(self, other: WorkerAssignment) -> WorkerAssignment:
        """The instances here that ``other`` does not hold."""
        return WorkerAssignment.of(
            set(self.connectors) - set(other.connectors), set(self.tasks) - set(other.tasks)
        )


EMPTY = WorkerAssignment()


@dataclass(frozen=True, slots=True)
class WorkerChange:
    """What one worker must do: stop ``revoked`` first, then start ``assigned``."""

    revoked: WorkerAssignment = EMPTY
    assigned: WorkerAssignment = EMPTY


@dataclass(frozen=True, slots=True)
class Rebalance:
    """A new assignment and how it differs from the previous one.

    ``assignment`` has an entry for every live worker (empty when it runs nothing).
    ``changes`` has an entry for every worker whose instances change, live or not: a dead
    worker's entry revokes everything it held (nothing to stop, but its instances are free).
    """

    assignment: Mapping[str, WorkerAssignment]
    #: The assignment it was computed from.
    previous: Mapping[str, WorkerAssignment]

    @property
    def changes(self) -> dict[str, WorkerChange]:
        """Computed when asked (the leader publishes ``assignment`` alone, and at a thousand
        instances the diff took a tenth of its loop's time)."""
        return diff(self.previous, self.assignment)

    @property
    def moved(self) -> int:
        """Instances that still exist but leave a live worker (the cost of the rebalance;
        deleted instances and a dead worker's are not counted)."""
        running = _instances(self.assignment.values())
        return sum(
            len(_instances([change.revoked]) & running)
            for worker, change in self.changes.items()
            if worker in self.assignment
        )


def _instances(assignments: Iterable[WorkerAssignment]) -> set[str | TaskId]:
    found: set[str | TaskId] = set()
    for held in assignments:
        found.update(held.connectors)
        found.update(held.tasks)
    return found


def rebalance(
    workers: Iterable[str],
    connectors: Mapping[str, Collection[TaskId]],
    previous: Mapping[str, WorkerAssignment],
) -> Rebalance:
    """The balanced assignment of ``connectors`` (name → its task ids) over ``workers``
    that moves the fewest instances away from their owners in ``previous``."""
    workers = tuple(workers)
    # in the order given: an input that differs only in order is computed again
    key = (
        workers,
        tuple((name, tuple(tasks)) for name, tasks in connectors.items()),
        tuple(previous.items()),
    )
    return _last_rebalance.get(key) or _last_rebalance.put(
        key, _rebalance(workers, connectors, previous)
    )


_last_rebalance: _LastAnswer[Rebalance] = _LastAnswer()


def _rebalance(
    workers: Iterable[str],
    connectors: Mapping[str, Collection[TaskId]],
    previous: Mapping[str, WorkerAssignment],
) -> Rebalance:
    live = sorted(set(workers))
    wanted_connectors = sorted(connectors)
    wanted_tasks = sorted(
        {task for tasks in connectors.values() for task in tasks}, key=task_order
    )
    held_connectors = _held(live, previous, set(wanted_connectors), _connectors_of)
    held_tasks = _held(live, previous, set(wanted_tasks), _tasks_of)
    connector_quota, task_quota = _quotas(
        live, held_connectors, held_tasks, len(wanted_connectors), len(wanted_tasks)
    )
    new_connectors = _fill(live, wanted_connectors, held_connectors, connector_quota)
    new_tasks = _fill(live, wanted_tasks, held_tasks, task_quota)
    assignment = {
        worker: WorkerAssignment.of(new_connectors[worker], new_tasks[worker]) for worker in live
    }
    return Rebalance(assignment, previous)


def diff(
    previous: Mapping[str, WorkerAssignment], current: Mapping[str, WorkerAssignment]
) -> dict[str, WorkerChange]:
    """Per worker, what ``current`` revokes and newly assigns; workers with no change are
    left out."""
    changes: dict[str, WorkerChange] = {}
    for worker in sorted(set(previous) | set(current)):
        before, after = previous.get(worker, EMPTY), current.get(worker, EMPTY)
        change = WorkerChange(revoked=before.minus(after), assigned=after.minus(before))
        if change.revoked.size or change.assigned.size:
            changes[worker] = change
    return changes


def _connectors_of(assignment: WorkerAssignment) -> Sequence[str]:
    return assignment.connectors


def _tasks_of(assignment: WorkerAssignment) -> Sequence[TaskId]:
    return assignment.tasks


def _held(
    live: Sequence[str],
    previous: Mapping[str, WorkerAssignment],
    wanted: set[InstanceT],
    kind: Callable[[WorkerAssignment], Sequence[InstanceT]],
) -> dict[str, list[InstanceT]]:
    """What each live worker holds now and may keep: instances that still exist, each
    claimed once (by the first worker in id order, should the input list it twice)."""
    claimed: set[InstanceT] = set()
    held: dict[str, list[InstanceT]] = {}
    for worker in live:
        mine = sorted(set(kind(previous.get(worker, EMPTY))) & wanted - claimed, key=_order)
        claimed.update(mine)
        held[worker] = mine
    return held


def _quotas(
    live: Sequence[str],
    held_connectors: Mapping[str, Sequence[str]],
    held_tasks: Mapping[str, Sequence[TaskId]],
    connector_count: int,
    task_count: int,
) -> tuple[dict[str, int], dict[str, int]]:
    """How many connectors and tasks each worker gets: ``floor`` of the even share, plus one
    for the workers chosen to take the remainders."""
    if not live:
        return {}, {}
    base_c, extra_c = divmod(connector_count, len(live))
    base_t, extra_t = divmod(task_count, len(live))
    wants_c = {w for w in live if len(held_connectors[w]) > base_c}
    wants_t = {w for w in live if len(held_tasks[w]) > base_t}
    load = {w: len(held_connectors[w]) + len(held_tasks[w]) for w in live}
    plus_c, plus_t = _remainders(live, load, wants_c, wants_t, extra_c, extra_t)
    return (
        {w: base_c + (w in plus_c) for w in live},
        {w: base_t + (w in plus_t) for w in live},
    )


def _remainders(
    live: Sequence[str],
    load: Mapping[str, int],
    wants_c: set[str],
    wants_t: set[str],
    extra_c: int,
    extra_t: int,
) -> tuple[set[str], set[str]]:
    """Which workers take the ``extra_c`` spare connectors and the ``extra_t`` spare tasks.

    Totals stay within 1 of each other only if no worker takes both spares while another
    takes none: the two sets are disjoint when ``extra_c + extra_t <= W``, and otherwise
    their complements (the workers taking no spare connector, resp. task) are. Both cases
    are the same choice of two disjoint sets, each slot worth one kept instance to a worker
    that ``wants`` it (holds more than the base share).
    """
    busiest = sorted(live, key=lambda w: (-load[w], w))
    if extra_c + extra_t <= len(live):
        return _disjoint(busiest, wants_c, wants_t, extra_c, extra_t)
    everyone = set(live)
    idlest = sorted(live, key=lambda w: (load[w], w))
    spare_c, spare_t = _disjoint(
        idlest,
        everyone - wants_c,
        everyone - wants_t,
        len(live) - extra_c,
        len(live) - extra_t,
    )
    return everyone - spare_c, everyone - spare_t


def _disjoint(
    order: Sequence[str], wants_a: set[str], wants_b: set[str], size_a: int, size_b: int
) -> tuple[set[str], set[str]]:
    """Two disjoint sets of ``size_a`` and ``size_b`` workers (``size_a + size_b <=
    len(order)``) holding as many of their wanting workers as possible.

    Greedy and exact: a worker wanting only one set goes there first; one wanting both fills
    whichever still has room (it is worth one either way); the rest fill up in ``order``.
    """
    a: list[str] = []
    b: list[str] = []
    only_a = [w for w in order if w in wants_a and w not in wants_b]
    only_b = [w for w in order if w in wants_b and w not in wants_a]
    both = [w for w in order if w in wants_a and w in wants_b]
    _take(a, size_a, only_a)
    _take(b, size_b, only_b)
    _take(a, size_a, both)
    _take(b, size_b, [w for w in both if w not in a])
    placed = set(a) | set(b)
    rest = [w for w in order if w not in placed]
    _take(a, size_a, rest)
    _take(b, size_b, [w for w in rest if w not in a])
    return set(a), set(b)


def _take(into: list[str], size: int, candidates: Sequence[str]) -> None:
    into.extend(candidates[: max(0, size - len(into))])


def _fill(
    live: Sequence[str],
    wanted: Sequence[InstanceT],
    held: Mapping[str, Sequence[InstanceT]],
    quota: Mapping[str, int],
) -> dict[str, list[InstanceT]]:
    """Each worker keeps the first ``quota`` instances it holds (by id); the rest and the
    unowned ones are dealt round-robin, in id order, to the workers with room, so one
    connector's new tasks spread over the workers."""
    kept = {w: list(held[w][: quota[w]]) for w in live}
    owned = {instance for instances in kept.values() for instance in instances}
    pool = [instance for instance in wanted if instance not in owned]
    room = {w: quota[w] - len(kept[w]) for w in live}
    for worker, instance in zip(_rounds(live, room), pool, strict=False):
        kept[worker].append(instance)
    return kept


def _rounds(live: Sequence[str], room: Mapping[str, int]) -> list[str]:
    """One slot per free place, dealt in rounds: every worker with room once, then again."""
    deepest = max(room.values(), default=0)
    return [w for depth in range(deepest) for w in live if room[w] > depth]


def safe_step(
    target: Mapping[str, WorkerAssignment], current: Mapping[str, WorkerAssignment]
) -> dict[str, WorkerAssignment]:
    """The part of ``target`` that can be published now without running an instance twice.

    ``current`` is what each live worker holds (it has carried out that assignment). An
    instance that ``target`` moves to another worker is withheld from its new owner while
    its current owner still holds it: this step revokes it, and once the owner has
    confirmed (or left the group) the next step gives it away.
    """
    key = (tuple(target.items()), tuple(current.items()))
    answer = _last_step.get(key)
    if answer is None:
        answer = _last_step.put(key, _safe_step(target, current))
    return dict(answer)


_last_step: _LastAnswer[dict[str, WorkerAssignment]] = _LastAnswer()


#: The holder of an instance that ``current`` lists under more than one worker.
_SEVERAL = ""


def _safe_step(
    target: Mapping[str, WorkerAssignment], current: Mapping[str, WorkerAssignment]
) -> dict[str, WorkerAssignment]:
    # each instance hashed once (a thousand task ids, hashed in Python, per worker and
    # per call cost milliseconds), and kept in its sorted order: no sorting again
    held_by: dict[str | TaskId, str] = {}
    for worker, held in current.items():
        instances: list[str | TaskId] = [*held.connectors, *held.tasks]
        for instance in instances:
            holder = held_by.get(instance)
            held_by[instance] = worker if holder in (None, worker) else _SEVERAL
    step: dict[str, WorkerAssignment] = {}
    for worker, wanted in target.items():
        step[worker] = WorkerAssignment(
            tuple(c for c in wanted.connectors if held_by.get(c, worker) == worker),
            tuple(t for t in wanted.tasks if held_by.get(t, worker) == worker),
        )
    return step
