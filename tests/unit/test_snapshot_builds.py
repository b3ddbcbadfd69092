"""Copy-on-write snapshot builds (issue 25): the config store's builder copies only the
maps changed since its last build, and what it builds is always what a build from scratch
of the same state gives."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.storage.config_codec import (
    commit_key,
    connector_key,
    encode_commit,
    encode_log_level,
    encode_properties,
    encode_restart,
    encode_target_state,
    encode_task_count,
    logger_key,
    restart_key,
    target_state_key,
    task_count_key,
    task_key,
    term_marker_record,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot, SnapshotBuilder, apply_record
from connect_grpc.storage.tracked import TrackedDict, TrackedSet

#: Methods of dict and set that cannot change the contents. Any other method must be
#: overridden by the tracked container, or a change through it would go unnoticed.
READ_ONLY = frozenset({
    "__class__", "__class_getitem__", "__contains__", "__delattr__", "__dir__", "__doc__",
    "__eq__", "__format__", "__ge__", "__getattribute__", "__getitem__", "__getstate__",
    "__gt__", "__hash__", "__init_subclass__", "__iter__", "__le__", "__len__", "__lt__",
    "__ne__", "__new__", "__reduce__", "__reduce_ex__", "__repr__", "__reversed__",
    "__setattr__", "__sizeof__", "__str__", "__subclasshook__", "__or__", "__ror__",
    "__and__", "__rand__", "__sub__", "__rsub__", "__xor__", "__rxor__", "copy", "fromkeys",
    "get", "items", "keys", "values", "difference", "intersection", "isdisjoint", "issubset",
    "issuperset", "symmetric_difference", "union",
})


@pytest.mark.parametrize(("base", "tracked"), [(dict, TrackedDict), (set, TrackedSet)])
def test_every_method_that_can_change_the_contents_is_tracked(
    base: type, tracked: type
) -> None:
    may_change = set(dir(base)) - READ_ONLY
    assert may_change, "the read-only list cannot cover everything"
    assert sorted(may_change - set(vars(tracked))) == []


DICT_CHANGES: list[tuple[str, Callable[[TrackedDict[str, int]], Any]]] = [
    ("setitem", lambda d: d.__setitem__("a", 9)),
    ("setitem new", lambda d: d.__setitem__("z", 1)),
    ("delitem", lambda d: d.__delitem__("a")),
    ("pop", lambda d: d.pop("a")),
    ("pop with default", lambda d: d.pop("a", None)),
    ("popitem", lambda d: d.popitem()),
    ("setdefault new", lambda d: d.setdefault("z", 1)),
    ("update", lambda d: d.update({"z": 1})),
    ("update by keyword", lambda d: d.update(z=1)),
    ("ior", lambda d: d.__ior__({"z": 1})),
    ("clear", lambda d: d.clear()),
    ("init again", lambda d: d.__init__({"z": 1})),  # type: ignore[misc]
]


@pytest.mark.parametrize(("name", "change"), DICT_CHANGES, ids=[n for n, _ in DICT_CHANGES])
def test_a_dict_change_is_noted(name: str, change: Callable[[TrackedDict[str, int]], Any]) -> None:
    tracked = TrackedDict({"a": 1, "b": 2})
    tracked.changed = False
    before = dict(tracked)
    change(tracked)
    assert dict(tracked) != before or name == "setitem"
    assert tracked.changed


@pytest.mark.parametrize(
    "no_change",
    [
        lambda d: d.pop("absent", None),
        lambda d: d.setdefault("a", 5),
        lambda d: d.get("a"),
        lambda d: d | {"z": 1},
        lambda d: d.copy(),
    ],
)
def test_a_dict_call_that_changes_nothing_is_not_noted(
    no_change: Callable[[TrackedDict[str, int]], Any],
) -> None:
    tracked = TrackedDict({"a": 1})
    tracked.changed = False
    no_change(tracked)
    assert tracked == {"a": 1}
    assert not tracked.changed
    empty: TrackedDict[str, int] = TrackedDict()
    empty.changed = False
    empty.clear()
    assert not empty.changed


SET_CHANGES: list[tuple[str, Callable[[TrackedSet[str]], Any]]] = [
    ("add", lambda s: s.add("z")),
    ("discard", lambda s: s.discard("a")),
    ("remove", lambda s: s.remove("a")),
    ("pop", lambda s: s.pop()),
    ("clear", lambda s: s.clear()),
    ("update", lambda s: s.update({"z"})),
    ("difference_update", lambda s: s.difference_update({"a"})),
    ("intersection_update", lambda s: s.intersection_update({"a"})),
    ("symmetric_difference_update", lambda s: s.symmetric_difference_update({"a", "z"})),
    ("ior", lambda s: s.__ior__({"z"})),
    ("iand", lambda s: s.__iand__({"a"})),
    ("isub", lambda s: s.__isub__({"a"})),
    ("ixor", lambda s: s.__ixor__({"z"})),
    ("init again", lambda s: s.__init__({"z"})),  # type: ignore[misc]
]


@pytest.mark.parametrize(("name", "change"), SET_CHANGES, ids=[n for n, _ in SET_CHANGES])
def test_a_set_change_is_noted(name: str, change: Callable[[TrackedSet[str]], Any]) -> None:
    tracked = TrackedSet({"a", "b"})
    tracked.changed = False
    change(tracked)
    assert tracked != {"a", "b"}
    assert tracked.changed


def test_a_set_call_that_changes_nothing_is_not_noted() -> None:
    tracked = TrackedSet({"a"})
    tracked.changed = False
    tracked.add("a")
    tracked.discard("absent")
    assert tracked == {"a"}
    assert not tracked.changed


# --- the builder ------------------------------------------------------------------------


def from_scratch(builder: SnapshotBuilder) -> ConfigSnapshot:
    """A snapshot of the builder's state that copies everything (what ``build`` did before)."""
    return ConfigSnapshot(
        offset=builder.offset,
        connectors=MappingProxyType(dict(builder.connectors)),
        tasks=MappingProxyType(dict(builder.tasks)),
        target_states=MappingProxyType(dict(builder.target_states)),
        task_counts=MappingProxyType(dict(builder.task_counts)),
        pending_fencing=frozenset(builder.pending_fencing),
        inconsistent=frozenset(builder.inconsistent),
        extensions=MappingProxyType(dict(builder.extensions)),
        log_levels=MappingProxyType(dict(builder.log_levels)),
        term=builder.term,
        unfinished_removals=MappingProxyType(dict(builder.unfinished_removals)),
    )


Record = tuple[str, bytes | None]


def every_kind_of_record(name: str, rng: random.Random) -> list[Record]:
    """One record of each kind the config topic holds for ``name``, values and tombstones,
    well-formed and not."""
    tasks = rng.randint(0, 2)
    state = rng.choice(list(TargetState))
    return [
        (connector_key(name), encode_properties({"k": str(rng.randint(0, 3))})),
        (connector_key(name), None),
        (connector_key(name), b"{not json"),
        (task_key(name, rng.randint(0, 2)), encode_properties({"t": str(rng.randint(0, 3))})),
        (task_key(name, 0), None),
        (commit_key(name), encode_commit(tasks)),
        (commit_key(name), None),
        (commit_key(name), b'{"tasks": -1}'),
        (target_state_key(name), encode_target_state(state)),
        (target_state_key(name), None),
        (task_count_key(name), encode_task_count(tasks)),
        (task_count_key(name), None),
        (restart_key(name), encode_restart(RestartRequest(name))),
        (logger_key(name), encode_log_level(rng.choice(["DEBUG", "INFO"]))),
        (logger_key(name), None),
        (f"connect-grpc-answer-{name}", b'{"code": 0}'),
        (f"connect-grpc-answer-{name}", None),
        ("session-key", b'{"key": "a2V5", "algorithm": "HmacSHA256"}'),
        (term_marker_record(rng.randint(0, 5))[0].decode(), b'{"term": %d}' % rng.randint(0, 5)),
        (f"unknown-{name}", b"{}"),
    ]


def apply_as_the_store_does(builder: SnapshotBuilder, key: str, value: bytes | None) -> None:
    with contextlib.suppress(ValueError):
        apply_record(builder, key, value, 1)
    builder.offset += 1


def test_every_kind_of_record_builds_what_a_build_from_scratch_gives() -> None:
    rng = random.Random(25)
    builder = SnapshotBuilder()
    for name in ("a", "b", "a"):
        for key, value in every_kind_of_record(name, rng):
            apply_as_the_store_does(builder, key, value)
            assert builder.build() == from_scratch(builder), (key, value)


def test_random_records_and_builds_match_builds_from_scratch() -> None:
    rng = random.Random(1000)
    records = [r for _ in range(5) for name in "abc" for r in every_kind_of_record(name, rng)]
    builder = SnapshotBuilder()
    filled: set[str] = set()
    for _ in range(1500):
        apply_as_the_store_does(builder, *rng.choice(records))
        if rng.random() < 0.3:
            snapshot = builder.build()
            assert snapshot == from_scratch(builder)
            filled.update(f for f in SNAPSHOT_CONTAINERS if getattr(snapshot, f))
    assert builder.build() == from_scratch(builder)
    assert filled == set(SNAPSHOT_CONTAINERS)  # the mix reached every part of the state


SNAPSHOT_CONTAINERS = ("connectors", "tasks", "target_states", "task_counts", "pending_fencing",
                       "inconsistent", "extensions", "log_levels", "unfinished_removals")


def test_a_build_reuses_the_maps_no_record_changed_since_the_previous_build() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, connector_key("c"), encode_properties({"k": "v"}))
    apply_record(builder, task_key("c", 0), encode_properties({"t": "0"}))
    apply_record(builder, commit_key("c"), encode_commit(1))
    first = builder.build()

    apply_record(builder, target_state_key("c"), encode_target_state(TargetState.PAUSED))
    second = builder.build()

    assert second.target_states is not first.target_states
    assert second.target_state("c") is TargetState.PAUSED
    assert first.target_state("c") is TargetState.STARTED
    for unchanged in set(SNAPSHOT_CONTAINERS) - {"target_states"}:
        assert getattr(second, unchanged) is getattr(first, unchanged), unchanged
    assert builder.build().target_states is second.target_states


def test_a_built_snapshot_never_changes_with_the_builder() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, connector_key("c"), encode_properties({"k": "v"}))
    snapshot = builder.build()
    apply_record(builder, connector_key("c"), None)
    builder.build()
    assert snapshot.connectors == {"c": {"k": "v"}}
    assert "c" in snapshot.target_states
    with pytest.raises(TypeError):
        snapshot.connectors["d"] = {}  # type: ignore[index]


def test_a_container_put_in_place_of_the_builders_own_is_copied() -> None:
    builder = SnapshotBuilder()
    builder.build()
    builder.connectors = {"c": MappingProxyType({"k": "v"})}  # type: ignore[assignment]
    assert builder.build().connectors == {"c": {"k": "v"}}
    builder.connectors["d"] = MappingProxyType({})
    assert builder.build() == from_scratch(builder)
