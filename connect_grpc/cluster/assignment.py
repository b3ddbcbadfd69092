"""Which live worker runs which connector and task: the leader's assignment.

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
keeps its last input and answer and answers an equal input with the same object. When the
input did change, the common case is a connector or its tasks created or deleted while the
members stay: then nothing has to move, and :func:`rebalance` places only the new instances
(:func:`_without_moves`, the same answer as the whole computation), so that a create costs
the leader set operations in C over the instances rather than sorting and hashing them in
Python.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from connect_grpc.kernel.domain import TaskId

#: An instance id: a connector name or a task id.
InstanceT = TypeVar("InstanceT", str, TaskId)
R = TypeVar("R")


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
        return cls(tuple(sorted(set(connectors))), tuple(sorted(set(tasks))))

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
        tuple(connectors),
        tuple(map(tuple, connectors.values())),
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
    assignment = _without_moves(live, connectors, previous)
    if assignment is None:
        assignment = _computed_whole(live, connectors, previous)
    return Rebalance(assignment, previous)


def _computed_whole(
    live: Sequence[str],
    connectors: Mapping[str, Collection[TaskId]],
    previous: Mapping[str, WorkerAssignment],
) -> dict[str, WorkerAssignment]:
    wanted_connectors = sorted(connectors)
    wanted_tasks = sorted(set().union(*connectors.values()))
    held_connectors = _held(live, previous, set(wanted_connectors), _connectors_of)
    held_tasks = _held(live, previous, set(wanted_tasks), _tasks_of)
    connector_quota, task_quota = _quotas(
        live, held_connectors, held_tasks, len(wanted_connectors), len(wanted_tasks)
    )
    new_connectors = _fill(live, wanted_connectors, held_connectors, connector_quota)
    new_tasks = _fill(live, wanted_tasks, held_tasks, task_quota)
    return {
        worker: WorkerAssignment.of(new_connectors[worker], new_tasks[worker]) for worker in live
    }


def _without_moves(
    live: Sequence[str],
    connectors: Mapping[str, Collection[TaskId]],
    previous: Mapping[str, WorkerAssignment],
) -> dict[str, WorkerAssignment] | None:
    """The answer of the whole computation when it moves nothing, found from the change
    alone; None when it would have to move an instance (a worker joined or left and balance
    needs a move, deletions unbalanced the workers, an instance is listed twice).

    The whole computation keeps every instance a live worker holds exactly when each one's
    quota (:func:`_quotas`, from the counts alone) is at least what it holds, and then deals
    the unheld instances (new ones, a dead worker's) in id order as :func:`_fill` does; so
    the same quotas and the same dealing give the same answer. A worker whose instances did
    not change keeps its ``WorkerAssignment`` object."""
    if not live:
        return None
    shares = [previous.get(worker, EMPTY) for worker in live]
    wanted_tasks: set[TaskId] = set().union(*connectors.values())
    kept_c = _kept(shares, _connectors_of, set(connectors))
    kept_t = _kept(shares, _tasks_of, wanted_tasks)
    if kept_c is None or kept_t is None:
        return None
    (held_c, new_c), (held_t, new_t) = kept_c, kept_t
    connector_quota, task_quota = _quotas(
        live,
        dict(zip(live, held_c, strict=True)),
        dict(zip(live, held_t, strict=True)),
        len(connectors),
        len(wanted_tasks),
    )
    if any(
        connector_quota[w] < len(c) or task_quota[w] < len(t)
        for w, c, t in zip(live, held_c, held_t, strict=True)
    ):
        return None
    added_c = _dealt(live, held_c, connector_quota, new_c)
    added_t = _dealt(live, held_t, task_quota, new_t)
    assignment: dict[str, WorkerAssignment] = {}
    for index, worker in enumerate(live):
        share = shares[index]
        connectors_now, tasks_now = held_c[index], held_t[index]
        if added_c[worker]:
            connectors_now = tuple(sorted((*connectors_now, *added_c[worker])))
        if added_t[worker]:
            tasks_now = tuple(sorted((*tasks_now, *added_t[worker])))
        if connectors_now is not share.connectors or tasks_now is not share.tasks:
            share = WorkerAssignment(connectors_now, tasks_now)
        assignment[worker] = share
    return assignment


def _kept(
    shares: Sequence[WorkerAssignment],
    kind: Callable[[WorkerAssignment], tuple[InstanceT, ...]],
    wanted: set[InstanceT],
) -> tuple[list[tuple[InstanceT, ...]], list[InstanceT]] | None:
    """What each share still holds (the same tuple when nothing of it was deleted) and the
    wanted instances no share holds, in id order; None when a share holds an instance
    twice or two shares hold the same one."""
    held = [kind(share) for share in shares]
    every: set[InstanceT] = set().union(*held)
    if len(every) != sum(map(len, held)):
        return None
    deleted = every - wanted
    if deleted:
        held = [
            tuple(i for i in own if i not in deleted) if deleted.intersection(own) else own
            for own in held
        ]
    return held, sorted(wanted - every)


def _dealt(
    live: Sequence[str],
    held: Sequence[tuple[InstanceT, ...]],
    quota: Mapping[str, int],
    pool: Sequence[InstanceT],
) -> dict[str, list[InstanceT]]:
    """The unheld instances each worker gets, dealt as :func:`_fill` deals them."""
    dealt: dict[str, list[InstanceT]] = {worker: [] for worker in live}
    room = {worker: quota[worker] - len(own) for worker, own in zip(live, held, strict=True)}
    for worker, instance in zip(_rounds(live, room), pool, strict=False):
        dealt[worker].append(instance)
    return dealt


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


def _connectors_of(assignment: WorkerAssignment) -> tuple[str, ...]:
    return assignment.connectors


def _tasks_of(assignment: WorkerAssignment) -> tuple[TaskId, ...]:
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
        mine = sorted(set(kind(previous.get(worker, EMPTY))) & wanted - claimed)
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


def _safe_step(
    target: Mapping[str, WorkerAssignment], current: Mapping[str, WorkerAssignment]
) -> dict[str, WorkerAssignment]:
    # set operations in C over each worker's instances, and a worker's target (the same
    # object) kept whole unless it takes what another worker holds: a thousand instances
    # walked in Python on each change cost the leader milliseconds
    held = {worker: _instance_set(share) for worker, share in current.items()}
    every: set[str | TaskId] = set().union(*held.values())
    several = _held_twice(held.values()) if len(every) < sum(map(len, held.values())) else set()
    step: dict[str, WorkerAssignment] = {}
    for worker, wanted in target.items():
        mine = held.get(worker, frozenset())
        taken = _instance_set(wanted)
        withheld = ((taken - mine) & every) | (taken & several)
        step[worker] = _without(wanted, withheld) if withheld else wanted
    return step


def _instance_set(share: WorkerAssignment) -> frozenset[str | TaskId]:
    return frozenset((*share.connectors, *share.tasks))


def _held_twice(shares: Iterable[frozenset[str | TaskId]]) -> set[str | TaskId]:
    seen: set[str | TaskId] = set()
    twice: set[str | TaskId] = set()
    for share in shares:
        twice |= seen & share
        seen |= share
    return twice


def _without(share: WorkerAssignment, withheld: Collection[str | TaskId]) -> WorkerAssignment:
    return WorkerAssignment(
        tuple(c for c in share.connectors if c not in withheld),
        tuple(t for t in share.tasks if t not in withheld),
    )
