"""The pure parts of the Kafka-topic stores: status keys and values, offset records, freshness."""

from __future__ import annotations

import json
from typing import Any

import pytest

from connect_grpc.kernel.domain import InstanceStatus, PlacementKind, State, TaskId, TaskPlacement
from connect_grpc.storage.kafka_offsets import decode_record
from connect_grpc.storage.log_records import Freshness, LogRecord
from connect_grpc.storage.offsets_codec import encode_key, encode_value
from connect_grpc.storage.status_codec import (
    connector_key,
    decode_status,
    encode_status,
    parse_key,
    parse_task_key,
    task_key,
)
from tests.unit.status_stores import unstarted_store

MAX_LONG = 2**63 - 1


def _record(
    key: bytes | None, value: bytes | None, partition: int = 0, offset: int = 0
) -> LogRecord:
    return LogRecord(key, value, partition, offset)


def test_status_keys_have_kafka_connect_form() -> None:
    assert connector_key("my-conn") == b"status-connector-my-conn"
    assert task_key(TaskId("my-conn", 12)) == b"status-task-my-conn-12"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("status-task-conn-0", TaskId("conn", 0)),
        ("status-task-my-dashed-conn-17", TaskId("my-dashed-conn", 17)),
        ("status-task-a--b-3", TaskId("a--b", 3)),
        ("status-task-conn-7-2", TaskId("conn-7", 2)),
        ("status-task-conn", None),
        ("status-task--4", None),
        ("status-task-conn-", None),
        ("status-task-conn-x", None),
        ("status-task-conn-\u0661", None),
        ("status-connector-conn-1", None),
    ],
)
def test_parse_task_key(key: str, expected: TaskId | None) -> None:
    assert parse_task_key(key) == expected


def test_task_keys_round_trip_with_dashes() -> None:
    for task in (TaskId("a", 0), TaskId("a-b-c", 4), TaskId("x-1", 10)):
        assert parse_key(task_key(task)) == task


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"status-connector-conn", "conn"),
        (b"status-connector-my-conn-1", "my-conn-1"),
        (b"status-task-my-conn-1", TaskId("my-conn", 1)),
        (b"status-connector-", None),
        (b"status-topic-t1:connector-conn", None),
        (b"something-else", None),
        (b"\xff\xfe", None),
        (None, None),
    ],
)
def test_parse_key(raw: bytes | None, expected: object) -> None:
    assert parse_key(raw) == expected


def test_status_value_has_kafka_field_names() -> None:
    raw = encode_status(InstanceStatus(State.RUNNING, "w1"), 3)
    assert json.loads(raw) == {
        "state": "RUNNING",
        "trace": None,
        "worker_id": "w1",
        "generation": 3,
    }


def test_status_value_round_trips() -> None:
    status = InstanceStatus(State.FAILED, "10.0.0.1:8083", "Traceback ...\nboom")
    assert decode_status(encode_status(status, 7)) == (status, 7)


def test_a_task_status_says_where_it_runs_in_a_key_of_its_own() -> None:
    placement = TaskPlacement(PlacementKind.SPARK_EXECUTOR, "node-7")
    status = InstanceStatus(State.RUNNING, "w1", placement=placement)
    raw = encode_status(status, 3)
    assert json.loads(raw)["placement"] == {"kind": "spark-executor", "host": "node-7"}
    assert decode_status(raw) == (status, 3)


@pytest.mark.parametrize(
    "placement",
    [None, "driver", {"kind": "gpu", "host": "h"}, {"kind": "driver", "host": 7}, {"host": "h"}],
)
def test_a_placement_that_is_not_ours_is_ignored_not_the_status(placement: object) -> None:
    raw = json.dumps({"state": "RUNNING", "trace": None, "worker_id": "w", "generation": 1,
                      "placement": placement}).encode()
    assert decode_status(raw) == (InstanceStatus(State.RUNNING, "w"), 1)


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'{"state": "DESTROYED", "trace": null, "worker_id": "w", "generation": 0}',
        b'{"state": "RUNNING", "trace": 5, "worker_id": "w", "generation": 0}',
        b'{"state": "RUNNING", "trace": null, "generation": 0}',
        b'{"state": "RUNNING", "trace": null, "worker_id": "w", "generation": "1"}',
        b'{"state": "RUNNING", "trace": null, "worker_id": "w", "generation": true}',
    ],
)
def test_malformed_status_values_are_rejected(raw: bytes) -> None:
    assert decode_status(raw) is None


def test_offset_record_key_is_normalised() -> None:
    raw_key = b'["conn", {"b": 1, "a": "x"}]'
    decoded = decode_record(_record(raw_key, b'{"pos": 9223372036854775807}'))
    assert decoded == ("conn", b'["conn",{"a":"x","b":1}]', ({"b": 1, "a": "x"}, {"pos": MAX_LONG}))


def test_offset_tombstone_is_a_reset() -> None:
    assert decode_record(_record(b'["conn",{"p":1}]', None)) == ("conn", b'["conn",{"p":1}]', None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"{}"),
        (b"status-connector-x", b"{}"),
        (b'["conn"]', b"{}"),
        (b'["conn",{"p":1}]', b"{not json"),
    ],
)
def test_non_offset_records_are_skipped(key: bytes | None, value: bytes) -> None:
    assert decode_record(_record(key, value)) is None


def test_freshness_ignores_older_records_of_a_key() -> None:
    freshness = Freshness()
    assert freshness.accept("k", _record(b"k", b"v", partition=2, offset=10))
    assert not freshness.accept("k", _record(b"k", b"v", partition=2, offset=10))
    assert not freshness.accept("k", _record(b"k", b"v", partition=2, offset=4))
    assert freshness.accept("k", _record(b"k", b"v", partition=2, offset=11))
    assert freshness.accept("other", _record(b"o", b"v", partition=2, offset=1))
    assert freshness.accept("k", _record(b"k", b"v", partition=0, offset=1))


def _status_record(key: bytes, offset: int, state: str, worker: str, generation: int) -> Any:
    value = f'{{"state":"{state}","trace":null,"worker_id":"{worker}","generation":{generation}}}'
    return LogRecord(key, value.encode(), 0, offset)


def test_an_older_generation_from_another_worker_never_replaces_a_newer_status() -> None:
    store = unstarted_store()
    key, task = b"status-task-c-0", TaskId("c", 0)
    apply = store._apply  # the tailing thread's entry point
    apply(_status_record(key, 0, "RUNNING", "w1", 3))
    apply(_status_record(key, 1, "RUNNING", "w2", 4))  # moved to w2 in generation 4
    apply(_status_record(key, 2, "UNASSIGNED", "w1", 3))  # w1 had not noticed yet
    assert store.get_task(task) == InstanceStatus(State.RUNNING, "w2", "")
    apply(_status_record(key, 3, "FAILED", "w2", 4))  # the owner's own updates apply
    assert store.get_task(task) == InstanceStatus(State.FAILED, "w2", "")
    apply(_status_record(key, 4, "RUNNING", "w1", 5))  # a newer generation applies
    assert store.get_task(task) == InstanceStatus(State.RUNNING, "w1", "")
    apply(LogRecord(b"status-connector-c", None, 0, 5))  # tombstones always apply
    apply(_status_record(key, 6, "RUNNING", "w3", 1))  # and reset the generation
    assert store.get_task(task) == InstanceStatus(State.RUNNING, "w3", "")


def test_a_worker_does_not_write_over_a_newer_generations_status() -> None:
    store = unstarted_store(generation=3)
    store._apply(_status_record(b"status-connector-c", 0, "RUNNING", "w2", 4))
    store.put_connector("c", InstanceStatus(State.UNASSIGNED, "w1", ""))  # no write: no broker
    assert store.get_connector("c") == InstanceStatus(State.RUNNING, "w2", "")


def test_each_extension_record_applied_is_reported_with_its_key() -> None:
    seen: list[str] = []
    store = unstarted_store(on_extension=seen.append)
    store._apply(LogRecord(b"connect-grpc-worker-w1", b'{"id":"w1"}', 0, 0))
    store._apply(LogRecord(b"connect-grpc-worker-w1", None, 0, 1))
    store._apply(_status_record(b"status-connector-c", 2, "RUNNING", "w2", 1))  # not one
    assert seen == ["connect-grpc-worker-w1", "connect-grpc-worker-w1"]
    assert "connect-grpc-worker-w1" not in store.extensions()


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"filename": "f00001"},
        {"b": 1, "a": "x", "c": None, "t": True, "f": False},
        {"é": "ü\n\"\\/\t\x00", "k": "\u2028\ud800☃"},
        {"nan": float("nan"), "inf": float("inf"), "-inf": -float("inf"), "x": 1.5e300,
         "z": -0.0, "e": 1e-7, "one": 1.0},
        {"big": 2**70, "neg": -(2**63), "zero": 0},
        {"nested": {"b": 1, "a": [1, "x"]}, "a": 1},
        {"list": [3, 2]},
    ],
)
def test_offset_keys_and_values_are_written_as_json_dumps_writes_them(
    values: dict[str, Any],
) -> None:
    canonical = json.dumps(["conn ☃", values], sort_keys=True, separators=(",", ":"))
    assert encode_key("conn ☃", values) == canonical.encode()
    assert encode_value(values) == json.dumps(values, separators=(",", ":")).encode()


def test_an_offset_with_keys_other_than_strings_is_written_as_json_writes_it() -> None:
    values: Any = {2: "b", 1: "a"}
    assert encode_key("c", values) == b'["c",{"1":"a","2":"b"}]'
    assert encode_value(values) == b'{"2":"b","1":"a"}'
