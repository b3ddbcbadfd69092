"""The plugin metrics (KIP-877) of a task hosted in an executor: read there, taken by the
driver at most once a second, exported under the names and labels a driver-hosted task's
have, and gone when the task stops."""

from __future__ import annotations

import pickle
import threading
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from structlog.testing import capture_logs

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugin_metrics import MetricName, PluginMetrics
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import ErrorCounts, WorkerMetrics
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.monitoring import monitor_pipeline, plugin_tags
from connect_grpc.plugin import ConnectRecord, SourceTask, Transformation
from connect_grpc.runtime.hosting.plugin_metrics import (
    READING_WAIT_S,
    TAKE_PLUGIN_METRICS,
    HostedPluginMetrics,
    PluginMetricsRelay,
    PluginReading,
)
from connect_grpc.runtime.hosting.serving import HostSite, PluginHost
from connect_grpc.runtime.sink_task import SinkTaskRunner
from connect_grpc.runtime.source_task import SourceTaskRunner
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from tests.task_fakes import FakeSpark, StatusRecorder
from tests.unit.sink_fakes import IdleSink
from tests.unit.test_sink_member_rejoin import GroupConsumer
from tests.unit.test_task_retry import FakeClock

TASK = TaskId("orders", 1)
SEEN = "connect_grpc_plugin_records_seen"
POLLS = "connect_grpc_plugin_polls"


class Counting(Transformation[ConnectRecord]):
    def __init__(self) -> None:
        self.seen = 0

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        metrics.add_metric(metrics.metric_name("records-seen", "Records seen."), lambda: self.seen)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        return record


class Polling(SourceTask):
    def __init__(self) -> None:
        self.polls = 0
        self.stopped = False

    def start(self, config: Any) -> None:
        return None

    def poll(self, max_records: int) -> list[Any]:
        return []

    def stop(self, connector_deleted: bool = False) -> None:
        self.stopped = True


def _pipeline(transformation: Counting) -> Any:
    plugins = PipelinePlugins(None, None, None,
                              [TransformStage("count", transformation, None, False)],
                              ErrorHandling.from_config({}))
    return SimpleNamespace(plugins=plugins)


def _register(task_metrics: PluginMetrics, plugin: Polling) -> MetricName:
    return task_metrics.add_metric(
        task_metrics.metric_name("polls", "Calls of poll.", {"queue": "a"}), lambda: plugin.polls
    )


def _scrape(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def _plugin_series(registry: CollectorRegistry) -> set[tuple[str, str, frozenset[Any], float]]:
    """Each plugin metric's family, help, labels and value (in no order)."""
    return {
        (family.name, family.documentation, frozenset(sample.labels.items()), sample.value)
        for family in registry.collect()
        if family.name.startswith("connect_grpc_plugin_")
        for sample in family.samples
    }


class FakeHost:
    """The driver's end of a host whose plugins' metrics are ``hosted``."""

    def __init__(self, hosted: HostedPluginMetrics) -> None:
        self.hosted = hosted
        self.broken = False
        self.calls = 0
        self.fail: Exception | None = None

    def call(self, name: str, *args: Any) -> Any:
        assert name == TAKE_PLUGIN_METRICS
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        # the readings cross the connection pickled
        readings: list[PluginReading] = pickle.loads(pickle.dumps(self.hosted.readings()))
        return readings


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_hosted_metrics_are_exported_with_the_names_and_labels_a_driver_hosted_tasks_have(
) -> None:
    transformation, plugin = Counting(), Polling()
    driver = WorkerMetrics(CollectorRegistry())
    on_driver = driver.task(TASK)
    monitor_pipeline(_pipeline(transformation).plugins, TASK, on_driver.plugin_metrics)
    _register(on_driver.plugin_metrics(plugin_tags(TASK, TASK.connector, plugin, "task")), plugin)

    hosted = HostedPluginMetrics(TASK, plugin)
    _register(hosted.open(_pipeline(transformation)), plugin)
    worker = WorkerMetrics(CollectorRegistry())
    relay = PluginMetricsRelay(FakeHost(hosted), worker.task(TASK), clock=Clock())  # type: ignore[arg-type]
    transformation.seen, plugin.polls = 4, 7
    relay.take()

    assert len(_plugin_series(driver.registry)) == 2
    assert _plugin_series(worker.registry) == _plugin_series(driver.registry)
    version = plugin_tags(TASK, TASK.connector, plugin, "task")["version"]
    labels = {"connector": "orders", "task": "1", "config": "task",
              "class": f"{__name__}.Polling", "version": version, "queue": "a"}
    assert worker.registry.get_sample_value(POLLS, labels) == 7
    assert f'{SEEN}{{alias="count",class="{__name__}.Counting",config="transforms"' in (
        _scrape(worker.registry))


def test_readings_are_taken_at_most_once_a_second_and_replace_the_last() -> None:
    plugin = Polling()
    hosted = HostedPluginMetrics(TASK, plugin)
    own = hosted.open(None)
    registered = _register(own, plugin)
    host, clock = FakeHost(hosted), Clock()
    worker = WorkerMetrics(CollectorRegistry())
    relay = PluginMetricsRelay(host, worker.task(TASK), clock=clock)  # type: ignore[arg-type]

    def polls() -> float | None:
        return worker.registry.get_sample_value(POLLS, {**own.tags, "queue": "a"})

    relay.take()
    assert (host.calls, polls()) == (1, 0)
    plugin.polls = 3
    clock.now += 0.5
    relay.take()  # not due: the last reading stays
    assert (host.calls, polls()) == (1, 0)
    clock.now += 0.5
    relay.take()
    assert (host.calls, polls()) == (2, 3)

    own.add_metric("queued", lambda: 2)
    own.remove_metric(registered)
    clock.now += 1
    relay.take()
    assert polls() is None
    assert worker.registry.get_sample_value("connect_grpc_plugin_queued", own.tags) == 2


def test_a_lost_host_or_a_failed_call_leaves_the_last_readings_and_raises_nothing() -> None:
    plugin = Polling()
    hosted = HostedPluginMetrics(TASK, plugin)
    _register(hosted.open(None), plugin)
    host, clock = FakeHost(hosted), Clock()
    worker = WorkerMetrics(CollectorRegistry())
    relay = PluginMetricsRelay(host, worker.task(TASK), clock=clock)  # type: ignore[arg-type]
    relay.take()
    plugin.polls = 5
    host.broken = True
    clock.now += 1
    relay.take()
    assert host.calls == 1
    host.broken, host.fail = False, RuntimeError("the task's host could not be built")
    relay.take()
    assert host.calls == 2
    assert worker.registry.get_sample_value(POLLS, dict(hosted.readings()[0][0].tags)) == 0


def test_the_series_go_when_the_task_stops_and_a_late_reading_adds_none_back() -> None:
    plugin = Polling()
    hosted = HostedPluginMetrics(TASK, plugin)
    _register(hosted.open(None), plugin)
    host, clock = FakeHost(hosted), Clock()
    worker = WorkerMetrics(CollectorRegistry())
    relay = PluginMetricsRelay(host, worker.task(TASK), clock=clock)  # type: ignore[arg-type]
    relay.take()
    assert POLLS in _scrape(worker.registry)
    worker.forget_task(TASK)
    assert POLLS not in _scrape(worker.registry)
    clock.now += 1
    relay.take()
    assert POLLS not in _scrape(worker.registry)


class _Loop:
    def __init__(self) -> None:
        self.closed = False

    def open(self) -> None:
        return None

    def take_errors(self) -> ErrorCounts:
        return ErrorCounts()

    def close(self) -> None:
        self.closed = True


class _Client:
    def close(self) -> None:
        return None


def test_the_host_answers_its_plugins_readings_and_closes_their_metrics_when_it_stops() -> None:
    plugin, transformation = Polling(), Counting()
    site = HostSite(SimpleNamespace(stopping=lambda: False), TASK, plugin)  # type: ignore[arg-type]
    loop = _Loop()
    host = PluginHost(plugin, loop, _Client(), site)
    own = site.plugin_metrics(_pipeline(transformation))
    assert own is not None
    _register(own, plugin)
    transformation.seen = 2
    readings = {name.name: value for name, value in host.take_plugin_metrics()}
    assert readings == {"records-seen": 2, "polls": 0}
    host.stop(False)
    assert plugin.stopped and loop.closed
    assert host.take_plugin_metrics() == []
    with pytest.raises(ValueError, match="closed"):
        own.add_metric("late", lambda: 1)


def test_a_blocking_gauge_holds_up_neither_the_hosts_answer_nor_the_tasks_stop() -> None:
    """The host serves the driver's calls on one thread: a Monitorable plugin's gauge that
    blocks is read on a thread of its own, and the host answers the last reading."""
    plugin, transformation = Polling(), Counting()
    site = HostSite(SimpleNamespace(stopping=lambda: False), TASK, plugin)  # type: ignore[arg-type]
    host = PluginHost(plugin, _Loop(), _Client(), site)
    own = site.plugin_metrics(_pipeline(transformation))
    assert own is not None
    _register(own, plugin)
    transformation.seen = 2
    assert {name.name: v for name, v in host.take_plugin_metrics()} == {
        "records-seen": 2, "polls": 0}
    release = threading.Event()
    own.add_metric("stuck", lambda: float(release.wait(30)))
    began = time.monotonic()
    stale = host.take_plugin_metrics()  # waits the reading a moment, then the last one
    assert time.monotonic() - began < READING_WAIT_S + 1
    assert {name.name: v for name, v in stale} == {"records-seen": 2, "polls": 0}
    began = time.monotonic()
    transformation.seen = 5
    assert host.take_plugin_metrics() == stale  # still stuck: answered at once
    assert time.monotonic() - began < READING_WAIT_S  # no wait for a reading
    release.set()
    deadline = time.monotonic() + 10
    while {name.name for name, _ in host.take_plugin_metrics()} != {
            "records-seen", "polls", "stuck"}:
        assert time.monotonic() < deadline, "the reading never came after the gauge returned"
        time.sleep(0.05)
    release.clear()
    host.take_plugin_metrics()  # stuck again
    began = time.monotonic()
    host.stop(False)  # the stop does not wait for the gauge
    assert time.monotonic() - began < 1
    assert host.take_plugin_metrics() == []
    release.set()


def test_a_broken_gauge_is_logged_once_not_on_every_reading() -> None:
    plugin = Polling()
    hosted = HostedPluginMetrics(TASK, plugin)
    own = hosted.open(None)
    broken = {"now": True}

    def gauge() -> float:
        if broken["now"]:
            raise RuntimeError("the plugin's gauge is broken")
        return 1.0

    own.add_metric("broken", gauge)
    with capture_logs() as logs:
        for _ in range(3):
            assert hosted.readings() == []
        broken["now"] = False
        assert [name.name for name, _ in hosted.readings()] == ["broken"]
        broken["now"] = True
        hosted.readings()  # broken again: logged again
    warned = [e for e in logs if e["event"] == "plugin_metric_failed"
              and e["log_level"] == "warning"]
    assert len(warned) == 2
    hosted.close()


class RunnerHost(FakeHost):
    """A remote host as a hosted runner drives it: only the plugin metrics are answered."""

    def __init__(self, hosted: HostedPluginMetrics, plugin: Any) -> None:
        super().__init__(hosted)
        self.plugin = plugin

    def open(self) -> None:
        return None

    def placement(self) -> None:
        return None

    def recover(self) -> bool:
        return False

    def interrupt(self) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_a_hosted_runner_takes_the_readings_on_its_loop_turns_once_a_second(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Consumer", GroupConsumer)
    plugin = Polling()
    hosted = HostedPluginMetrics(TASK, plugin)
    _register(hosted.open(None), plugin)
    host = RunnerHost(hosted, plugin if kind == "source" else IdleSink())
    worker, clock = WorkerMetrics(CollectorRegistry()), FakeClock()
    config = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1"})
    setup = TaskSetup(TASK, "w1", config, {"topics": "t", "topic": "t"}, {})
    clients = TaskClients(StatusRecorder(), cast(SparkRuntime, FakeSpark()),
                          offset_store=cast(Any, object()))
    runner_class = SourceTaskRunner if kind == "source" else SinkTaskRunner
    runner = runner_class(setup, cast(Any, host), clients, metrics=worker.task(TASK), clock=clock)
    runner.prepare()
    labels = dict(hosted.readings()[0][0].tags)

    runner.keep_alive()
    plugin.polls = 2
    runner.keep_alive()  # within the second: not taken again
    assert (host.calls, worker.registry.get_sample_value(POLLS, labels)) == (1, 0)
    clock.advance(1)
    runner.keep_alive()
    assert (host.calls, worker.registry.get_sample_value(POLLS, labels)) == (2, 2)
    runner.close()
