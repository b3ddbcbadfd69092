"""The standalone herder's state machine (KIP-980 create-in-state, pause/resume/stop,
delete with cleanup, reconfiguration), with a synchronous runtime stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import State, TargetState, TaskId
from connect_grpc.kernel.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from connect_grpc.testing.cluster import wait_until
from tests.unit.fake_worker import FakeWorker
from tests.unit.source_configs import source_config


def _states(herder: StandaloneHerder, name: str) -> tuple[State, list[State]]:
    status = herder.connector_status(name)
    return status.connector.state, [t.status.state for t in status.tasks]


def test_created_running_has_tasks_max_tasks(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", source_config(tmp_path, 3), TargetState.STARTED)
    assert _states(herder, "c") == (State.RUNNING, [State.RUNNING] * 3)
    assert herder.connector_config("c")["name"] == "c"


def test_created_paused_has_no_tasks_until_resumed(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.PAUSED)
    assert _states(herder, "c") == (State.PAUSED, [])
    herder.resume_connector("c")
    assert _states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING])


def test_created_stopped_has_no_tasks_until_resumed(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STOPPED)
    assert _states(herder, "c") == (State.STOPPED, [])
    assert herder.task_configs("c") == []
    herder.resume_connector("c")
    assert _states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING])


def test_pause_stop_resume_are_idempotent(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    herder.pause_connector("c")
    herder.pause_connector("c")
    assert _states(herder, "c") == (State.PAUSED, [State.PAUSED, State.PAUSED])
    herder.stop_connector("c")
    herder.stop_connector("c")
    assert _states(herder, "c") == (State.STOPPED, [])
    herder.pause_connector("c")
    assert _states(herder, "c") == (State.PAUSED, [])
    herder.resume_connector("c")
    herder.resume_connector("c")
    assert _states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING])


def test_failed_connector_can_be_stopped_fixed_and_resumed(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector(
        "c", source_config(tmp_path, **{"test.fail.connector.start": "true"}), TargetState.STARTED
    )
    state, tasks = _states(herder, "c")
    assert (state, tasks) == (State.FAILED, [])
    assert "start failed on purpose" in herder.connector_status("c").connector.trace
    herder.stop_connector("c")
    assert _states(herder, "c") == (State.STOPPED, [])
    result = herder.put_connector_config("c", source_config(tmp_path))
    assert not result.created
    assert _states(herder, "c") == (State.STOPPED, [])
    herder.resume_connector("c")
    assert _states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING])


def test_connector_whose_stop_throws_still_ends_stopped(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector(
        "c", source_config(tmp_path, **{"test.fail.connector.stop": "true"}), TargetState.STARTED
    )
    herder.stop_connector("c")
    assert _states(herder, "c") == (State.STOPPED, [])


def test_changing_tasks_max_changes_task_set(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", source_config(tmp_path, 3), TargetState.STARTED)
    herder.put_connector_config("c", source_config(tmp_path, 1))
    assert [t.id for t in herder.task_configs("c")] == [TaskId("c", 0)]
    herder.put_connector_config("c", source_config(tmp_path, 4))
    assert len(herder.connector_status("c").tasks) == 4


def test_delete_stops_tasks_and_connector_with_deleted_flag(
    herder: StandaloneHerder, tmp_path: Path, worker_holder: dict[str, FakeWorker]
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    herder.stop_connector("c")
    herder.resume_connector("c")
    worker = worker_holder["worker"]
    assert all(not deleted for _, deleted in worker.task_stops)
    assert worker.connector_stops == [("c", False)]
    herder.delete_connector("c")
    assert worker.task_stops[-2:] == [(TaskId("c", 0), True), (TaskId("c", 1), True)]
    assert worker.connector_stops[-1] == ("c", True)
    assert herder.connectors() == []
    with pytest.raises(NotFoundError):
        herder.connector_status("c")


def test_duplicate_create_is_already_exists(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    with pytest.raises(AlreadyExistsError):
        herder.create_connector("c", source_config(tmp_path), TargetState.PAUSED)
    assert _states(herder, "c")[0] is State.RUNNING


@pytest.mark.parametrize(
    "call",
    [
        lambda h: h.connector_info("nope"),
        lambda h: h.connector_config("nope"),
        lambda h: h.connector_status("nope"),
        lambda h: h.task_configs("nope"),
        lambda h: h.task_status(TaskId("nope", 0)),
        lambda h: h.pause_connector("nope"),
        lambda h: h.resume_connector("nope"),
        lambda h: h.stop_connector("nope"),
        lambda h: h.delete_connector("nope"),
    ],
)
def test_unknown_connector_is_not_found(herder: StandaloneHerder, call: object) -> None:
    with pytest.raises(NotFoundError):
        call(herder)  # type: ignore[operator]


def test_name_is_trimmed_and_empty_name_rejected(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("  spaced  ", source_config(tmp_path), TargetState.STARTED)
    assert herder.connectors() == ["spaced"]
    with pytest.raises(InvalidArgumentError) as excinfo:
        herder.create_connector("   ", source_config(tmp_path), TargetState.STARTED)
    assert excinfo.value.violations[0].field == "name"


def test_config_name_mismatch_is_rejected(herder: StandaloneHerder, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        herder.create_connector("a", source_config(tmp_path, name="b"), TargetState.STARTED)
    assert excinfo.value.violations[0].field == "config.name"
    assert herder.connectors() == []


def test_invalid_config_lists_every_error_and_creates_nothing(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    config = source_config(
        tmp_path, 0, **{"test.source.records": "-1", "test.fail.task.start": "x"}
    )
    with pytest.raises(InvalidArgumentError) as excinfo:
        herder.create_connector("c", config, TargetState.STARTED)
    fields = [v.field for v in excinfo.value.violations]
    assert sorted(fields) == [
        "config.tasks.max", "config.test.fail.task.start", "config.test.source.records"
    ]
    assert "3 error(s)" in excinfo.value.message
    assert herder.connectors() == []


def test_unknown_plugin_is_invalid_argument(herder: StandaloneHerder, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        herder.create_connector("c", {"connector.class": "no.such.Plugin"}, TargetState.STARTED)
    assert excinfo.value.violations[0].field == "config.connector.class"


def test_put_config_says_created(herder: StandaloneHerder, tmp_path: Path) -> None:
    assert herder.put_connector_config("c", source_config(tmp_path)).created
    assert not herder.put_connector_config("c", source_config(tmp_path)).created


def test_pause_keeps_target_across_config_update(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    herder.pause_connector("c")
    herder.put_connector_config("c", source_config(tmp_path, 1))
    state, tasks = _states(herder, "c")
    assert state is State.PAUSED
    assert all(t is State.PAUSED for t in tasks)


def test_a_connector_whose_config_expired_is_restarted_alone(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker], tmp_path: Path
) -> None:
    """The runtime's word that a running connector's values expired: a plain restart of the
    connector, off the caller's thread; its tasks keep running (their configs are the same).
    A stopped connector's is ignored."""
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    herder.create_connector("s", source_config(tmp_path), TargetState.STOPPED)
    worker = worker_holder["worker"]
    tasks_before = list(worker.task_starts)
    worker.listener.on_config_expired("c")
    worker.listener.on_config_expired("s")
    wait_until(lambda: ("c", False) in worker.connector_stops, timeout=10)
    wait_until(lambda: worker.connector_running("c"), timeout=10)
    assert _states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING])
    assert worker.task_starts == tasks_before
    assert _states(herder, "s") == (State.STOPPED, [])
    assert [stop for stop in worker.connector_stops if stop[0] == "s"] == []


def test_config_action_reload_takes_kafkas_values(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    config = source_config(tmp_path)
    for value in ("restart", "NONE"):
        assert herder.validate_config({**config, "config.action.reload": value}).all_errors() \
            == []
    errors = dict(herder.validate_config(
        {**config, "config.action.reload": "sometimes"}).all_errors())
    assert list(errors) == ["config.action.reload"]
    assert "sometimes" in errors["config.action.reload"]
