"""The worker's Prometheus metrics without a broker: the families and labels the task loops
and the scrape-time collectors export, the gRPC server interceptor's counting (on a real
in-process gRPC server), ``metrics.listener`` and the HTTP endpoint."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from connect_grpc.api.metrics import ServerMetricsInterceptor
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.domain import PlacementKind, State, TaskId
from connect_grpc.kernel.errors import InvalidArgumentError, StartupError
from connect_grpc.metrics.endpoint import MetricsEndpoint, serve_metrics
from connect_grpc.metrics.worker_metrics import (
    ON_DRIVER,
    ON_SPARK_TASK,
    CommitTally,
    RebalanceState,
    WorkerMetrics,
)

pytestmark = pytest.mark.timeout(60)

TASK = TaskId("orders", 0)
TASK_LABELS = {"connector": "orders", "task": "0"}


def families(registry: CollectorRegistry) -> dict[str, Metric]:
    """The registry's exposition, parsed as Prometheus parses it."""
    text = generate_latest(registry).decode("utf-8")
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample(
    registry: CollectorRegistry, name: str, labels: Mapping[str, str] | None = None
) -> float:
    value = registry.get_sample_value(name, dict(labels or {}))
    assert value is not None, f"no sample {name}{labels or ''}"
    return value


# --------------------------------------------------------------------------------------------
# task metrics


def test_source_batches_count_records_batches_and_times() -> None:
    metrics = WorkerMetrics()
    task = metrics.task(TASK)
    task.polled(300)
    task.written(300, 0.02, ON_SPARK_TASK)
    task.polled(5)
    task.written(5, 0.001, ON_DRIVER)
    registry = metrics.registry
    polled = "kafka_connect_source_task_source_record_poll_total"
    written = "kafka_connect_source_task_source_record_write_total"
    assert sample(registry, polled, TASK_LABELS) == 305
    assert sample(registry, written, TASK_LABELS) == 305
    assert sample(registry, "kafka_connect_connector_task_batch_size_count", TASK_LABELS) == 2
    assert sample(registry, "kafka_connect_connector_task_batch_size_sum", TASK_LABELS) == 305
    hosted = {**TASK_LABELS, "runs_on": "spark_task"}
    assert sample(registry, "connect_grpc_task_batch_seconds_count", hosted) == 1
    assert sample(registry, "connect_grpc_task_batch_seconds_sum", hosted) == pytest.approx(0.02)
    on_driver = {**TASK_LABELS, "runs_on": "driver"}
    assert sample(registry, "connect_grpc_task_batch_seconds_count", on_driver) == 1
    assert registry.get_sample_value(
        "kafka_connect_sink_task_sink_record_read_total", TASK_LABELS
    ) is None  # a source task has no sink series


def test_sink_batches_count_records_read_and_sent() -> None:
    metrics = WorkerMetrics()
    metrics.task(TASK).put(40, 0.3, ON_DRIVER)
    metrics.task(TASK).put(2, 0.01, ON_DRIVER)
    registry = metrics.registry
    assert sample(registry, "kafka_connect_sink_task_sink_record_read_total", TASK_LABELS) == 42
    assert sample(registry, "kafka_connect_sink_task_sink_record_send_total", TASK_LABELS) == 42
    assert sample(registry, "kafka_connect_connector_task_batch_size_count", TASK_LABELS) == 2


def test_offset_commits_count_successes_failures_and_time() -> None:
    metrics = WorkerMetrics()
    task = metrics.task(TASK)
    with task.offset_commit():
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="broker gone"), task.offset_commit():
        raise RuntimeError("broker gone")
    task.add_commits(CommitTally([0.5, 0.25], failed=2))
    registry = metrics.registry
    success = "kafka_connect_connector_task_offset_commit_success_total"
    assert sample(registry, success, TASK_LABELS) == 3
    assert sample(registry, "kafka_connect_connector_task_offset_commit_failure_total",
                  TASK_LABELS) == 3
    timed = "kafka_connect_connector_task_offset_commit_time_seconds"
    assert sample(registry, f"{timed}_count", TASK_LABELS) == 3
    assert sample(registry, f"{timed}_sum", TASK_LABELS) >= 0.76


def test_a_commit_tally_hands_over_what_it_counted_once() -> None:
    tally = CommitTally()
    tally.succeeded.append(0.1)
    tally.failed += 1
    assert tally.take() == CommitTally([0.1], 1)
    assert tally.take() == CommitTally([], 0)


def test_a_forgotten_task_leaves_the_scrape_and_counts_from_zero_again() -> None:
    metrics = WorkerMetrics()
    metrics.task(TASK).polled(10)
    metrics.task(TASK).written(10, 0.1, ON_SPARK_TASK)
    metrics.task(TaskId("other", 1)).polled(1)
    metrics.forget_task(TASK)
    scraped = families(metrics.registry)
    for family in scraped.values():
        assert all(s.labels.get("connector") != "orders" for s in family.samples), family
    assert sample(metrics.registry, "kafka_connect_source_task_source_record_poll_total",
                  {"connector": "other", "task": "1"}) == 1
    metrics.task(TASK).polled(3)
    assert sample(metrics.registry, "kafka_connect_source_task_source_record_poll_total",
                  TASK_LABELS) == 3


def test_two_workers_in_one_process_share_no_series() -> None:
    first, second = WorkerMetrics(), WorkerMetrics()
    first.task(TASK).polled(7)
    assert second.registry.get_sample_value(
        "kafka_connect_source_task_source_record_poll_total", TASK_LABELS
    ) is None


def test_a_runner_without_its_workers_metrics_counts_where_nothing_exports() -> None:
    from connect_grpc.metrics.worker_metrics import TaskMetrics

    TaskMetrics.unexported(TASK).polled(5)
    TaskMetrics.unexported(TASK).polled(5)  # a registry each: no clash, nothing shared


# --------------------------------------------------------------------------------------------
# states read at scrape time


class FakeWorker:
    def __init__(self) -> None:
        self.connectors: dict[str, State] = {}
        self.tasks: dict[TaskId, State] = {}
        self.placements: dict[TaskId, PlacementKind] = {}

    def instance_states(self) -> tuple[Mapping[str, State], Mapping[TaskId, State]]:
        return self.connectors, self.tasks

    def task_placements(self) -> Mapping[TaskId, PlacementKind]:
        return self.placements


def test_instance_counts_and_states_are_read_at_each_scrape() -> None:
    metrics = WorkerMetrics()
    worker = FakeWorker()
    metrics.watch_worker(worker)
    registry = metrics.registry
    assert sample(registry, "kafka_connect_worker_connector_count") == 0
    assert sample(registry, "kafka_connect_worker_task_count") == 0

    worker.connectors = {"orders": State.RUNNING, "audit": State.PAUSED}
    worker.tasks = {
        TaskId("orders", 0): State.RUNNING,
        TaskId("orders", 1): State.FAILED,
        TaskId("audit", 0): State.PAUSED,
    }
    scraped = families(registry)
    assert scraped["kafka_connect_worker_connector_count"].samples[0].value == 2
    assert scraped["kafka_connect_worker_task_count"].samples[0].value == 3
    assert scraped["kafka_connect_worker_connector_count"].type == "gauge"
    connector_status = {
        (s.labels["connector"], s.labels["status"]): s.value
        for s in scraped["kafka_connect_connector_status"].samples
    }
    assert connector_status == {("audit", "paused"): 1, ("orders", "running"): 1}
    task_status = {
        (s.labels["connector"], s.labels["task"], s.labels["status"]): s.value
        for s in scraped["kafka_connect_connector_task_status"].samples
    }
    assert task_status == {
        ("audit", "0", "paused"): 1, ("orders", "0", "running"): 1, ("orders", "1", "failed"): 1,
    }
    assert sample(registry, "kafka_connect_worker_connector_total_task_count",
                  {"connector": "orders"}) == 2
    assert sample(registry, "kafka_connect_worker_connector_running_task_count",
                  {"connector": "orders"}) == 1
    assert sample(registry, "kafka_connect_worker_connector_failed_task_count",
                  {"connector": "orders"}) == 1
    assert sample(registry, "kafka_connect_worker_connector_paused_task_count",
                  {"connector": "audit"}) == 1

    worker.connectors, worker.tasks = {}, {}
    scraped = families(registry)
    assert scraped["kafka_connect_worker_connector_count"].samples[0].value == 0
    assert scraped["kafka_connect_connector_status"].samples == []


def test_tasks_are_counted_by_where_they_run_at_each_scrape() -> None:
    metrics = WorkerMetrics()
    worker = FakeWorker()
    metrics.watch_worker(worker)
    name = "connect_grpc_worker_task_placement_count"
    assert sample(metrics.registry, name, {"placement": "driver"}) == 0
    assert sample(metrics.registry, name, {"placement": "spark-executor"}) == 0

    worker.placements = {
        TaskId("orders", 0): PlacementKind.SPARK_EXECUTOR,
        TaskId("orders", 1): PlacementKind.DRIVER,
        TaskId("audit", 0): PlacementKind.DRIVER,
    }
    assert sample(metrics.registry, name, {"placement": "driver"}) == 2
    assert sample(metrics.registry, name, {"placement": "spark-executor"}) == 1


class FakeCluster:
    def __init__(self, state: RebalanceState) -> None:
        self.state = state

    def rebalance_state(self) -> RebalanceState:
        return self.state


def test_rebalance_metrics_show_generation_leader_and_completed_rebalances() -> None:
    metrics = WorkerMetrics()
    cluster = FakeCluster(RebalanceState(0, "", False, 0))
    metrics.watch_cluster(cluster)
    registry = metrics.registry
    assert sample(registry, "kafka_connect_worker_rebalance_epoch") == 0
    assert families(registry)["kafka_connect_worker_rebalance_leader_info"].samples == []

    cluster.state = RebalanceState(4, "worker-a", True, 3)
    scraped = families(registry)
    completed = scraped["kafka_connect_worker_rebalance_completed_rebalances"]
    assert completed.type == "counter"
    assert [(s.name, s.value) for s in completed.samples] == [
        ("kafka_connect_worker_rebalance_completed_rebalances_total", 3)
    ]
    assert sample(registry, "kafka_connect_worker_rebalance_epoch") == 4
    assert sample(registry, "kafka_connect_worker_rebalance_leader_info",
                  {"leader_name": "worker-a"}) == 1
    assert sample(registry, "connect_grpc_worker_is_leader") == 1


# --------------------------------------------------------------------------------------------
# gRPC server metrics

SERVICE = "test.v1.Probe"


def _ok(request: bytes, context: grpc.ServicerContext) -> bytes:
    return request


def _missing(request: bytes, context: grpc.ServicerContext) -> bytes:
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


def _broken(request: bytes, context: grpc.ServicerContext) -> bytes:
    raise RuntimeError("boom")


def _invalid(request: bytes, context: grpc.ServicerContext) -> bytes:
    context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
    return b""


def _three(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    yield from (b"1", b"2", b"3")


def _endless(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    while True:
        yield b"tick"
        time.sleep(0.01)


def _sum(requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
    return b"".join(requests)


def _echo_all(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    yield from requests


@pytest.fixture
def probe() -> Iterator[tuple[grpc.Channel, CollectorRegistry]]:
    registry = CollectorRegistry()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        interceptors=[ServerMetricsInterceptor(registry)],
    )
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, {
        "Ok": grpc.unary_unary_rpc_method_handler(_ok),
        "Missing": grpc.unary_unary_rpc_method_handler(_missing),
        "Broken": grpc.unary_unary_rpc_method_handler(_broken),
        "Invalid": grpc.unary_unary_rpc_method_handler(_invalid),
        "Three": grpc.unary_stream_rpc_method_handler(_three),
        "Endless": grpc.unary_stream_rpc_method_handler(_endless),
        "Sum": grpc.stream_unary_rpc_method_handler(_sum),
        "EchoAll": grpc.stream_stream_rpc_method_handler(_echo_all),
    })])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel, registry
    finally:
        channel.close()
        server.stop(0).wait()


def _labels(method: str, rpc_type: str = "unary", code: str | None = None) -> dict[str, str]:
    labels = {"grpc_type": rpc_type, "grpc_service": SERVICE, "grpc_method": method}
    return labels if code is None else {**labels, "grpc_code": code}


def _handled(registry: CollectorRegistry, method: str, code: str, rpc_type: str = "unary") -> float:
    value = registry.get_sample_value("grpc_server_handled_total", _labels(method, rpc_type, code))
    return value or 0.0


def test_unary_calls_are_counted_by_status_code_and_timed(
    probe: tuple[grpc.Channel, CollectorRegistry],
) -> None:
    channel, registry = probe
    for _ in range(2):
        assert channel.unary_unary(f"/{SERVICE}/Ok")(b"hi", timeout=5) == b"hi"
    expected = {"Missing": grpc.StatusCode.NOT_FOUND, "Broken": grpc.StatusCode.UNKNOWN,
                "Invalid": grpc.StatusCode.INVALID_ARGUMENT}
    for method, code in expected.items():
        with pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary(f"/{SERVICE}/{method}")(b"", timeout=5)
        assert raised.value.code() == code
    assert _handled(registry, "Ok", "OK") == 2
    assert _handled(registry, "Missing", "NOT_FOUND") == 1
    assert _handled(registry, "Broken", "UNKNOWN") == 1
    assert _handled(registry, "Invalid", "INVALID_ARGUMENT") == 1
    assert _handled(registry, "Ok", "NOT_FOUND") == 0
    assert sample(registry, "grpc_server_started_total", _labels("Ok")) == 2
    assert sample(registry, "grpc_server_handling_seconds_count", _labels("Ok")) == 2
    assert sample(registry, "grpc_server_handling_seconds_count", _labels("Missing")) == 1


def test_streaming_calls_are_counted_when_their_stream_ends(
    probe: tuple[grpc.Channel, CollectorRegistry],
) -> None:
    channel, registry = probe
    assert list(channel.unary_stream(f"/{SERVICE}/Three")(b"", timeout=5)) == [b"1", b"2", b"3"]
    assert channel.stream_unary(f"/{SERVICE}/Sum")(iter([b"a", b"b"]), timeout=5) == b"ab"
    echoed = channel.stream_stream(f"/{SERVICE}/EchoAll")(iter([b"x", b"y"]), timeout=5)
    assert list(echoed) == [b"x", b"y"]
    assert _handled(registry, "Three", "OK", "server_stream") == 1
    assert _handled(registry, "Sum", "OK", "client_stream") == 1
    assert _handled(registry, "EchoAll", "OK", "bidi_stream") == 1
    assert sample(registry, "grpc_server_handling_seconds_count",
                  _labels("Three", "server_stream")) == 1


def test_a_stream_the_client_cancels_is_counted_cancelled(
    probe: tuple[grpc.Channel, CollectorRegistry],
) -> None:
    channel, registry = probe
    call: Any = channel.unary_stream(f"/{SERVICE}/Endless")(b"", timeout=30)
    assert next(call) == b"tick"
    call.cancel()
    deadline = time.monotonic() + 10
    while _handled(registry, "Endless", "CANCELLED", "server_stream") == 0:
        assert time.monotonic() < deadline, families(registry)["grpc_server_handled"].samples
        time.sleep(0.05)
    assert _handled(registry, "Endless", "OK", "server_stream") == 0


def test_unimplemented_methods_are_not_counted(
    probe: tuple[grpc.Channel, CollectorRegistry],
) -> None:
    channel, registry = probe
    with pytest.raises(grpc.RpcError) as raised:
        channel.unary_unary(f"/{SERVICE}/NoSuchMethod")(b"", timeout=5)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "NoSuchMethod" not in generate_latest(registry).decode("utf-8")


# --------------------------------------------------------------------------------------------
# metrics.listener and the endpoint


def _config(**extra: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "localhost:9092", **extra})


def test_metrics_listener_is_off_by_default_and_when_blank() -> None:
    assert _config().metrics_listener is None
    assert _config(**{"metrics.listener": "  "}).metrics_listener is None


def test_metrics_listener_takes_http_host_port() -> None:
    assert _config(**{"metrics.listener": "http://127.0.0.1:9404"}).metrics_listener == (
        "127.0.0.1", 9404
    )
    assert _config(**{"metrics.listener": " http://:0 "}).metrics_listener == ("0.0.0.0", 0)
    assert _config(**{"metrics.listener": "http://[::1]:9404"}).metrics_listener == ("::1", 9404)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("grpc://127.0.0.1:9404", "expected http://host:port"),
        ("https://127.0.0.1:9404", "expected http://host:port"),
        ("127.0.0.1:9404", "expected http://host:port"),
        ("http://127.0.0.1", "expected http://host:port"),
        ("http://127.0.0.1:port", "expected http://host:port"),
        ("http://127.0.0.1:9404/metrics", "expected http://host:port"),
        ("http://127.0.0.1:70000", "the port must be in [0, 65535]"),
        ("http://a:1,http://b:2", "expected one http://host:port"),
    ],
)
def test_a_bad_metrics_listener_names_the_property(value: str, says: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        _config(**{"metrics.listener": value})
    [violation] = raised.value.violations
    assert violation.field == "metrics.listener"
    assert says in violation.description


def test_the_endpoint_serves_the_registry_in_the_text_format() -> None:
    metrics = WorkerMetrics()
    metrics.task(TASK).polled(12)
    endpoint = serve_metrics(("127.0.0.1", 0), metrics.registry)
    assert endpoint is not None
    try:
        assert endpoint.port != 0
        with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5) as r:
            assert r.headers["Content-Type"].startswith("text/plain")
            text = r.read().decode("utf-8")
    finally:
        endpoint.stop()
        endpoint.stop()  # idempotent
    scraped = {f.name: f for f in text_string_to_metric_families(text)}
    [polled] = [s for s in scraped["kafka_connect_source_task_source_record_poll"].samples
                if s.name.endswith("_total")]
    assert polled.labels == TASK_LABELS and polled.value == 12
    with pytest.raises(OSError):  # the socket is closed
        urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=2)


def test_no_listener_no_endpoint() -> None:
    assert serve_metrics(None, CollectorRegistry()) is None


def test_a_port_in_use_is_a_startup_error_naming_metrics_listener() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartupError) as raised:
            MetricsEndpoint(CollectorRegistry(), "127.0.0.1", port).start()
    assert raised.value.property_name == "metrics.listener"
    assert f"http://127.0.0.1:{port}" in raised.value.message
    assert raised.value.exit_code == 2


def test_a_methods_measured_handler_is_built_once_for_the_handler_it_measures() -> None:
    interceptor = ServerMetricsInterceptor(CollectorRegistry())

    @dataclass
    class Details:
        method: str

    handler = grpc.unary_unary_rpc_method_handler(_ok)
    ok = Details(f"/{SERVICE}/Ok")
    measured = interceptor.intercept_service(lambda _: handler, ok)
    assert interceptor.intercept_service(lambda _: handler, ok) is measured
    replaced = grpc.unary_unary_rpc_method_handler(_ok)
    assert interceptor.intercept_service(lambda _: replaced, ok) is not measured
    assert interceptor.intercept_service(lambda _: None, Details("/x.Y/Made.Up")) is None
