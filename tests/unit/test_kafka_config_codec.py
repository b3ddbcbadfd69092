"""The pure part of the config store: keys, values and applying records to a snapshot."""

from __future__ import annotations

import dataclasses
import json

import pytest

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.storage.config_codec import (
    REMOVAL_CHANGE_INDEX,
    RawRecord,
    carried_headers,
    carried_record,
    carried_records,
    commit_key,
    connector_config_records,
    connector_key,
    decode_target_state,
    encode_commit,
    encode_properties,
    encode_restart,
    encode_target_state,
    encode_task_count,
    extension_record,
    log_level_records,
    parse_task_key,
    removal_cleanup_records,
    removal_records,
    target_state_key,
    task_config_records,
    task_count_key,
    task_key,
    term_marker_record,
    written_term,
)
from connect_grpc.storage.config_snapshot import (
    NO_OFFSET,
    ClusterLogLevel,
    ConfigChange,
    ConfigSnapshot,
    SnapshotBuilder,
    apply_record,
)
from connect_grpc.storage.log_records import LogRecord


def _tasks(builder: SnapshotBuilder, name: str, configs: list[dict[str, str]]) -> None:
    """Applies the task records of ``configs`` without their commit."""
    for n, config in enumerate(configs):
        apply_record(builder, task_key(name, n), encode_properties(config))


def _commit(builder: SnapshotBuilder, name: str, count: int) -> ConfigChange | None:
    return apply_record(builder, commit_key(name), encode_commit(count))


def test_keys_have_kafka_connect_form() -> None:
    assert connector_key("c") == "connector-c"
    assert task_key("my-conn", 3) == "task-my-conn-3"
    assert commit_key("c") == "commit-c"
    assert target_state_key("c") == "target-state-c"
    assert task_count_key("c") == "tasks-fencing-c"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("task-c-0", ("c", 0)),
        ("task-my-dashed-conn-12", ("my-dashed-conn", 12)),
        ("task-c", None),
        ("task--1", None),
        ("task-c-x", None),
        ("tasks-fencing-c", None),
    ],
)
def test_parse_task_key(key: str, expected: tuple[str, int] | None) -> None:
    assert parse_task_key(key) == expected


def test_values_have_kafka_json_shapes() -> None:
    assert json.loads(encode_properties({"a": "1"})) == {"properties": {"a": "1"}}
    assert json.loads(encode_commit(2)) == {"tasks": 2}
    assert json.loads(encode_task_count(4)) == {"task-count": 4}
    assert json.loads(encode_restart(RestartRequest("c", include_tasks=True))) == {
        "include-tasks": True,
        "only-failed": False,
    }


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (TargetState.STARTED, {"state": "STARTED", "state.v2": "STARTED"}),
        (TargetState.PAUSED, {"state": "PAUSED", "state.v2": "PAUSED"}),
        (TargetState.STOPPED, {"state": "PAUSED", "state.v2": "STOPPED"}),
    ],
)
def test_target_state_value(state: TargetState, expected: dict[str, str]) -> None:
    raw = encode_target_state(state)
    assert json.loads(raw) == expected
    assert decode_target_state(raw) is state


def test_state_v2_is_preferred_and_state_is_the_fallback() -> None:
    assert decode_target_state(b'{"state":"PAUSED","state.v2":"STOPPED"}') is TargetState.STOPPED
    assert decode_target_state(b'{"state":"PAUSED"}') is TargetState.PAUSED
    with pytest.raises(ValueError):
        decode_target_state(b'{"state":"SLEEPING"}')


def test_connector_record_sets_config_and_default_target_state() -> None:
    builder = SnapshotBuilder()
    change = apply_record(builder, "connector-c", encode_properties({"k": "v"}))

    snapshot = builder.build()
    assert change == ConfigChange("connector", "c")
    assert snapshot.connectors == {"c": {"k": "v"}}
    assert snapshot.target_state("c") is TargetState.STARTED
    assert snapshot.offset == NO_OFFSET


def test_target_state_written_before_the_connector_is_kept() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "target-state-c", encode_target_state(TargetState.STOPPED))
    apply_record(builder, "connector-c", encode_properties({}))
    assert builder.build().target_state("c") is TargetState.STOPPED


def test_task_configs_without_a_commit_are_not_visible() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "connector-c", encode_properties({}))
    _tasks(builder, "c", [{"t": "0"}, {"t": "1"}])
    assert builder.build().task_configs("c") == ()

    change = _commit(builder, "c", 2)
    assert change == ConfigChange("tasks", "c")
    assert builder.build().task_configs("c") == ({"t": "0"}, {"t": "1"})


def test_a_newer_commit_replaces_the_task_set() -> None:
    builder = SnapshotBuilder()
    _tasks(builder, "c", [{"t": "0"}, {"t": "1"}, {"t": "2"}])
    _commit(builder, "c", 3)
    _tasks(builder, "c", [{"t": "new"}])
    assert len(builder.build().task_configs("c")) == 3

    _commit(builder, "c", 1)
    assert builder.build().task_configs("c") == ({"t": "new"},)


def test_a_commit_to_zero_tasks_empties_the_set() -> None:
    builder = SnapshotBuilder()
    _tasks(builder, "c", [{"t": "0"}])
    _commit(builder, "c", 1)
    _commit(builder, "c", 0)
    snapshot = builder.build()
    assert snapshot.task_configs("c") == ()
    assert "c" in snapshot.tasks


def test_an_incomplete_commit_marks_the_connector_inconsistent() -> None:
    builder = SnapshotBuilder()
    _tasks(builder, "c", [{"t": "0"}])
    _commit(builder, "c", 1)
    apply_record(builder, task_key("c", 1), encode_properties({"t": "1"}))
    _commit(builder, "c", 2)

    snapshot = builder.build()
    assert snapshot.inconsistent == {"c"}
    assert snapshot.task_configs("c") == ({"t": "0"},)

    _tasks(builder, "c", [{"a": "0"}, {"a": "1"}])
    _commit(builder, "c", 2)
    assert builder.build().inconsistent == frozenset()


def test_connector_tombstone_removes_tasks_target_state_and_pending_configs() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "target-state-c", encode_target_state(TargetState.PAUSED))
    apply_record(builder, "connector-c", encode_properties({"k": "v"}))
    _tasks(builder, "c", [{"t": "0"}])
    _commit(builder, "c", 1)
    apply_record(builder, "tasks-fencing-c", encode_task_count(1))
    _tasks(builder, "c", [{"pending": "x"}])

    change = apply_record(builder, "connector-c", None)

    snapshot = builder.build()
    assert change == ConfigChange("connector", "c")
    assert not snapshot.contains("c")
    assert snapshot.task_configs("c") == ()
    assert snapshot.target_state("c") is None
    assert snapshot.task_counts == {}
    _commit(builder, "c", 1)
    assert builder.build().inconsistent == {"c"}


def test_target_state_tombstone_falls_back_to_started_for_a_live_connector() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "connector-c", encode_properties({}))
    apply_record(builder, "target-state-c", encode_target_state(TargetState.PAUSED))
    assert apply_record(builder, "target-state-c", None) is None
    assert builder.build().target_state("c") is TargetState.STARTED


@pytest.mark.parametrize(
    ("value", "include_tasks", "only_failed"),
    [
        (b'{"include-tasks":true,"only-failed":true}', True, True),
        (b'{"include-tasks":true}', True, False),
        (b'{"only-failed":true}', False, True),
        (b"{}", False, False),
        (b'{"include-tasks":"yes"}', False, False),
    ],
)
def test_restart_records_are_reported_not_kept(
    value: bytes, include_tasks: bool, only_failed: bool
) -> None:
    builder = SnapshotBuilder()
    before = builder.build()

    change = apply_record(builder, "restart-connector-my-c", value)

    expected = RestartRequest("my-c", include_tasks=include_tasks, only_failed=only_failed)
    assert change == ConfigChange("restart", "my-c", expected)
    assert builder.build() == before


def test_task_count_records() -> None:
    builder = SnapshotBuilder()
    assert apply_record(builder, "tasks-fencing-c", encode_task_count(3)) == ConfigChange(
        "task_count", "c"
    )
    assert builder.build().task_counts == {"c": 3}
    apply_record(builder, "tasks-fencing-c", None)
    assert builder.build().task_counts == {}


def test_new_task_configs_are_pending_fencing_until_a_later_task_count_record() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "connector-c", encode_properties({}))
    assert builder.build().pending_fencing == frozenset()
    _tasks(builder, "c", [{"t": "0"}, {"t": "1"}])
    _commit(builder, "c", 2)
    assert builder.build().pending_fencing == {"c"}
    apply_record(builder, "tasks-fencing-c", encode_task_count(2))
    assert builder.build().pending_fencing == frozenset()

    _tasks(builder, "c", [{"t": "0"}])  # a commit that names a missing task changes nothing
    _commit(builder, "c", 2)
    assert builder.build().pending_fencing == frozenset()
    _tasks(builder, "c", [{"t": "0"}])
    _commit(builder, "c", 1)  # the next generation: pending again
    assert builder.build().pending_fencing == {"c"}
    apply_record(builder, "connector-c", None)  # deleted: nothing left to fence for
    assert builder.build().pending_fencing == frozenset()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("connector-c", b"not json"),
        ("connector-c", b'{"properties":{"k":1}}'),
        ("connector-c", b'{"config":{}}'),
        ("commit-c", b'{"tasks":"2"}'),
        ("commit-c", b'{"tasks":-1}'),
        ("tasks-fencing-c", b"[]"),
        ("target-state-c", b'{"state.v2":1}'),
        ("restart-connector-c", b"[true]"),
        ("connect-grpc-term-3", b'{"term":"3"}'),
        ("connect-grpc-term-3", b'{"term":-1}'),
        ("connect-grpc-term-3", b"[3]"),
    ],
)
def test_malformed_values_raise_and_change_nothing(key: str, value: bytes) -> None:
    builder = SnapshotBuilder()
    before = builder.build()
    with pytest.raises(ValueError):
        apply_record(builder, key, value)
    assert builder.build() == before


def test_unknown_keys_are_ignored() -> None:
    builder = SnapshotBuilder()
    assert apply_record(builder, "some-future-record-x", b'{"level":"DEBUG"}') is None
    assert builder.build() == SnapshotBuilder().build()


def test_a_cluster_log_level_is_kept_with_its_timestamp_and_reported() -> None:
    builder = SnapshotBuilder()
    change = apply_record(builder, "logger-cluster-org.foo", b'{"level":"DEBUG"}', 1_700)
    assert change == ConfigChange("logger", "org.foo")
    apply_record(builder, "logger-cluster-org.foo", b'{"level":"WARN"}', 1_800)
    assert builder.build().log_levels == {"org.foo": ClusterLogLevel("WARN", 1_800)}


def test_a_cluster_log_level_record_is_written_in_kafka_connects_format() -> None:
    [(key, value)] = log_level_records("connect_grpc.runtime", "DEBUG")
    assert key == b"logger-cluster-connect_grpc.runtime"
    assert value is not None and json.loads(value) == {"level": "DEBUG"}
    builder = SnapshotBuilder()
    apply_record(builder, key.decode(), value)
    assert builder.build().log_levels["connect_grpc.runtime"] == ClusterLogLevel("DEBUG")


@pytest.mark.parametrize("value", [b'{"level":5}', b'{"other":"DEBUG"}', b'"DEBUG"'])
def test_a_malformed_log_level_record_is_refused(value: bytes) -> None:
    builder = SnapshotBuilder()
    with pytest.raises(ValueError):
        apply_record(builder, "logger-cluster-org.foo", value)
    assert builder.build().log_levels == {}


def test_the_session_key_record_is_kept_until_its_tombstone() -> None:
    builder = SnapshotBuilder()
    value = {"key": "AAEC", "algorithm": "HmacSHA256", "creation-timestamp": 5}
    change = apply_record(builder, "session-key", json.dumps(value).encode())
    assert change == ConfigChange("extension", "session-key")
    assert builder.build().extensions["session-key"] == value
    apply_record(builder, "session-key", None)
    assert "session-key" not in builder.build().extensions


def test_snapshot_is_immutable() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "connector-c", encode_properties({"k": "v"}))
    snapshot = builder.build()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.offset = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.connectors["d"] = {}  # type: ignore[index]
    apply_record(builder, "connector-c", None)
    assert snapshot.contains("c")


def test_null_property_values_read_as_not_set() -> None:
    builder = SnapshotBuilder()
    apply_record(builder, "connector-c", b'{"properties":{"connector.class":"X","topic":null}}')
    assert dict(builder.build().connectors["c"]) == {"connector.class": "X"}


def test_term_markers_only_raise_the_term_and_are_not_kept() -> None:
    builder = SnapshotBuilder()
    for term in (2, 5, 3):
        key, value = term_marker_record(term)
        assert apply_record(builder, key.decode(), value) is None
    snapshot = builder.build()
    assert snapshot.term == 5
    assert snapshot.extensions == {}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [((), None), ((("connect-grpc-term", b"7"),), 7), ((("other", b"x"),), None)],
)
def test_the_written_term_is_read_from_the_records_header(
    headers: tuple[tuple[str, bytes], ...], expected: int | None
) -> None:
    assert written_term(LogRecord(b"k", b"v", 0, 0, None, headers)) == expected


@pytest.mark.parametrize("raw", [b"-1", b"x", b"", b"1.5"])
def test_a_malformed_term_header_raises(raw: bytes) -> None:
    with pytest.raises(ValueError, match="connect-grpc-term"):
        written_term(LogRecord(b"k", b"v", 0, 0, None, (("connect-grpc-term", raw),)))


@pytest.mark.parametrize(
    "raw", [b"[]", b'{"key": "connector-c", "value": {}}', b'{"value": 1}', b"not json"]
)
def test_a_carried_record_must_be_an_extension_record(raw: bytes) -> None:
    """A header carrying anything but a ``connect-grpc-`` record is malformed: the record
    that carries it is then skipped whole, as any malformed record is."""
    with pytest.raises(ValueError):
        carried_record(LogRecord(b"k", b"v", 0, 0, None, (("connect-grpc-carried", raw),)))


def test_a_carried_record_round_trips() -> None:
    headers = (("connect-grpc-carried", b'{"key":"connect-grpc-request-x","value":{"a":1}}'),)
    assert carried_record(LogRecord(b"k", b"v", 0, 0, None, headers)) == (
        "connect-grpc-request-x", b'{"a":1}'
    )
    assert carried_record(LogRecord(b"k", b"v", 0, 0)) is None


def test_several_carried_records_round_trip_in_order() -> None:
    """One record may carry several extension records, a header each; a record of an
    earlier build carries one at most, and reads as before."""
    carried = [extension_record("connect-grpc-request-x", {"a": 1}),
               extension_record("connect-grpc-auto-restart-c", None)]
    record = LogRecord(b"k", b"v", 0, 0, None, carried_headers(carried))
    assert carried_records(record) == [
        ("connect-grpc-request-x", b'{"a":1}'), ("connect-grpc-auto-restart-c", None)
    ]
    assert carried_record(record) == ("connect-grpc-auto-restart-c", None)
    assert carried_records(LogRecord(b"k", b"v", 0, 0)) == []


# --- a removal written without a transaction (issue 25) ---------------------------------

#: A PAUSED connector with two tasks, as the topic holds it.
PAUSED_WITH_TASKS = [
    *connector_config_records("c", {"k": "v"}, TargetState.PAUSED),
    *task_config_records("c", [{"t": "0"}, {"t": "1"}]),
]


def _applied(records: list[RawRecord], builder: SnapshotBuilder | None = None) -> SnapshotBuilder:
    builder = builder or SnapshotBuilder()
    for key, value in records:
        apply_record(builder, key.decode(), value)
    return builder


def _compacted(records: list[RawRecord]) -> list[RawRecord]:
    """What a reader from the topic's start reads once compaction kept only each key's
    latest record and, ``delete.retention.ms`` later, dropped the tombstones."""
    latest = {key: (offset, value) for offset, (key, value) in enumerate(records)}
    kept = sorted((offset, key, value) for key, (offset, value) in latest.items())
    return [(key, value) for _, key, value in kept if value is not None]


def _shows_c_untouched(snapshot: ConfigSnapshot) -> bool:
    return (
        snapshot.connectors == {"c": {"k": "v"}}
        and snapshot.target_state("c") is TargetState.PAUSED
        and snapshot.task_configs("c") == ({"t": "0"}, {"t": "1"})
    )


def _shows_c_deleted(snapshot: ConfigSnapshot) -> bool:
    return (
        not snapshot.connectors
        and not snapshot.target_states
        and not snapshot.tasks
        and not snapshot.task_counts
        and not snapshot.pending_fencing
    )


def test_a_removal_is_its_tombstone_first_then_task_and_target_state_tombstones() -> None:
    assert removal_records("c", 2) == [
        (b"connector-c", None),
        (b"task-c-0", None),
        (b"task-c-1", None),
        (b"target-state-c", None),
    ]
    assert removal_records("c", 2)[REMOVAL_CHANGE_INDEX] == (b"connector-c", None)
    assert removal_records("c", 2)[1:] == removal_cleanup_records("c", 2)


@pytest.mark.parametrize("cut", range(len(removal_records("c", 2)) + 1))
def test_every_prefix_of_a_removal_leaves_the_connector_untouched_or_deleted(cut: int) -> None:
    """A kill -9 mid-way, or a deposed leader whose later records were refused: a PAUSED
    connector never starts, never keeps half its tasks; once its tombstone is read its
    removal stays unfinished until the target-state tombstone, the last record."""
    removal = removal_records("c", 2)
    snapshot = _applied(PAUSED_WITH_TASKS + removal[:cut]).build()
    if cut <= REMOVAL_CHANGE_INDEX:
        assert _shows_c_untouched(snapshot)
        assert not snapshot.unfinished_removals
    else:
        assert _shows_c_deleted(snapshot)
        assert snapshot.unfinished_removals == ({} if cut == len(removal) else {"c": 2})


def test_a_removal_cut_short_is_finished_before_compaction_could_bring_its_records_back() -> None:
    """Once compaction dropped the connector tombstone, a reader from the topic's start
    would see the target state and task configs the cut-short removal left; the cleanup
    the leader writes (the same records) leaves nothing of the connector to read."""
    cut_short = PAUSED_WITH_TASKS + removal_records("c", 2)[:1]
    resurrected = _applied(_compacted(cut_short)).build()
    assert resurrected.target_state("c") is TargetState.PAUSED
    assert len(resurrected.task_configs("c")) == 2

    leftovers = removal_cleanup_records("c", _applied(cut_short).build().unfinished_removals["c"])
    finished = _applied(_compacted(cut_short + leftovers)).build()
    assert _shows_c_deleted(finished)
    assert not finished.unfinished_removals


def test_task_configs_held_back_for_a_commit_count_in_an_unfinished_removal() -> None:
    builder = _applied(PAUSED_WITH_TASKS + task_config_records("c", [{}, {}, {}])[:3])
    _applied(removal_records("c", 0)[:1], builder)
    assert builder.build().unfinished_removals == {"c": 3}


def test_a_create_that_finishes_a_removal_cut_short_shows_no_task_of_its_predecessor() -> None:
    """The leader's create of the name begins with the unfinished removal's cleanup: the
    new connector has its own target state and no task, in a live view and in the view
    of a reader from the start of the compacted topic."""
    history = PAUSED_WITH_TASKS + removal_records("c", 2)[:1]
    history += removal_cleanup_records("c", 2)
    history += connector_config_records("c", {"k": "new"}, TargetState.STOPPED)
    for snapshot in (_applied(history).build(), _applied(_compacted(history)).build()):
        assert snapshot.connectors == {"c": {"k": "new"}}
        assert snapshot.target_state("c") is TargetState.STOPPED
        assert snapshot.task_configs("c") == ()
        assert not snapshot.unfinished_removals


def test_a_removals_leftovers_change_nothing_shown_and_a_create_overwrites_them() -> None:
    """A target state and task configs of a connector without config (a reader from the
    start of a compacted topic) show no connector; a create of the name writes its target
    state first, and its task configs replace the predecessor's when they are committed."""
    builder = _applied(_compacted(PAUSED_WITH_TASKS + removal_records("c", 2)[:1]))
    assert not builder.build().contains("c")
    _applied(connector_config_records("c", {"k": "new"}, TargetState.STARTED), builder)
    _applied(task_config_records("c", [{"t": "new"}]), builder)
    snapshot = builder.build()
    assert snapshot.target_state("c") is TargetState.STARTED
    assert snapshot.task_configs("c") == ({"t": "new"},)


def test_a_connector_record_ends_an_unfinished_removal() -> None:
    """A create by another writer (Kafka Connect, an older worker) takes the name over."""
    builder = _applied(PAUSED_WITH_TASKS + removal_records("c", 2)[:1])
    _applied(connector_config_records("c", {"k": "new"}), builder)
    assert not builder.build().unfinished_removals
