"""KIP-745 restarts: the config-topic record, the restart plan, and the standalone herder's
RestartConnector/RestartTask for every flag combination (with a synchronous runtime
stand-in that also counts task starts)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from connect_grpc.herder.restart import build_restart_plan
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    RestartRequest,
    State,
    TargetState,
    TaskId,
    TaskStatus,
)
from connect_grpc.kernel.errors import ConnectError, InstanceFailedError, NotFoundError
from connect_grpc.storage.config_codec import (
    parse_restart_record,
    restart_key,
    restart_record_value,
)
from connect_grpc.testing.plugins import count, read_events
from tests.unit.fake_worker import FakeWorker

pytestmark = pytest.mark.timeout(30)

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"
FLAGS = [(False, False), (True, False), (False, True), (True, True)]
FLAG_IDS = ["plain", "include_tasks", "only_failed", "include_tasks+only_failed"]

R, F, P, S, X = State.RUNNING, State.FAILED, State.PAUSED, State.STOPPED, State.RESTARTING


# ---------------------------------------------------------------------------- the record


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
def test_record_round_trips(include_tasks: bool, only_failed: bool) -> None:
    request = RestartRequest("c", include_tasks, only_failed)
    value = restart_record_value(request)
    assert value == {"include-tasks": include_tasks, "only-failed": only_failed}
    assert parse_restart_record("c", value) == request


def test_record_key_uses_kafka_prefix() -> None:
    assert restart_key("my-conn") == "restart-connector-my-conn"


@pytest.mark.parametrize(
    "value",
    [{}, {"include-tasks": "true", "only-failed": 1}, {"include-tasks": None}, {"other": True}],
)
def test_record_missing_or_non_boolean_fields_read_as_false(value: dict[str, object]) -> None:
    assert parse_restart_record("c", value) == RestartRequest("c", False, False)


def test_record_one_field_present() -> None:
    assert parse_restart_record("c", {"only-failed": True}) == RestartRequest("c", False, True)
    assert parse_restart_record("c", {"include-tasks": True}) == RestartRequest("c", True, False)


@pytest.mark.parametrize("value", [None, "x", [True, False], 3])
def test_record_that_is_not_an_object_is_rejected(value: object) -> None:
    with pytest.raises(ValueError, match="not an object"):
        parse_restart_record("c", value)


# ---------------------------------------------------------------------------- the plan


def _status(connector: State, *tasks: State) -> ConnectorStatus:
    return ConnectorStatus(
        "c",
        InstanceStatus(connector, "w1", "boom" if connector is F else ""),
        tuple(
            TaskStatus(i, InstanceStatus(t, "w1", "boom" if t is F else ""))
            for i, t in enumerate(tasks)
        ),
        ConnectorType.SOURCE,
    )


def _shown(status: ConnectorStatus) -> tuple[State, list[State]]:
    return status.connector.state, [t.status.state for t in status.tasks]


@pytest.mark.parametrize(
    ("flags", "before", "connector", "tasks", "shown"),
    [
        # healthy connector
        ((False, False), (R, R, R), True, [], (X, [R, R])),
        ((True, False), (R, R, R), True, [0, 1], (X, [X, X])),
        ((False, True), (R, R, R), False, [], (R, [R, R])),
        ((True, True), (R, R, R), False, [], (R, [R, R])),
        # failed connector, healthy tasks
        ((False, True), (F, R, R), True, [], (X, [R, R])),
        ((True, True), (F, R, R), True, [], (X, [R, R])),
        # one failed task
        ((False, False), (R, R, F), True, [], (X, [R, F])),
        ((True, False), (R, R, F), True, [0, 1], (X, [X, X])),
        ((False, True), (R, R, F), False, [], (R, [R, F])),
        ((True, True), (R, R, F), False, [1], (R, [R, X])),
        # everything failed
        ((True, True), (F, F, F), True, [0, 1], (X, [X, X])),
        # paused and stopped connectors
        ((True, False), (P, P, P), True, [0, 1], (X, [X, X])),
        ((True, True), (P, P, P), False, [], (P, [P, P])),
        ((True, False), (S,), True, [], (X, [])),
    ],
)
def test_plan_chooses_instances_and_shows_them_restarting(
    flags: tuple[bool, bool],
    before: tuple[State, ...],
    connector: bool,
    tasks: list[int],
    shown: tuple[State, list[State]],
) -> None:
    plan = build_restart_plan(RestartRequest("c", *flags), _status(*before))
    assert plan.restart_connector is connector
    assert plan.task_ids == tuple(TaskId("c", t) for t in tasks)
    assert _shown(plan.status) == shown
    assert plan.empty is (not connector and not tasks)


def test_plan_keeps_worker_id_and_trace() -> None:
    plan = build_restart_plan(RestartRequest("c", True, True), _status(F, R, F))
    assert plan.status.connector == InstanceStatus(X, "w1", "boom")
    assert plan.status.tasks[0].status == InstanceStatus(R, "w1", "")
    assert plan.status.tasks[1].status == InstanceStatus(X, "w1", "boom")
    assert plan.status.name == "c" and plan.status.type is ConnectorType.SOURCE


# ---------------------------------------------------------------------------- the herder


@pytest.fixture
def events(tmp_path: Path) -> Path:
    return tmp_path / "events.jsonl"


def _config(events: Path, tasks: int = 2, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SOURCE,
        "tasks.max": str(tasks),
        "topic": "t",
        "test.events.file": str(events),
        **extra,
    }


def _states(herder: StandaloneHerder, name: str = "c") -> tuple[State, list[State]]:
    return _shown(herder.connector_status(name))


def _settled(herder: StandaloneHerder, name: str = "c") -> tuple[State, list[State]]:
    """The states once no instance shows RESTARTING any more (the restart thread is done)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        states = _states(herder, name)
        if X not in (states[0], *states[1]):
            return states
        time.sleep(0.01)
    raise AssertionError(f"still restarting: {_states(herder, name)}")


@dataclass
class Counts:
    connector_starts: int
    connector_stops: int
    task_starts: list[int]
    task_stops: list[int]


def _counts(worker: FakeWorker, events: Path, tasks: int = 2) -> Counts:
    return Counts(
        count(read_events(events), "connector_start"),
        len(worker.connector_stops),
        [worker.task_starts.count(TaskId("c", t)) for t in range(tasks)],
        [sum(1 for s, _ in worker.task_stops if s == TaskId("c", t)) for t in range(tasks)],
    )


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
def test_unknown_connector_is_not_found(
    herder: StandaloneHerder, include_tasks: bool, only_failed: bool
) -> None:
    with pytest.raises(NotFoundError, match="nope"):
        herder.restart_connector(RestartRequest("nope", include_tasks, only_failed))


@pytest.mark.parametrize(
    ("flags", "restarted_connector", "restarted_tasks"),
    [((False, False), 1, 0), ((True, False), 1, 1), ((False, True), 0, 0), ((True, True), 0, 0)],
    ids=FLAG_IDS,
)
def test_running_connector(
    herder: StandaloneHerder,
    worker_holder: dict[str, FakeWorker],
    events: Path,
    flags: tuple[bool, bool],
    restarted_connector: int,
    restarted_tasks: int,
) -> None:
    herder.create_connector("c", _config(events), TargetState.STARTED)
    worker = worker_holder["worker"]
    response = herder.restart_connector(RestartRequest("c", *flags))
    if flags == (False, False):
        assert response is None
    else:
        assert response is not None
        expected_connector = X if restarted_connector else R
        assert _shown(response) == (expected_connector, [X if restarted_tasks else R] * 2)
    assert _settled(herder) == (R, [R, R])
    assert _counts(worker, events) == Counts(
        1 + restarted_connector, restarted_connector,
        [1 + restarted_tasks] * 2, [restarted_tasks] * 2,
    )


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
def test_failed_connector_restarts_and_fails_again(
    herder: StandaloneHerder,
    worker_holder: dict[str, FakeWorker],
    events: Path,
    include_tasks: bool,
    only_failed: bool,
) -> None:
    config = _config(events, 2, **{"test.fail.connector.start": "true"})
    herder.create_connector("c", config, TargetState.STARTED)
    assert _states(herder) == (F, [])
    request = RestartRequest("c", include_tasks, only_failed)
    if not include_tasks and not only_failed:
        # a plain restart is synchronous: its caller learns that the start failed (item 10)
        with pytest.raises(InstanceFailedError, match="Failed to start connector c"):
            herder.restart_connector(request)
    else:
        response = herder.restart_connector(request)
        assert response is not None
        assert _shown(response) == (X, [])
    assert _settled(herder) == (F, [])
    # a connector whose start raised was never started, so it is never stopped
    assert _counts(worker_holder["worker"], events, tasks=0) == Counts(2, 0, [], [])


@pytest.mark.parametrize(
    ("failing", "flags", "shown", "task_restarts"),
    [
        ({0, 1}, (False, False), None, [0, 0]),
        ({0, 1}, (True, False), (X, [X, X]), [1, 1]),
        ({0, 1}, (False, True), (R, [F, F]), [0, 0]),
        ({0, 1}, (True, True), (R, [X, X]), [1, 1]),
        ({1}, (False, False), None, [0, 0]),
        ({1}, (True, False), (X, [X, X]), [1, 1]),
        ({1}, (False, True), (R, [R, F]), [0, 0]),
        ({1}, (True, True), (R, [R, X]), [0, 1]),
    ],
)
def test_failed_tasks(
    herder: StandaloneHerder,
    worker_holder: dict[str, FakeWorker],
    events: Path,
    failing: set[int],
    flags: tuple[bool, bool],
    shown: tuple[State, list[State]] | None,
    task_restarts: list[int],
) -> None:
    worker = worker_holder["worker"]
    worker.failing_tasks = {TaskId("c", t) for t in failing}
    herder.create_connector("c", _config(events), TargetState.STARTED)
    before = [F if t in failing else R for t in range(2)]
    assert _states(herder) == (R, before)
    response = herder.restart_connector(RestartRequest("c", *flags))
    assert (response and _shown(response)) == shown
    assert _settled(herder) == (R, before)
    restarted_connector = 0 if flags[1] else 1
    assert _counts(worker, events) == Counts(
        1 + restarted_connector, restarted_connector,
        [1 + n for n in task_restarts], task_restarts,
    )


def test_failed_tasks_run_after_the_cause_is_fixed(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker], events: Path
) -> None:
    worker = worker_holder["worker"]
    worker.failing_tasks = {TaskId("c", 0), TaskId("c", 1)}
    herder.create_connector("c", _config(events), TargetState.STARTED)
    worker.failing_tasks = set()
    herder.restart_connector(RestartRequest("c", include_tasks=True, only_failed=True))
    assert _settled(herder) == (R, [R, R])
    assert _counts(worker, events) == Counts(1, 0, [2, 2], [1, 1])


def test_only_failed_on_healthy_connector_restarts_nothing(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker], events: Path
) -> None:
    herder.create_connector("c", _config(events), TargetState.STARTED)
    for include_tasks in (False, True):
        response = herder.restart_connector(RestartRequest("c", include_tasks, True))
        assert response is not None and _shown(response) == (R, [R, R])
        assert _states(herder) == (R, [R, R])
    assert _counts(worker_holder["worker"], events) == Counts(1, 0, [1, 1], [0, 0])


def test_paused_connector_restarts_into_paused(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker], events: Path
) -> None:
    herder.create_connector("c", _config(events), TargetState.STARTED)
    herder.pause_connector("c")
    assert _states(herder) == (P, [P, P])
    response = herder.restart_connector(RestartRequest("c", include_tasks=True))
    assert response is not None and _shown(response) == (X, [X, X])
    assert _settled(herder) == (P, [P, P])
    assert worker_holder["worker"].tasks == {TaskId("c", 0): TargetState.PAUSED,
                                      TaskId("c", 1): TargetState.PAUSED}
    # the paused connector's plugin was stopped by the pause and is not started again
    assert _counts(worker_holder["worker"], events) == Counts(1, 1, [2, 2], [1, 1])
    herder.resume_connector("c")
    assert _states(herder) == (R, [R, R])


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
def test_stopped_connector_restarts_its_instance_into_stopped(
    herder: StandaloneHerder,
    worker_holder: dict[str, FakeWorker],
    events: Path,
    include_tasks: bool,
    only_failed: bool,
) -> None:
    herder.create_connector("c", _config(events), TargetState.STOPPED)
    response = herder.restart_connector(RestartRequest("c", include_tasks, only_failed))
    if response is not None:
        assert _shown(response) == ((S if only_failed else X), [])
    assert _settled(herder) == (S, [])
    assert read_events(events) == []
    assert worker_holder["worker"].task_starts == []
    assert "c" in worker_holder["worker"].connectors


def test_restart_task_runs_a_failed_task_once_fixed(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker], events: Path
) -> None:
    worker = worker_holder["worker"]
    worker.failing_tasks = {TaskId("c", 1)}
    herder.create_connector("c", _config(events), TargetState.STARTED)
    with pytest.raises(ConnectError, match="Failed to start task c-1"):
        herder.restart_task(TaskId("c", 1))
    assert _states(herder) == (R, [R, F])
    worker.failing_tasks = set()
    herder.restart_task(TaskId("c", 1))
    assert _states(herder) == (R, [R, R])
    assert _counts(worker, events) == Counts(1, 0, [1, 3], [0, 2])


def test_restart_task_unknown_connector_or_task_is_not_found(
    herder: StandaloneHerder, events: Path
) -> None:
    herder.create_connector("c", _config(events), TargetState.STARTED)
    for task in (TaskId("nope", 0), TaskId("c", 2), TaskId("c", -1)):
        with pytest.raises(NotFoundError):
            herder.restart_task(task)
    herder.stop_connector("c")
    with pytest.raises(NotFoundError):
        herder.restart_task(TaskId("c", 0))
