"""The auto-restart policy's Prometheus metrics, exported by the decider (an injected
clock): the restarts it made, per connector and per task restarted, and where each
connector's policy stands (count, next attempt, last restart, given up), read at each
scrape; a connector's series go with its policy, and every series with the decider's
office."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from connect_grpc.herder.auto_restart import AutoRestarter
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TaskStatus,
)
from connect_grpc.metrics.worker_metrics import WorkerMetrics

RESTARTS = "connect_grpc_connector_auto_restarts_total"
TASK_RESTARTS = "connect_grpc_connector_task_auto_restarts_total"
COUNT = "connect_grpc_connector_auto_restart_count"
NEXT = "connect_grpc_connector_auto_restart_next_attempt_timestamp_seconds"
LAST = "connect_grpc_connector_auto_restart_last_restart_timestamp_seconds"
GAVE_UP = "connect_grpc_connector_auto_restart_gave_up"
T0 = 1_700_000_000_000

#: A scrape's samples, by name and labels.
Samples = dict[tuple[str, frozenset[Any]], float]


def _status(*tasks: tuple[State, int]) -> ConnectorStatus:
    return ConnectorStatus(
        "c", InstanceStatus(State.RUNNING, "w", revision=1),
        tuple(TaskStatus(i, InstanceStatus(s, "w", revision=r)) for i, (s, r) in enumerate(tasks)),
        ConnectorType.SOURCE,
    )


class Decider:
    """A decider over one connector ``c`` with two tasks, exporting to a worker's metrics."""

    def __init__(self, metrics: WorkerMetrics, **policy: str) -> None:
        self.now = T0
        self.status = _status((State.RUNNING, 1), (State.FAILED, 1))
        self.config = {"auto.restart.enabled": "true", "auto.restart.backoff.min.ms": "100",
                       "auto.restart.backoff.max.ms": "1000", **policy}
        self.decider = AutoRestarter(
            configs=lambda: {"c": self.config}, status=lambda _: self.status,
            restart=lambda _: None, metrics=metrics.auto_restarts, clock_ms=lambda: self.now,
        )


def scrape(metrics: WorkerMetrics) -> tuple[Samples, dict[str, str]]:
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def test_restarts_are_counted_per_connector_and_per_task_restarted() -> None:
    metrics = WorkerMetrics()
    fakes = Decider(metrics)
    fakes.decider.tick()  # task 1 failed: restarted at once
    samples, types = scrape(metrics)
    assert types["connect_grpc_connector_auto_restarts"] == "counter"
    assert value(samples, RESTARTS, connector="c") == 1
    assert value(samples, TASK_RESTARTS, connector="c", task="1") == 1
    assert value(samples, TASK_RESTARTS, connector="c", task="0") is None
    assert value(samples, COUNT, connector="c") == 1
    assert value(samples, LAST, connector="c") == T0 / 1000
    assert value(samples, NEXT, connector="c") is None
    assert value(samples, GAVE_UP, connector="c") == 0

    # both tasks fail now: due after one restart's back-off (2 steps), then both restarted
    fakes.status = _status((State.FAILED, 2), (State.FAILED, 2))
    fakes.now = T0 + 10
    fakes.decider.tick()
    samples, _ = scrape(metrics)
    assert value(samples, NEXT, connector="c") == (T0 + 210) / 1000
    fakes.now = T0 + 210
    fakes.decider.tick()
    samples, _ = scrape(metrics)
    assert value(samples, RESTARTS, connector="c") == 2
    assert value(samples, TASK_RESTARTS, connector="c", task="0") == 1
    assert value(samples, TASK_RESTARTS, connector="c", task="1") == 2
    assert value(samples, COUNT, connector="c") == 2
    assert value(samples, NEXT, connector="c") is None


def test_the_count_gauge_resets_and_the_counter_does_not() -> None:
    metrics = WorkerMetrics()
    fakes = Decider(metrics, **{"auto.restart.reset.after.ms": "500"})
    fakes.decider.tick()
    fakes.status = _status((State.RUNNING, 1), (State.RUNNING, 2))
    fakes.now = T0 + 100
    fakes.decider.tick()
    fakes.now = T0 + 600
    fakes.decider.tick()
    samples, _ = scrape(metrics)
    assert value(samples, COUNT, connector="c") == 0
    assert value(samples, LAST, connector="c") is None
    assert value(samples, RESTARTS, connector="c") == 1


def test_giving_up_is_a_gauge() -> None:
    metrics = WorkerMetrics()
    fakes = Decider(metrics, **{"auto.restart.max.attempts": "1"})
    fakes.decider.tick()
    fakes.status = _status((State.RUNNING, 1), (State.FAILED, 2))
    fakes.now = T0 + 10
    fakes.decider.tick()
    samples, _ = scrape(metrics)
    assert value(samples, GAVE_UP, connector="c") == 1
    assert value(samples, COUNT, connector="c") == 1


def test_series_go_with_the_policy_and_with_the_deciders_office() -> None:
    metrics = WorkerMetrics()
    fakes = Decider(metrics)
    fakes.decider.tick()
    fakes.config = {}  # the policy turned off
    fakes.decider.tick()
    samples, _ = scrape(metrics)
    assert not [key for key in samples if "auto_restart" in key[0]]

    fakes.config = {"auto.restart.enabled": "true"}
    fakes.decider.tick()
    assert value(scrape(metrics)[0], RESTARTS, connector="c") == 1
    fakes.decider.forget_all()  # a deposed leader: the next one exports them
    samples, _ = scrape(metrics)
    assert not [key for key in samples if "auto_restart" in key[0]]


def test_a_worker_without_a_decider_exports_the_families_empty() -> None:
    samples, types = scrape(WorkerMetrics())
    assert {"connect_grpc_connector_auto_restarts", COUNT, NEXT, GAVE_UP} <= set(types)
    assert not [key for key in samples if "auto_restart" in key[0]]
