"""The ``connect-grpc`` command: standalone worker, local Kafka broker, development demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from connect_grpc.app import StandaloneProcess
from connect_grpc.errors import InvalidArgumentError, StartupError
from connect_grpc.herder.connector_files import ConnectorRequest, load_connector_file
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
    """Runs a standalone worker until it is stopped.

    Exit codes: 0 after a graceful stop; 2 when the worker properties, a connector file, the
    offsets file or the listener are unusable (nothing was started); 1 when starting the
    worker's runtime or its connectors failed. Each failure is one ``worker_start_failed``
    log line naming the file or property and the fix, without a stack trace.
    """
    try:
        props = _read_worker_properties(worker_properties)
        configure_logging(_log_format(props))
        config = _worker_config(worker_properties, props)
        requests = [(path, _connector_request(path)) for path in connector_files]
        process = _standalone_process(config)
    except StartupError as exc:
        _report(exc)
        return 2
    structlog.contextvars.bind_contextvars(worker_id=config.worker_id)
    process.install_signal_handlers()
    try:
        process.start(requests)
    except StartupError as exc:
        _report(exc)
        process.shutdown()
        return 2
    except Exception as exc:  # every start-up failure ends in one line, without a trace
        _report(StartupError(
            f"the worker could not start: {type(exc).__name__}: {exc}",
            fix="check that Kafka (bootstrap.servers) and Spark (spark.*) are reachable, "
                "then start the worker again",
        ))
        process.shutdown()
        return 1
    log.info("worker_ready", port=process.server.port)
    process.wait()
    return 0


def _report(error: StartupError) -> None:
    if not structlog.is_configured():
        configure_logging("console")
    details = {"file": error.file, "property": error.property_name}
    log.error(
        "worker_start_failed",
        error=error.message,
        fix=error.fix,
        **{key: value for key, value in details.items() if value is not None},
    )


def _read_worker_properties(path: Path) -> dict[str, str]:
    try:
        return read_properties(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StartupError(
            f"cannot read the worker properties file {path}: {reason}",
            fix="pass the path of a readable worker .properties file "
                "(see config/worker-standalone.properties)",
            file=str(path),
        ) from None


def _log_format(props: dict[str, str]) -> str:
    wanted = props.get("log.format", "console")
    return wanted if wanted in ("console", "json") else "console"


def _worker_config(path: Path, props: dict[str, str]) -> WorkerConfig:
    try:
        config = WorkerConfig.from_properties(props)
    except InvalidArgumentError as exc:
        raise _property_error(path, exc) from None
    if config.offset_file is None:
        raise _property_error(path, InvalidArgumentError.for_field(
            "offset.storage.file.filename", "is required in standalone mode"))
    return config


def _property_error(path: Path, exc: InvalidArgumentError) -> StartupError:
    prop = exc.violations[0].field if exc.violations else None
    return StartupError(
        f"invalid worker properties file {path}: {exc.message}",
        fix=f"set {prop} correctly in {path}" if prop else f"fix {path}",
        file=str(path),
        property_name=prop,
    )


def _connector_request(path: Path) -> ConnectorRequest:
    try:
        return load_connector_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StartupError(
            f"cannot read the connector file {path}: {reason}",
            fix="pass the path of a readable connector .json or .properties file",
            file=str(path),
        ) from None
    except InvalidArgumentError as exc:
        raise StartupError(
            f"invalid connector file {path}: {exc.message}",
            fix=f"fix {path} (see config/file-source.json for the format)",
            file=str(path),
        ) from None


def _standalone_process(config: WorkerConfig) -> StandaloneProcess:
    try:
        return StandaloneProcess(config)
    except OSError as exc:
        listener = f"grpc://{config.listener_host}:{config.listener_port}"
        raise StartupError(
            f"cannot listen on {listener}: {exc} (is another worker running on that port?)",
            fix="stop what holds the port, or choose another one with the property listeners",
            property_name="listeners",
        ) from None


if __name__ == "__main__":
    sys.exit(main())
