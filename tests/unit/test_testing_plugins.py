"""The instrumented test plugins: events across processes, failures on demand, records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.connectors.api import AlterOffsetsUnsupportedError, SinkRecord
from connect_grpc.testing.plugins import (
    FakeSourceTaskContext,
    InjectedFailureError,
    InstrumentedSinkConnector,
    InstrumentedSinkTask,
    InstrumentedSourceConnector,
    InstrumentedSourceTask,
    count,
    parse_task_set,
    read_events,
    record_event,
)


@pytest.fixture
def events_file(tmp_path: Path) -> Path:
    return tmp_path / "events.jsonl"


def _config(events_file: Path, **extra: str) -> dict[str, str]:
    return {"name": "conn", "test.events.file": str(events_file), "topic": "t", **extra}


def _source_tasks(
    config: dict[str, str], max_tasks: int, offsets: dict[int, int] | None = None
) -> list[InstrumentedSourceTask]:
    connector = InstrumentedSourceConnector()
    connector.start(config)
    tasks = []
    for task_config in connector.task_configs(max_tasks):
        task_id = int(task_config["task.id"])
        context = FakeSourceTaskContext("conn", task_id)
        if offsets and task_id in offsets:
            context.set_offset({"task": task_id}, {"seq": offsets[task_id]})
        task = InstrumentedSourceTask()
        task.initialize(context)
        task.start(task_config)
        tasks.append(task)
    return tasks


def test_connector_lifecycle_events(events_file: Path) -> None:
    connector = InstrumentedSourceConnector()
    connector.start(_config(events_file))
    connector.stop(connector_deleted=True)
    start, stop = read_events(events_file)
    assert start["event"] == "connector_start"
    assert stop["event"] == "connector_stop"
    assert start["connector"] == stop["connector"] == "conn"
    assert start["task"] is None and start["connector_deleted"] is None
    assert stop["connector_deleted"] is True
    assert start["instance"] == stop["instance"]
    assert isinstance(start["time"], float)
    InstrumentedSourceConnector().start(_config(events_file))
    assert read_events(events_file)[-1]["instance"] != start["instance"]


def test_task_configs_are_exactly_max_tasks_with_ids(events_file: Path) -> None:
    connector = InstrumentedSinkConnector()
    connector.start(_config(events_file, topics="t"))
    configs = connector.task_configs(3)
    assert [c["task.id"] for c in configs] == ["0", "1", "2"]
    assert all(c["test.events.file"] == str(events_file) for c in configs)


def test_connector_failures_on_demand_are_recorded_first(events_file: Path) -> None:
    connector = InstrumentedSourceConnector()
    with pytest.raises(InjectedFailureError):
        connector.start(_config(events_file, **{"test.fail.connector.start": "true"}))
    stopping = InstrumentedSinkConnector()
    stopping.start(_config(events_file, **{"test.fail.connector.stop": "true"}))
    with pytest.raises(InjectedFailureError):
        stopping.stop()
    events = read_events(events_file)
    assert count(events, "connector_start") == 2
    assert count(events, "connector_stop") == 1


def test_task_start_failure_for_listed_tasks_only(events_file: Path) -> None:
    config = _config(events_file, **{"test.fail.task.start": "1, 2"})
    connector = InstrumentedSourceConnector()
    connector.start(config)
    outcomes = []
    for task_config in connector.task_configs(3):
        task = InstrumentedSourceTask()
        try:
            task.start(task_config)
            outcomes.append("ok")
        except InjectedFailureError:
            outcomes.append("failed")
    assert outcomes == ["ok", "failed", "failed"]
    events = read_events(events_file)
    assert [count(events, "task_start", task=t) for t in range(3)] == [1, 1, 1]


def test_source_tasks_produce_their_records_and_resume_after_offsets(events_file: Path) -> None:
    tasks = _source_tasks(_config(events_file, **{"test.source.records": "4"}), 2, {1: 1})
    first = tasks[0].poll(3)
    assert [r.value for r in first] == ["0-0", "0-1", "0-2"]
    assert first[-1].source_partition == {"task": 0}
    assert first[-1].source_offset == {"seq": 2}
    assert [r.value for r in tasks[0].poll(10)] == ["0-3"]
    assert tasks[0].poll(10) == []
    assert [r.value for r in tasks[1].poll(10)] == ["1-2", "1-3"]
    polls = [e for e in read_events(events_file) if e["event"] == "task_poll"]
    assert [(e["task"], e["values"]) for e in polls] == [
        (0, ["0-0", "0-1", "0-2"]), (0, ["0-3"]), (1, ["1-2", "1-3"])
    ]


def test_poll_failure_for_all_tasks(events_file: Path) -> None:
    (task,) = _source_tasks(
        _config(events_file, **{"test.fail.task.poll": "all", "test.source.records": "1"}), 1
    )
    with pytest.raises(InjectedFailureError):
        task.poll(1)


def test_sink_task_records_puts_flushes_and_stop(events_file: Path) -> None:
    task = InstrumentedSinkTask()
    task.start({**_config(events_file, topics="t"), "task.id": "2"})
    task.put([SinkRecord("t", 0, 7, None, b"x"), SinkRecord("t", 1, 3, b"k", None)])
    task.put([])
    task.flush({("t", 0): 8})
    task.stop(connector_deleted=False)
    events = read_events(events_file)
    assert [e["event"] for e in events] == ["task_start", "task_put", "task_flush", "task_stop"]
    assert {e["task"] for e in events} == {2}
    assert events[1]["values"] == ["x", None]
    assert events[1]["positions"] == [["t", 0, 7], ["t", 1, 3]]
    assert events[2]["offsets"] == [["t", 0, 8]]
    assert events[3]["connector_deleted"] is False


def test_sink_put_failure(events_file: Path) -> None:
    task = InstrumentedSinkTask()
    task.start({**_config(events_file, **{"test.fail.task.poll": "0"}), "task.id": "0"})
    with pytest.raises(InjectedFailureError):
        task.put([SinkRecord("t", 0, 0, None, b"x")])
    assert count(read_events(events_file), "task_put") == 0


@pytest.mark.parametrize(
    ("mode", "outcome"),
    [("true", True), ("false", False), ("unsupported", AlterOffsetsUnsupportedError),
     ("invalid", ValueError)],
)
def test_alter_offsets_modes(events_file: Path, mode: str, outcome: Any) -> None:
    config = _config(events_file, **{"test.alter.offsets": mode})

    def source_call() -> bool:
        return InstrumentedSourceConnector().alter_offsets(
            config, [({"task": 0}, {"seq": 1}), ({"task": 1}, None)]
        )

    def sink_call() -> bool:
        return InstrumentedSinkConnector().alter_offsets(config, {("t", 0): 5})

    for call in (source_call, sink_call):
        if isinstance(outcome, bool):
            assert call() is outcome
        else:
            with pytest.raises(outcome):
                call()
    source_event, sink_event = read_events(events_file)
    assert source_event["event"] == sink_event["event"] == "alter_offsets"
    assert source_event["offsets"] == [[{"task": 0}, {"seq": 1}], [{"task": 1}, None]]
    assert sink_event["offsets"] == [["t", 0, 5]]


def test_validation_of_test_keys() -> None:
    errors = InstrumentedSourceConnector().validate(
        {"test.fail.task.start": "1,x", "test.alter.offsets": "maybe",
         "test.source.records": "3", "test.fail.connector.stop": "perhaps"}
    )
    assert "comma-separated list of task ids" in errors["test.fail.task.start"][0]
    assert "Must be one of true, false, unsupported, invalid" in errors["test.alter.offsets"][0]
    assert errors["topic"] == ["Required when test.source.records is greater than 0"]
    assert "Expected value to be either true or false" in errors["test.fail.connector.stop"][0]
    assert not any(InstrumentedSinkConnector().validate({}).values())


def test_parse_task_set() -> None:
    assert parse_task_set("ALL") is None
    assert parse_task_set("") == frozenset()
    assert parse_task_set(" 0, 3 ,") == frozenset({0, 3})


def test_no_events_file_means_no_events(tmp_path: Path) -> None:
    connector = InstrumentedSourceConnector()
    connector.start({"name": "quiet"})
    connector.stop()
    assert list(tmp_path.iterdir()) == []


def test_read_events_ignores_a_line_being_written(events_file: Path) -> None:
    assert read_events(events_file) == []
    record_event(str(events_file), "task_start", "c", "i", task=0)
    with events_file.open("a") as stream:
        stream.write('{"event": "task_st')
    assert [e["event"] for e in read_events(events_file)] == ["task_start"]


def test_count_filters_by_task_and_connector() -> None:
    events = [
        {"event": "task_start", "task": 0, "connector": "a"},
        {"event": "task_start", "task": 1, "connector": "a"},
        {"event": "task_start", "task": 0, "connector": "b"},
        {"event": "task_stop", "task": 0, "connector": "a"},
    ]
    assert count(events, "task_start") == 3
    assert count(events, "task_start", task=0) == 2
    assert count(events, "task_start", task=0, connector="b") == 1
    assert count(events, "connector_start") == 0


def test_concurrent_processes_append_whole_lines(events_file: Path) -> None:
    script = (
        "import sys\n"
        "from connect_grpc.testing.plugins import record_event\n"
        "for i in range(200):\n"
        "    record_event(sys.argv[1], 'task_put', 'c', sys.argv[2], task=i,"
        " values=['v' * 500])\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(events_file), f"p{n}"])
        for n in range(4)
    ]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]
    events = read_events(events_file)
    assert len(events) == 800
    assert {e["instance"] for e in events} == {"p0", "p1", "p2", "p3"}


def test_record_config_puts_the_given_config_in_the_start_events(events_file: Path) -> None:
    config = _config(events_file, **{"test.record.config": "true", "test.secret": "pw-123456"})
    _source_tasks(config, 1)
    plain = _config(events_file)
    _source_tasks(plain, 1)
    starts = [e for e in read_events(events_file) if e["event"].endswith("_start")]
    assert [e.get("config") for e in starts] == [
        config, {**config, "task.id": "0"}, None, None
    ]
