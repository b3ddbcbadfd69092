"""KIP-1017's two health checks on the standard gRPC health service: liveness (the herder's
loops go round within ``health.liveness.timeout.ms``) and readiness (started; distributed:
a member of its group named by the assignment it read), each a service a probe names,
logged once per transition and exported as gauges. Time here is an injected clock: nothing
sleeps for a loop to look stuck."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
import structlog
import yaml
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from connect_grpc.api.health import LIVE_SERVICE, READY_SERVICE, HealthReporter
from connect_grpc.api.server import SERVICE_NAME, ApiServer
from connect_grpc.config.worker import LIVENESS_TIMEOUT_MIN_MS, WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S
from connect_grpc.herder.health_checks import LOOP_STUCK, LoopHeartbeats, group_readiness
from connect_grpc.herder.interface import Herder
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.ticker import run_ticks
from connect_grpc.kernel.domain import HealthReport
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.metrics.health_metrics import HealthGauges
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.documents import DOCS
from tests.unit.fake_worker import FakeWorker

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ---- heartbeats and their bound --------------------------------------------------------------


def test_a_loop_silent_for_longer_than_the_bound_is_not_live() -> None:
    clock = Clock()
    beats = LoopHeartbeats(60_000, clock)
    reconciler, leader = beats.loop("cluster-reconciler"), beats.loop("cluster-leader")
    assert beats.report().serving  # no loop has started: nothing to be stuck
    reconciler.beat()
    leader.beat()
    clock.now += 60.0
    assert beats.report().serving  # at the bound, not past it
    leader.beat()
    clock.now += 0.5
    report = beats.report()
    assert not report.serving and report.cause == LOOP_STUCK
    assert "cluster-reconciler for 60 s" in report.reason
    assert "cluster-leader" not in report.reason
    assert "health.liveness.timeout.ms=60000" in report.reason
    reconciler.beat()
    assert beats.report().serving
    assert beats.loop("cluster-reconciler") is reconciler


def test_run_ticks_beats_at_each_turn_and_a_stuck_step_stops_the_beats() -> None:
    clock = Clock()
    beats = LoopHeartbeats(60_000, clock)
    heartbeat = beats.loop("loop")
    stopping, wake, stuck, release = (threading.Event() for _ in range(4))
    turns: list[float] = []

    def step() -> None:
        turns.append(clock.now)
        if len(turns) == 3:
            stuck.set()
            release.wait(10)
            stopping.set()

    def beat() -> None:
        clock.now += 1.0
        heartbeat.beat()

    thread = threading.Thread(target=run_ticks, args=(step,), kwargs={
        "wake": wake, "stopping": stopping, "tick_s": 0.0, "log": structlog.get_logger(),
        "failure_event": "step_failed", "beat": beat})
    thread.start()
    assert stuck.wait(10)
    assert heartbeat.silent_for() == 0.0  # beat before each of the three steps
    clock.now += 61.0  # the third step holds the loop past the bound
    report = beats.report()
    assert not report.serving and "loop for 61 s" in report.reason
    release.set()
    thread.join(10)
    assert turns == [1001.0, 1002.0, 1003.0]


def test_the_bound_is_a_validated_worker_property_above_the_longest_kafka_wait() -> None:
    base = {"bootstrap.servers": "127.0.0.1:1"}
    assert WorkerConfig.from_properties(base).resilience.liveness_timeout_ms == 60_000
    config = WorkerConfig.from_properties({**base, "health.liveness.timeout.ms": "90000"})
    assert config.resilience.liveness_timeout_ms == 90_000
    # a round waits on Kafka at most LEADER_CALL_TIMEOUT_S: an outage must not look stuck
    assert LIVENESS_TIMEOUT_MIN_MS > LEADER_CALL_TIMEOUT_S * 1000
    for bad in ("1000", "ten", "-1"):
        with pytest.raises(InvalidArgumentError) as refused:
            WorkerConfig.from_properties({**base, "health.liveness.timeout.ms": bad})
        assert "health.liveness.timeout.ms" in str(refused.value)


# ---- readiness of a cluster's worker -----------------------------------------------------------


@pytest.mark.parametrize(("facts", "cause"), [
    ({"started": False}, "starting"),
    ({"left_with": "fenced"}, "left_group"),
    ({"member": False}, "not_joined"),
    ({"assigned": ("w2",)}, "not_assigned"),
    ({}, ""),
])
def test_group_readiness(facts: dict[str, Any], cause: str) -> None:
    given: dict[str, Any] = {"started": True, "left_with": None, "member": True,
                             "assigned": ("w1", "w2"), "worker_id": "w1", **facts}
    report = group_readiness(**given)
    assert report.serving == (cause == "") and report.cause == cause


def test_a_standalone_worker_is_ready_once_started(herder: StandaloneHerder,
                                                   plugins: Plugins, tmp_path: Path) -> None:
    assert herder.readiness().serving and herder.liveness().serving
    config = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1"})
    fresh = StandaloneHerder(config, plugins, FileOffsetStore(tmp_path / "fresh.json"),
                             lambda board: FakeWorker(board, plugins))
    assert fresh.readiness().cause == "starting"
    assert fresh.liveness().serving  # starting is not being stuck
    fresh.start()
    assert fresh.readiness().serving


# ---- the health service: checks a probe names, their transitions, logs and gauges -----------


class FakeHerder:
    """Liveness from heartbeats on an injected clock; readiness as the test sets it."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.beats = LoopHeartbeats(60_000, self.clock)
        self.loop = self.beats.loop("cluster-reconciler")
        self.loop.beat()
        self.ready = HealthReport(True)

    def liveness(self) -> HealthReport:
        return self.beats.report()

    def readiness(self) -> HealthReport:
        return self.ready


class Served:
    def __init__(self, herder: FakeHerder, registry: CollectorRegistry) -> None:
        self.servicer = health.HealthServicer()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.reporter = HealthReporter(
            cast(Herder, herder), self.servicer, (SERVICE_NAME,),
            gauges=HealthGauges(registry), started=False,
        )
        self.server.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = health_pb2_grpc.HealthStub(self.channel)

    def status(self, service: str) -> int:
        request = health_pb2.HealthCheckRequest(service=service)
        return int(self.stub.Check(request, timeout=5).status)

    def watch(self, service: str) -> Iterator[health_pb2.HealthCheckResponse]:
        return cast(Iterator[health_pb2.HealthCheckResponse], self.stub.Watch(
            health_pb2.HealthCheckRequest(service=service), timeout=20))

    def close(self) -> None:
        self.channel.close()
        self.server.stop(0)


@pytest.fixture
def herder_and_registry() -> tuple[FakeHerder, CollectorRegistry]:
    return FakeHerder(), CollectorRegistry()


@pytest.fixture
def served(herder_and_registry: tuple[FakeHerder, CollectorRegistry]) -> Iterator[Served]:
    result = Served(*herder_and_registry)
    yield result
    result.close()


def test_probes_name_live_and_ready_and_watch_streams_their_transitions(
    served: Served, herder_and_registry: tuple[FakeHerder, CollectorRegistry]
) -> None:
    herder, registry = herder_and_registry
    # checks are run by hand (``_check``): the reporter's thread is not started
    served.reporter._check()
    assert served.status(LIVE_SERVICE) == SERVING
    assert served.status(READY_SERVICE) == NOT_SERVING  # still starting
    assert served.status("") == NOT_SERVING == served.status(SERVICE_NAME)
    live, ready = served.watch(LIVE_SERVICE), served.watch(READY_SERVICE)
    assert next(live).status == SERVING and next(ready).status == NOT_SERVING

    served.reporter.mark_started()
    served.reporter._check()
    assert next(ready).status == SERVING
    assert served.status("") == SERVING == served.status(SERVICE_NAME)

    with structlog.testing.capture_logs() as logs:
        herder.clock.now += 61.0  # the reconciler's loop has not gone round since
        for _ in range(3):
            served.reporter._check()
        assert next(live).status == NOT_SERVING
        assert next(ready).status == NOT_SERVING  # a stuck worker cannot do its work
        assert served.status("") == NOT_SERVING
        assert registry.get_sample_value(
            "connect_grpc_worker_health_serving", {"check": "live"}) == 0
        assert registry.get_sample_value("connect_grpc_worker_health_not_serving_cause",
                                         {"check": "live", "cause": LOOP_STUCK}) == 1
        herder.loop.beat()
        served.reporter._check()
        assert next(live).status == SERVING and next(ready).status == SERVING
    stuck = [e for e in logs if e["event"] == "health_check_not_serving"]
    # once per transition and check, however many probes and checks ran
    assert sorted(e["check"] for e in stuck) == ["live", "ready"]
    assert all("cluster-reconciler for 61 s" in e["reason"] for e in stuck)
    assert registry.get_sample_value(
        "connect_grpc_worker_health_serving", {"check": "live"}) == 1
    assert registry.get_sample_value("connect_grpc_worker_health_not_serving_cause",
                                     {"check": "live", "cause": LOOP_STUCK}) is None


def test_not_ready_is_not_not_live(
    served: Served, herder_and_registry: tuple[FakeHerder, CollectorRegistry]
) -> None:
    herder, registry = herder_and_registry
    served.reporter.mark_started()
    herder.ready = HealthReport(False, "Kafka (b:9092) has been unreachable for 40 s",
                                "kafka_unreachable")
    served.reporter._check()
    assert served.status(READY_SERVICE) == NOT_SERVING == served.status("")
    assert served.status(LIVE_SERVICE) == SERVING
    assert registry.get_sample_value("connect_grpc_worker_health_not_serving_cause",
                                     {"check": "ready", "cause": "kafka_unreachable"}) == 1


def test_a_failing_check_is_not_serving_with_its_error(served: Served) -> None:
    def broken() -> HealthReport:
        raise RuntimeError("boom")

    served.reporter._herder.readiness = broken  # type: ignore[method-assign]
    served.reporter.mark_started()
    served.reporter._check()
    assert served.status(READY_SERVICE) == NOT_SERVING
    assert served.status(LIVE_SERVICE) == SERVING


def test_the_server_is_not_ready_until_its_start_up_is_over(herder: StandaloneHerder) -> None:
    """A standalone process serves before it created its files' connectors."""
    server = ApiServer(herder, "127.0.0.1", 0)
    server.start(started=False)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)

            def status(service: str) -> int:
                request = health_pb2.HealthCheckRequest(service=service)
                return int(stub.Check(request, timeout=5).status)

            assert status(READY_SERVICE) == NOT_SERVING and status(LIVE_SERVICE) == SERVING
            server.mark_started()
            assert status(READY_SERVICE) == SERVING == status("") == status(SERVICE_NAME)
    finally:
        server.stop(0)


# ---- docs/health.md ------------------------------------------------------------------------


def _yaml_blocks(document: Path) -> list[Any]:
    lines = document.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "```yaml"]
    return [yaml.safe_load("\n".join(lines[i + 1 : lines.index("```", i + 1)])) for i in starts]


def test_the_documented_probes_name_the_checks_the_worker_serves() -> None:
    """docs/health.md's YAML is not run (no cluster here): it must at least parse and name
    the services and the port a worker serves."""
    pod, tls_probes, envoy = _yaml_blocks(DOCS / "health.md")
    probes = pod["containers"][0]
    assert probes["startupProbe"]["grpc"] == {"port": 8083, "service": LIVE_SERVICE}
    assert probes["livenessProbe"]["grpc"] == {"port": 8083, "service": LIVE_SERVICE}
    assert probes["readinessProbe"]["grpc"] == {"port": 8083, "service": READY_SERVICE}
    for probe, service in (("livenessProbe", LIVE_SERVICE), ("readinessProbe", READY_SERVICE)):
        command = tls_probes[probe]["exec"]["command"]
        assert command[0].endswith("grpc_health_probe") and f"-service={service}" in command
    check = envoy["clusters"][0]["health_checks"][0]
    assert check["grpc_health_check"] == {"service_name": READY_SERVICE}
