"""KIP-1017's liveness on a distributed worker, over real gRPC: a connector whose start hangs
holds the worker's reconciler loop, and once it has been held past
``health.liveness.timeout.ms`` the worker is not live (``connect.v1.live``), nor ready, with
the loop named in the log and the gauges on its Prometheus endpoint; released, it is both
again, and a Watch on the check streamed each change. (Readiness through a broker outage,
with liveness untouched: tests/integration/test_outage.py.)"""

from __future__ import annotations

import threading
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from connect_grpc.config.worker import LIVENESS_TIMEOUT_MIN_MS
from connect_grpc.kafka.ports import free_port
from connect_grpc.testing.cluster import WorkerProcess, cluster_properties, wait_until
from connect_grpc.testing.plugins import HOLD_CONNECTOR_START, read_events
from connect_grpc.v1 import connect_pb2 as pb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
LIVE = "connect.v1.live"
READY = "connect.v1.ready"
SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


def status(channel: grpc.Channel, service: str) -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(reply.status)


def test_a_held_loop_makes_the_worker_not_live_until_released(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    metrics_port = free_port()
    properties = {
        **cluster_properties(f"health-{uuid.uuid4().hex[:8]}"),
        # the smallest bound accepted: the test waits it out once
        "health.liveness.timeout.ms": str(LIVENESS_TIMEOUT_MIN_MS),
        "metrics.listener": f"http://127.0.0.1:{metrics_port}",
    }
    worker = WorkerProcess(tmp_path / "worker", kafka_bootstrap, properties, mode="distributed")
    release, events = tmp_path / "release", tmp_path / "events.jsonl"
    with worker:
        channel = worker.channel
        assert channel is not None
        assert status(channel, LIVE) == SERVING and status(channel, READY) == SERVING
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=LIVE))
        streamed: list[int] = []
        gatherer = threading.Thread(target=_gather, args=(watch, streamed), daemon=True)
        gatherer.start()

        config = {"connector.class": SOURCE, "tasks.max": "1", "topic": "health-held",
                  "test.events.file": str(events), HOLD_CONNECTOR_START: str(release)}
        worker.stub.CreateConnector(pb.CreateConnectorRequest(name="held", config=config),
                                    timeout=30)
        wait_until(lambda: any(e["event"] == "connector_start" for e in read_events(events)),
                   timeout=30)
        wait_until(lambda: status(channel, LIVE) == NOT_SERVING,
                   timeout=LIVENESS_TIMEOUT_MIN_MS / 1000 + 20)
        assert status(channel, READY) == NOT_SERVING and status(channel, "") == NOT_SERVING
        scraped = _scrape(metrics_port)
        assert 'connect_grpc_worker_health_serving{check="live"} 0.0' in scraped
        assert ('connect_grpc_worker_health_not_serving_cause{cause="loop_stuck",check="live"} '
                '1.0') in scraped
        logs = worker.logs()
        assert "health_check_not_serving" in logs and "cluster-reconciler for" in logs

        release.touch()
        wait_until(lambda: status(channel, LIVE) == SERVING, timeout=15)
        wait_until(lambda: status(channel, READY) == SERVING, timeout=15)
        wait_until(lambda: streamed[-1:] == [SERVING], timeout=10)
        watch.cancel()
        gatherer.join(5)
        assert [s for i, s in enumerate(streamed) if i == 0 or streamed[i - 1] != s] == [
            SERVING, NOT_SERVING, SERVING]
        assert 'connect_grpc_worker_health_serving{check="live"} 1.0' in _scrape(metrics_port)
        assert worker.returncode is None


def _gather(watch: Iterator[health_pb2.HealthCheckResponse], into: list[int]) -> None:
    try:
        for reply in watch:
            into.append(int(reply.status))
    except grpc.RpcError:
        pass  # cancelled at the end of the test


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return str(answer.read().decode("utf-8"))
