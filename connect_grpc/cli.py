"""The ``connect-grpc`` command: standalone worker, local Kafka broker, development demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from connect_grpc.app import StandaloneProcess
from connect_grpc.errors import ConnectError
from connect_grpc.kafka.broker import DEFAULT_BROKER_PORT
from connect_grpc.logs import configure_logging
from connect_grpc.worker_config import WorkerConfig, read_properties

log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="connect-grpc", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    standalone = commands.add_parser("standalone", help="run a standalone worker")
    standalone.add_argument("worker_properties", type=Path)
    standalone.add_argument("connector_files", type=Path, nargs="*")

    kafka = commands.add_parser("kafka", help="manage the local development broker")
    kafka.add_argument("action", choices=("start", "stop", "status"))
    kafka.add_argument("--state-dir", type=Path, default=None,
                       help="where the broker keeps its data and pid (default: "
                            "~/.cache/connect-grpc/run/kafka, or $CONNECT_GRPC_CACHE/run/kafka)")
    kafka.add_argument("--port", type=int, default=DEFAULT_BROKER_PORT,
                       help=f"broker port on 127.0.0.1 for start (default {DEFAULT_BROKER_PORT})")

    dev = commands.add_parser("dev", help="local broker + standalone worker + demo pipeline")
    dev.add_argument("--port", type=int, default=8083, help="the worker's gRPC port")
    dev.add_argument("--kafka-port", type=int, default=DEFAULT_BROKER_PORT,
                     help=f"the local broker's port (default {DEFAULT_BROKER_PORT})")
    dev.add_argument("--run-seconds", type=float, default=0.0,
                     help="stop after this many seconds (0: run until interrupted)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "standalone":
        return run_standalone(args.worker_properties, args.connector_files)
    if args.command == "kafka":
        from connect_grpc.kafka.cli import run_kafka_command

        configure_logging("console")
        return run_kafka_command(args.action, args.state_dir, args.port)
    from connect_grpc.dev import run_dev

    configure_logging("console")
    return run_dev(args.port, args.run_seconds, args.kafka_port)


def run_standalone(worker_properties: Path, connector_files: Sequence[Path]) -> int:
    props = read_properties(worker_properties)
    configure_logging(props.get("log.format", "console"))
    try:
        config = WorkerConfig.from_properties(props)
        process = StandaloneProcess(config)
    except ConnectError as exc:
        log.error("worker_config_invalid", error=exc.message)
        return 2
    process.install_signal_handlers()
    structlog.contextvars.bind_contextvars(worker_id=config.worker_id)
    try:
        process.start(connector_files)
    except ConnectError as exc:
        log.error("worker_start_failed", error=exc.message)
        process.shutdown()
        return 1
    log.info("worker_ready", port=process.server.port)
    process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
