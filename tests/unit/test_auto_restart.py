"""The auto-restart policy: its keys and their validation, the back-off (Strimzi's n*n+n
steps, capped), the maximum, the reset after a healthy period, a user's restart and a
config change; and the decider that applies it, with an injected clock."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

import pytest
from structlog.testing import capture_logs

from connect_grpc.api.convert import connector_status_to_pb
from connect_grpc.client.convert import connector_status_from_pb
from connect_grpc.ctl import documents
from connect_grpc.ctl.render import auto_restart_text
from connect_grpc.herder.auto_restart import AutoRestarter
from connect_grpc.herder.auto_restart_policy import (
    AUTO_RESTART_BACKOFF_MAX_MS,
    AUTO_RESTART_BACKOFF_MIN_MS,
    AUTO_RESTART_MAX_ATTEMPTS,
    AUTO_RESTART_RESET_AFTER_MS,
    RESTART_UNSEEN_MS,
    AutoRestartPolicy,
    AutoRestartState,
    auto_restart_errors,
    decide,
)
from connect_grpc.herder.framework_keys import framework_config_def
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TargetState,
    TaskId,
    TaskStatus,
)
from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.testing.plugins import InstrumentedSourceConnector
from tests.unit.fake_worker import FakeWorker

R, F, X = State.RUNNING, State.FAILED, State.RESTARTING


def _status(connector: State, *tasks: tuple[State, int]) -> ConnectorStatus:
    return ConnectorStatus(
        "c",
        InstanceStatus(connector, "w", revision=1),
        tuple(TaskStatus(i, InstanceStatus(s, "w", revision=r)) for i, (s, r) in enumerate(tasks)),
        ConnectorType.SOURCE,
    )


def _policy(**kwargs: Any) -> AutoRestartPolicy:
    return replace(AutoRestartPolicy(enabled=True, backoff_min_ms=100, backoff_max_ms=1000),
                   **kwargs)


# ---------------------------------------------------------------------------- the keys


def test_strimzi_defaults_give_its_minutes() -> None:
    policy = AutoRestartPolicy.of({"auto.restart.enabled": "true"})
    assert policy.enabled
    minutes = [policy.backoff_ms(n) // 60_000 for n in range(10)]
    assert minutes == [0, 2, 6, 12, 20, 30, 42, 56, 60, 60]


def test_off_by_default_and_when_invalid() -> None:
    assert not AutoRestartPolicy.of({}).enabled
    bad = {"auto.restart.enabled": "true", AUTO_RESTART_BACKOFF_MIN_MS: "-5"}
    assert not AutoRestartPolicy.of(bad).enabled


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("auto.restart.enabled", "maybe", "auto.restart.enabled"),
        (AUTO_RESTART_BACKOFF_MIN_MS, "-1", f"configuration {AUTO_RESTART_BACKOFF_MIN_MS}"),
        (AUTO_RESTART_BACKOFF_MAX_MS, "x", AUTO_RESTART_BACKOFF_MAX_MS),
        (AUTO_RESTART_MAX_ATTEMPTS, "-2", f"configuration {AUTO_RESTART_MAX_ATTEMPTS}"),
        (AUTO_RESTART_RESET_AFTER_MS, "-3", f"configuration {AUTO_RESTART_RESET_AFTER_MS}"),
    ],
)
def test_invalid_value_is_an_error_on_its_key(key: str, value: str, message: str) -> None:
    errors = auto_restart_errors({key: value})
    assert errors[key] and message in errors[key][0]
    assert all(not problems for other, problems in errors.items() if other != key)


def test_cap_below_step_is_an_error_on_the_cap() -> None:
    errors = auto_restart_errors({AUTO_RESTART_BACKOFF_MIN_MS: "500",
                                  AUTO_RESTART_BACKOFF_MAX_MS: "100"})
    assert errors[AUTO_RESTART_BACKOFF_MAX_MS] == [
        f"Invalid value 100 for configuration {AUTO_RESTART_BACKOFF_MAX_MS}: Value must be at "
        f"least {AUTO_RESTART_BACKOFF_MIN_MS} (500)"
    ]
    assert not errors[AUTO_RESTART_BACKOFF_MIN_MS]


def test_keys_are_framework_keys_of_every_connector() -> None:
    keys = framework_config_def(InstrumentedSourceConnector()).keys
    assert {"auto.restart.enabled", AUTO_RESTART_BACKOFF_MIN_MS, AUTO_RESTART_BACKOFF_MAX_MS,
            AUTO_RESTART_MAX_ATTEMPTS, AUTO_RESTART_RESET_AFTER_MS} <= set(keys)


# ---------------------------------------------------------------------------- decide


class Look:
    """Successive looks at one connector with a policy, as a decider makes them."""

    def __init__(self, policy: AutoRestartPolicy, digest: str = "d") -> None:
        self.policy = policy
        self.state = AutoRestartState(digest=digest)
        self.digest = digest

    def at(self, now: int, status: ConnectorStatus) -> bool:
        decision = decide(self.policy, self.state, status, now, self.digest)
        self.state = decision.state
        return decision.restart


def test_first_failure_restarts_at_once_then_back_off_grows_to_the_cap() -> None:
    look = Look(_policy())
    restarts: list[int] = []
    revision = 1
    now = 0
    for _ in range(6):
        failed = _status(R, (F, revision))
        while not look.at(now, failed):
            now += 10
        restarts.append(now)
        revision += 1
        assert look.at(now + 1, _status(R, (X, revision))) is False  # the restart shows
        revision += 1
        now += 1
    gaps = [b - a for a, b in itertools.pairwise(restarts)]
    # 0, then 2, 6 steps of 100 ms, then the cap (1000 ms), measured from each new failure
    assert restarts[0] == 0
    assert [round(g, -1) for g in gaps] == [200, 600, 1000, 1000, 1000]
    assert look.state.count == 6


def test_next_attempt_is_shown_while_waiting() -> None:
    look = Look(_policy())
    assert look.at(0, _status(R, (F, 1)))
    assert not look.at(5, _status(R, (X, 2)))
    assert not look.at(7, _status(R, (F, 3)))
    assert look.state.shown() == AutoRestartStatus(1, 207, 0, False)
    assert not look.at(206, _status(R, (F, 3)))
    assert look.at(207, _status(R, (F, 3)))
    assert look.state.shown() == AutoRestartStatus(2, 0, 207, False)


def test_gives_up_after_max_attempts_and_stays_failed() -> None:
    look = Look(_policy(max_attempts=2))
    revision = 1
    now = 0
    made = 0
    for _ in range(50):
        if look.at(now, _status(R, (F, revision))):
            made += 1
            revision += 1
        now += 50
    assert made == 2
    assert look.state.gave_up and look.state.count == 2 and not look.state.next_attempt_ms
    assert not look.at(now + 10_000_000, _status(R, (F, revision)))


def test_a_failure_seen_twice_restarts_once() -> None:
    look = Look(_policy())
    assert look.at(0, _status(R, (F, 1)))
    # the view has not shown the restart yet: the same failure is no new one
    for now in range(1, 5000, 100):
        assert not look.at(now, _status(R, (F, 1)))
    assert look.state.count == 1


def test_a_restart_never_seen_is_given_up_waiting_for() -> None:
    look = Look(_policy())
    assert look.at(0, _status(R, (F, 1)))
    assert not look.at(RESTART_UNSEEN_MS - 1, _status(R, (F, 1)))
    # waited long enough: the failure counts again, after its back-off (2 steps)
    assert not look.at(RESTART_UNSEEN_MS, _status(R, (F, 1)))
    assert look.at(RESTART_UNSEEN_MS + 200, _status(R, (F, 1)))


def test_healthy_for_the_period_resets_the_count() -> None:
    look = Look(_policy(reset_after_ms=500))
    assert look.at(0, _status(R, (F, 1)))
    assert not look.at(10, _status(R, (R, 2)))
    assert not look.at(509, _status(R, (R, 2)))
    assert look.state.count == 1
    assert not look.at(510, _status(R, (R, 2)))
    assert look.state.count == 0
    # a later failure is restarted at once again
    assert look.at(600, _status(R, (F, 3)))


def test_default_healthy_period_is_the_next_back_off() -> None:
    look = Look(_policy())
    assert look.at(0, _status(R, (F, 1)))
    look.at(10, _status(R, (R, 2)))
    look.at(209, _status(R, (R, 2)))
    assert look.state.count == 1
    look.at(210, _status(R, (R, 2)))
    assert look.state.count == 0


def test_failure_while_healthy_period_runs_starts_it_again() -> None:
    look = Look(_policy(reset_after_ms=500))
    assert look.at(0, _status(R, (F, 1)))
    look.at(10, _status(R, (R, 2)))
    assert not look.at(400, _status(R, (F, 3)))  # back-off 200
    assert look.at(600, _status(R, (F, 3)))
    look.at(601, _status(R, (R, 4)))
    look.at(1000, _status(R, (R, 4)))
    assert look.state.count == 2


def test_a_users_restart_resets_the_count() -> None:
    look = Look(_policy(max_attempts=1))
    assert look.at(0, _status(R, (F, 1)))
    look.at(1, _status(R, (X, 2)))
    assert not look.at(2, _status(R, (F, 3)))
    assert look.state.gave_up
    # someone else restarted the task (a new revision), and it failed again
    assert look.at(3, _status(R, (F, 4)))
    assert look.state.count == 1 and not look.state.gave_up


def test_a_users_restart_while_waiting_resets() -> None:
    look = Look(_policy())
    assert look.at(0, _status(R, (F, 1)))
    look.at(1, _status(R, (X, 2)))
    look.at(2, _status(R, (F, 3)))
    assert look.state.next_attempt_ms == 202
    look.at(50, _status(R, (R, 4)))  # RUNNING again, not by the policy
    assert look.state.shown() == AutoRestartStatus()


def test_another_task_failing_is_no_users_restart() -> None:
    look = Look(_policy())
    assert look.at(0, _status(R, (F, 1), (R, 1)))
    look.at(1, _status(R, (X, 2), (R, 1)))
    look.at(2, _status(R, (F, 3), (R, 1)))
    look.at(3, _status(R, (F, 3), (F, 2)))
    assert look.state.count == 1 and look.state.next_attempt_ms == 202


def test_a_config_change_resets() -> None:
    look = Look(_policy(max_attempts=1))
    look.at(0, _status(R, (F, 1)))
    look.at(1, _status(R, (X, 2)))
    look.at(2, _status(R, (F, 3)))
    assert look.state.gave_up
    look.digest = "other"
    assert look.at(3, _status(R, (F, 3)))


def test_failed_connector_counts_as_a_failure() -> None:
    look = Look(_policy())
    assert look.at(0, _status(F))


def test_state_outlives_its_decider_as_json() -> None:
    state = AutoRestartState("d", 3, 1234, 1000, False)
    assert AutoRestartState.from_json(state.to_json()).shown() == state.shown()


# ---------------------------------------------------------------------------- the decider


class Fakes:
    def __init__(self) -> None:
        self.now = 0
        self.status = _status(R, (F, 1))
        self.config = {"auto.restart.enabled": "true", AUTO_RESTART_BACKOFF_MIN_MS: "100",
                       AUTO_RESTART_BACKOFF_MAX_MS: "1000"}
        self.restarts: list[str] = []
        self.persisted: dict[str, dict[str, Any] | None] = {}
        self.busy = False

    def restart(self, name: str) -> None:
        if self.busy:
            raise UnavailableError("busy", 1.0)
        self.restarts.append(name)

    def persist(self, name: str, value: dict[str, Any] | None) -> None:
        self.persisted[name] = value

    def decider(self, **kwargs: Any) -> AutoRestarter:
        return AutoRestarter(
            configs=lambda: {"c": self.config}, status=lambda _: self.status,
            restart=self.restart, clock_ms=lambda: self.now, **kwargs,
        )


def test_decider_restarts_persists_and_says_when_to_look_again() -> None:
    fakes = Fakes()
    decider = fakes.decider(persist=fakes.persist)
    decider.tick()
    assert fakes.restarts == ["c"]
    assert fakes.persisted["c"] == {"config": fakes.persisted["c"]["config"],  # type: ignore[index]
                                    "count": 1, "next_attempt_ms": 0, "last_restart_ms": 0,
                                    "gave_up": False, "restart_awaited": [0],
                                    "restart_asked_ms": 0}
    fakes.status = _status(R, (F, 2))
    fakes.now = 10
    assert decider.tick() == pytest.approx(0.2)
    assert decider.status_of("c") == AutoRestartStatus(1, 210, 0, False)


class Carrying:
    """A cluster's ``restart_carrying`` and ``load``: the config topic, and the leader's
    view of it, which has not read the records written here yet."""

    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes
        self.asked: list[dict[str, Any]] = []  # the restart requests that landed
        self.topic = fakes.persisted  # the progress the topic holds, alone or carried
        self.view: dict[str, dict[str, Any] | None] = {}
        self.lands = True  # whether the next request lands
        self.answers: Exception | None = None  # what the next call raises

    def restart_carrying(self, name: str, value: dict[str, Any]) -> None:
        if self.lands:
            self.asked.append(value)
            self.topic[name] = value
        if self.answers is not None:
            raise self.answers

    def decider(self) -> AutoRestarter:
        return self.fakes.decider(restart_carrying=self.restart_carrying,
                                  persist=self.fakes.persist, load=self.view_of)

    def view_of(self, name: str) -> dict[str, Any] | None:
        return self.view.get(name)


def test_a_restart_carrying_its_progress_is_one_call() -> None:
    """With ``restart_carrying`` the progress that counts a restart goes with it, not to
    ``persist``."""
    fakes = Fakes()
    cluster = Carrying(fakes)
    decider = cluster.decider()
    decider.tick()
    [value] = cluster.asked
    assert (value["count"], value["restart_awaited"]) == (1, [0])
    fakes.persisted.clear()
    fakes.now = 50
    decider.tick()  # the restart it asked for is awaited: not asked again, nothing written
    assert len(cluster.asked) == 1 and fakes.persisted == {} and fakes.restarts == []
    fakes.status = _status(R, (F, 2))  # it ran and failed again: after one back-off
    fakes.now = 100
    decider.tick()
    assert fakes.persisted["c"] is not None and "restart_awaited" not in fakes.persisted["c"]
    fakes.now = 300
    decider.tick()
    assert [(value["count"], value["restart_awaited"]) for value in cluster.asked] == [
        (1, [0]), (2, [0])]
    assert fakes.restarts == []  # never the plain restart


def test_a_restart_whose_request_may_have_landed_is_not_asked_for_again() -> None:
    """The request lands but its answer times out, and the view the progress would be
    taken back from has not read it yet: the restart is taken as asked for, not asked for
    again at the next look, and its progress is written alone."""
    fakes = Fakes()
    cluster = Carrying(fakes)
    decider = cluster.decider()
    cluster.answers = UnavailableError("the request's read-back timed out", 1.0)
    with capture_logs() as logs:
        decider.tick()
    assert [entry["event"] for entry in logs] == ["auto_restart_ask_unsure"]
    [value] = cluster.asked
    assert decider.status_of("c") == AutoRestartStatus(1, 0, 0, False)
    cluster.answers = None
    fakes.persisted.clear()
    for now in (0, 10, 50):  # the view still lags
        fakes.now = now
        decider.tick()
    assert len(cluster.asked) == 1
    assert fakes.persisted == {"c": value}  # written alone: sure to be in the topic
    fakes.status = _status(R, (R, 2))  # the restart ran
    fakes.now = 60
    decider.tick()
    assert len(cluster.asked) == 1
    assert decider.status_of("c") == AutoRestartStatus(1, 0, 0, False)


def test_a_restart_whose_request_did_not_land_is_asked_for_after_it_went_unseen() -> None:
    """The same time-out, the request lost: the restart is awaited as if made, then, never
    shown, the failure counts again and is restarted after its back-off."""
    fakes = Fakes()
    cluster = Carrying(fakes)
    decider = cluster.decider()
    cluster.lands = False
    cluster.answers = UnavailableError("the request's write timed out", 1.0)
    decider.tick()
    cluster.lands, cluster.answers = True, None
    decider.tick()
    assert cluster.asked == []
    assert fakes.persisted["c"]["restart_awaited"] == [0]  # type: ignore[index]
    fakes.now = RESTART_UNSEEN_MS - 1
    decider.tick()
    assert cluster.asked == []
    fakes.now = RESTART_UNSEEN_MS
    decider.tick()  # given up waiting: due after one restart's back-off
    assert decider.status_of("c") == AutoRestartStatus(1, RESTART_UNSEEN_MS + 200, 0, False)
    fakes.now = RESTART_UNSEEN_MS + 200
    decider.tick()
    [value] = cluster.asked
    assert value["count"] == 2


def test_a_restart_refused_as_a_deposed_leaders_is_forgotten() -> None:
    """A refused request surely did not land: the decider takes the progress back from
    where it is persisted at its next look."""
    fakes = Fakes()
    cluster = Carrying(fakes)
    decider = cluster.decider()
    cluster.lands = False
    cluster.answers = NotLeaderError("deposed")
    decider.tick()
    assert decider.status_of("c") is None
    assert fakes.persisted == {}


def test_decider_keeps_its_state_when_the_restart_could_not_be_asked() -> None:
    fakes = Fakes()
    fakes.busy = True
    decider = fakes.decider()
    decider.tick()
    assert decider.status_of("c") == AutoRestartStatus(0, 0, 0, False)
    fakes.busy = False
    decider.tick()
    assert fakes.restarts == ["c"]


def test_a_new_decider_continues_from_the_persisted_progress() -> None:
    fakes = Fakes()
    first = fakes.decider(persist=fakes.persist)
    first.tick()
    fakes.status = _status(R, (F, 2))
    fakes.now = 10
    first.tick()
    second = fakes.decider(persist=fakes.persist, load=fakes.persisted.get)
    fakes.now = 100
    second.tick()
    assert fakes.restarts == ["c"]  # not due before 210, as the first decider planned
    fakes.now = 210
    second.tick()
    assert fakes.restarts == ["c", "c"]
    assert second.status_of("c") == AutoRestartStatus(2, 0, 210, False)


def test_policy_turned_off_forgets_the_progress() -> None:
    fakes = Fakes()
    decider = fakes.decider(persist=fakes.persist)
    decider.tick()
    fakes.config = {}
    decider.tick()
    assert decider.status_of("c") is None
    assert fakes.persisted["c"] is None


# ---------------------------------------------------------------------------- standalone


def _wait_for(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.timeout(30)
def test_standalone_herder_restarts_a_failed_task_until_it_gives_up(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker]
) -> None:
    worker = worker_holder["worker"]
    task = TaskId("c", 0)
    worker.failing_tasks.add(task)
    config = {
        "connector.class": "connect_grpc.testing.plugins.InstrumentedSourceConnector",
        "tasks.max": "1", "topic": "t", "auto.restart.enabled": "true",
        AUTO_RESTART_BACKOFF_MIN_MS: "50", AUTO_RESTART_BACKOFF_MAX_MS: "200",
        AUTO_RESTART_MAX_ATTEMPTS: "3",
    }
    herder.create_connector("c", config, TargetState.STARTED)
    _wait_for(lambda: (herder.connector_status("c").auto_restart or AutoRestartStatus()).gave_up)
    status = herder.connector_status("c")
    assert status.tasks[0].status.state is State.FAILED
    assert status.auto_restart is not None and status.auto_restart.count == 3
    assert worker.task_starts.count(task) == 4  # the first start and three restarts
    # a user's restart resets the policy: it restarts again, and the task recovers
    worker.failing_tasks.clear()
    herder.restart_task(task)
    _wait_for(lambda: herder.connector_status("c").auto_restart == AutoRestartStatus())
    assert herder.connector_status("c").tasks[0].status.state is State.RUNNING


def test_standalone_status_has_no_policy_when_it_is_off(herder: StandaloneHerder) -> None:
    config = {"connector.class": "connect_grpc.testing.plugins.InstrumentedSourceConnector",
              "tasks.max": "1", "topic": "t"}
    herder.create_connector("c", config, TargetState.STARTED)
    assert herder.connector_status("c").auto_restart is None


# ---------------------------------------------------------------------------- API and ctl


def test_progress_round_trips_through_the_api_and_ctl_shows_it() -> None:
    progress = AutoRestartStatus(2, 1_700_000_000_123, 1_699_999_999_000, False)
    status = replace(_status(R, (F, 1)), auto_restart=progress)
    assert connector_status_from_pb(connector_status_to_pb(status)).auto_restart == progress
    off = _status(R, (R, 1))
    assert not connector_status_to_pb(off).HasField("auto_restart")
    assert connector_status_from_pb(connector_status_to_pb(off)).auto_restart is None
    assert documents.status(status)["auto_restart"] == {
        "count": 2, "next_attempt": "2023-11-14T22:13:20.123Z",
        "last_restart": "2023-11-14T22:13:19.000Z", "gave_up": False,
    }
    assert "auto_restart" not in documents.status(off)
    assert auto_restart_text(progress) == "2 automatic, next at 2023-11-14T22:13:20.123Z"
    assert "gave up" in auto_restart_text(replace(progress, gave_up=True, next_attempt_ms=0))
