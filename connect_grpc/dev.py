"""``connect-grpc dev``: the local broker, a standalone worker and a demo pipeline
(FileStreamSource → Kafka topic → FileStreamSink), with its status shown."""

from __future__ import annotations

import time
from pathlib import Path

import structlog

from connect_grpc.app import StandaloneProcess
from connect_grpc.domain import ConnectorStatus, TargetState
from connect_grpc.kafka import broker
from connect_grpc.logs import capture_output, restore_output
from connect_grpc.worker_config import WorkerConfig

log = structlog.get_logger(__name__)

DEMO_TOPIC = "connect-demo"
DEMO_LINES = 1000
DEMO_DIR = Path("/tmp/connect-demo")


def _demo_connectors(demo_dir: Path) -> dict[str, dict[str, str]]:
    return {
        "demo-file-source": {
            "connector.class": "FileStreamSource",
            "tasks.max": "1",
            "file": str(demo_dir / "input.txt"),
            "topic": DEMO_TOPIC,
        },
        "demo-file-sink": {
            "connector.class": "FileStreamSink",
            "tasks.max": "1",
            "file": str(demo_dir / "output.txt"),
            "topics": DEMO_TOPIC,
        },
    }


def _describe(status: ConnectorStatus) -> str:
    tasks = ", ".join(f"task {t.id}: {t.status.state.value}" for t in status.tasks)
    return f"  {status.name:<18} {status.connector.state.value:<8} [{tasks}]\n"


def _fresh_demo_dir() -> Path:
    demo_dir = DEMO_DIR
    demo_dir.mkdir(parents=True, exist_ok=True)
    for leftover in ("input.txt", "output.txt", "connect.offsets"):
        (demo_dir / leftover).unlink(missing_ok=True)
    (demo_dir / "input.txt").touch()
    return demo_dir


def _wait_for_lines(path: Path, count: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        seen = len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0
        if seen >= count:
            break
        time.sleep(0.5)
    return seen


def run_dev(port: int, run_seconds: float, kafka_port: int = broker.DEFAULT_BROKER_PORT) -> int:
    """Runs the demo; returns the process exit code."""
    started_broker = broker.status() is None
    try:
        bootstrap = broker.start_background(port=kafka_port)
    except broker.KafkaBrokerError as exc:
        log.error("kafka_start_failed", error=str(exc))
        return 1
    demo_dir = _fresh_demo_dir()
    config = WorkerConfig.from_properties({
        "bootstrap.servers": bootstrap,
        "listeners": f"grpc://127.0.0.1:{port}",
        "offset.storage.file.filename": str(demo_dir / "connect.offsets"),
        "worker.id": f"dev-worker:{port}",
        "spark.master": "local[*]",
    })
    process = StandaloneProcess(config)
    process.install_signal_handlers()
    console = capture_output()  # what plugins print becomes masked log lines
    try:
        process.start()
        for name, connector_config in _demo_connectors(demo_dir).items():
            process.herder.create_connector(name, connector_config, TargetState.STARTED)
        with (demo_dir / "input.txt").open("a", encoding="utf-8") as handle:
            handle.writelines(f"demo line {i}\n" for i in range(DEMO_LINES))
        copied = _wait_for_lines(demo_dir / "output.txt", DEMO_LINES, timeout=120)
        out = console.stdout
        out.write(f"\nKafka broker:  {bootstrap}\nWorker (gRPC): 127.0.0.1:{process.server.port}\n")
        out.write(f"Pipeline:      {demo_dir / 'input.txt'} -> topic {DEMO_TOPIC} -> "
                  f"{demo_dir / 'output.txt'}\nLines copied:  {copied}/{DEMO_LINES}\n")
        out.write("Connectors:\n")
        for name in process.herder.connectors():
            out.write(_describe(process.herder.connector_status(name)))
        out.write(f"\nTry: grpcurl -plaintext 127.0.0.1:{process.server.port} list\n")
        out.write("Append lines to the input file to see them flow; Ctrl-C stops.\n")
        out.flush()
        process.wait(run_seconds or None)
        return 0 if copied >= DEMO_LINES else 1
    finally:
        process.shutdown()
        restore_output()
        if started_broker:
            broker.stop()
