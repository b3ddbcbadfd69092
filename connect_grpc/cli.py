"""The ``connect-grpc`` command: standalone and distributed workers, local Kafka broker,
development demo, and ``ctl``, the command-line client of a running worker.

standalone and distributed exit with 0 after a graceful stop, 2 when their configuration is
unusable (worker properties, connector files, offsets file, plugin.path, listener, internal
topics) and 1 when starting failed at run time (Spark, Kafka); each start-up failure is
one worker_start_failed log line that names the file or property and the fix.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from connect_grpc.ctl import COMPLETE_VAR as CTL_COMPLETE_VAR
from connect_grpc.kafka.ports import DEFAULT_BROKER_PORT
from connect_grpc.kernel.errors import InvalidArgumentError, StartupError
from connect_grpc.kernel.properties import read_properties

if TYPE_CHECKING:  # imported where a worker is run: ctl, which runs none, starts fast
    # without the worker's config (structlog, rich's tracebacks), Spark or Kafka clients,
    # and a worker without ctl's client, click and rich
    from connect_grpc.app import DistributedProcess, StandaloneProcess
    from connect_grpc.config.connector_files import ConnectorRequest
    from connect_grpc.config.worker import WorkerConfig

P = TypeVar("P", "StandaloneProcess", "DistributedProcess")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="connect-grpc", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    standalone = commands.add_parser("standalone", help="run a standalone worker")
    standalone.add_argument("worker_properties", type=Path)
    standalone.add_argument("connector_files", type=Path, nargs="*")

    distributed = commands.add_parser(
        "distributed", help="run a worker of a cluster (Kafka Connect's connect-distributed)"
    )
    distributed.add_argument("worker_properties", type=Path)

    kafka = commands.add_parser("kafka", help="manage the local development broker")
    kafka.add_argument("action", choices=("start", "stop", "status"))
    kafka.add_argument("--state-dir", type=Path, default=None,
                       help="where the broker keeps its data and pid (default: "
                            "~/.cache/connect-grpc/run/kafka, or $CONNECT_GRPC_CACHE/run/kafka)")
    kafka.add_argument("--port", type=int, default=DEFAULT_BROKER_PORT,
                       help=f"broker port on 127.0.0.1 for start (default {DEFAULT_BROKER_PORT})")

    auth = commands.add_parser(
        "auth", help="bearer tokens for auth.tokens.file: new-token makes one, hash-token "
                     "hashes the token read from stdin"
    )
    auth.add_argument("action", choices=("new-token", "hash-token"))

    commands.add_parser(  # listed for --help; main() hands `ctl ...` to its own parser
        "ctl", add_help=False,
        help="drive a running worker from the command line (kcctl-like); see ctl --help",
    )

    dev = commands.add_parser("dev", help="local broker + standalone worker + demo pipeline")
    dev.add_argument("--port", type=int, default=8083, help="the worker's gRPC port")
    dev.add_argument("--kafka-port", type=int, default=DEFAULT_BROKER_PORT,
                     help=f"the local broker's port (default {DEFAULT_BROKER_PORT})")
    dev.add_argument("--run-seconds", type=float, default=0.0,
                     help="stop after this many seconds (0: run until interrupted)")
    dev.add_argument("--bootstrap-servers", default=None,
                     help="use this running broker instead of the local one (starts none)")
    dev.add_argument("--demo-dir", type=Path, default=None,
                     help="the demo's files, emptied at start (default /tmp/connect-demo)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["ctl"] or CTL_COMPLETE_VAR in os.environ:
        return _run_ctl(words[1:])
    args = _parser().parse_args(words)
    if args.command == "standalone":
        return run_standalone(args.worker_properties, args.connector_files)
    if args.command == "distributed":
        return run_distributed(args.worker_properties)
    if args.command == "auth":
        from connect_grpc.security.cli import run_auth_command

        return run_auth_command(args.action)
    if args.command == "kafka":
        from connect_grpc.kafka.cli import run_kafka_command

        _configure_logging("console")
        return run_kafka_command(args.action, args.state_dir, args.port)
    from connect_grpc.dev import DEMO_DIR, run_dev

    _configure_logging("console")
    return run_dev(args.port, args.run_seconds, args.kafka_port, args.bootstrap_servers,
                   args.demo_dir or DEMO_DIR)


def _run_ctl(args: Sequence[str]) -> int:
    """``connect-grpc ctl``, or an answer to its shell completion script."""
    from connect_grpc.ctl.root import complete, run_ctl

    instruction = os.environ.get(CTL_COMPLETE_VAR)
    return complete(instruction) if instruction else run_ctl(args)


def _log() -> Any:
    """This module's structlog logger: structlog (which imports rich's tracebacks) is
    imported by the commands that log, not by ctl."""
    import structlog

    return structlog.get_logger(__name__)


def _configure_logging(log_format: str) -> None:
    from connect_grpc.logs.output import configure_logging

    configure_logging(log_format)


def run_standalone(worker_properties: Path, connector_files: Sequence[Path]) -> int:
    """Runs a standalone worker until it is stopped.

    Every start-up failure is one ``worker_start_failed`` log line naming the file or
    property at fault and the fix (``error``, ``fix``, ``file``, ``property``), without a
    stack trace, and a non-zero exit code, as Kafka Connect's start-up errors:

    - 2: the worker properties, a connector file, the offsets file, ``plugin.path`` or the
      listener is unusable. Everything the worker can check alone is checked before Spark
      starts or Kafka is contacted.
    - 1: a failure at run time (Spark or Kafka while starting, anything unexpected).

    Whatever had started (gRPC server, Spark) is stopped before the command returns.
    0 is the exit code after a graceful stop.
    """
    begun = time.monotonic()
    try:
        process, requests = _prepare(worker_properties, connector_files)
    except Exception as exc:  # every start-up failure ends in one line, without a trace
        return _report(_startup_error(exc))
    return _serve(process, lambda: process.start(requests), time.monotonic() - begun)


def run_distributed(worker_properties: Path) -> int:
    """Runs a worker of a cluster until it is stopped; exit codes as :func:`run_standalone`
    (2 also for a bad ``group.id``, topic or ``advertised.listener`` and for internal
    topics that exist but are unusable)."""
    begun = time.monotonic()
    try:
        process = _prepare_distributed(worker_properties)
    except Exception as exc:  # every start-up failure ends in one line, without a trace
        return _report(_startup_error(exc))
    return _serve(process, process.start, time.monotonic() - begun)


def _serve(
    process: StandaloneProcess | DistributedProcess, start: Callable[[], None], prepare_s: float
) -> int:
    """Starts the prepared process (``prepare_s``: the seconds its preparation took) and
    serves until it is stopped. ``worker_ready`` says how long the start took, since the
    process began (``seconds``: the interpreter and imports included), and phase by phase."""
    import structlog

    from connect_grpc.kernel.start_phases import process_age_s
    from connect_grpc.logs.output import capture_output

    structlog.contextvars.bind_contextvars(worker_id=process.config.worker_id)
    capture_output()  # what plugins print becomes masked log lines
    process.install_signal_handlers()
    try:
        start()
    except Exception as exc:
        code = _report(_startup_error(exc))
        _stop_quietly(process)
        return code
    age = process_age_s()
    _log().info(
        "worker_ready",
        port=process.server.port,
        seconds=None if age is None else round(age, 2),
        prepare_s=round(prepare_s, 2),
        **process.start_phases.fields(),
    )
    process.wait()
    return 0


def _prepare_distributed(worker_properties: Path) -> DistributedProcess:
    from connect_grpc.cluster.config import DistributedConfig
    from connect_grpc.config.worker import WorkerConfig

    props = _read_worker_properties(worker_properties)
    _configure_logging(_log_format(props))
    try:
        config = WorkerConfig.from_properties(props)
        cluster = DistributedConfig.from_properties(props)
    except InvalidArgumentError as exc:
        raise _property_error(worker_properties, exc) from None
    _check_plugin_path(worker_properties, config)
    from connect_grpc.app import DistributedProcess

    return _bound(config, lambda: DistributedProcess(config, cluster))


def _prepare(
    worker_properties: Path, connector_files: Sequence[Path]
) -> tuple[StandaloneProcess, list[tuple[Path, ConnectorRequest]]]:
    """Reads and checks every input, then builds the process (binding its listener); starts
    nothing."""
    props = _read_worker_properties(worker_properties)
    _configure_logging(_log_format(props))
    swapped = swapped_arguments_error(worker_properties, props, connector_files)
    if swapped is not None:
        raise swapped
    config = _worker_config(worker_properties, props)
    _check_plugin_path(worker_properties, config)
    requests = [(path, _connector_request(path)) for path in connector_files]
    return _standalone_process(config), requests


STANDALONE_USAGE = "connect-grpc standalone worker.properties connector1.properties|json ..."


def swapped_arguments_error(
    worker_properties: Path, props: dict[str, str], connector_files: Sequence[Path]
) -> StartupError | None:
    """A StartupError when the arguments of ``standalone`` look swapped: the worker file
    looks like a connector file, or a connector file looks like worker properties; else
    None. Without it the user is told to fix ``bootstrap.servers`` in a connector file."""
    if _looks_like_connector(worker_properties, props):
        return _swapped(
            worker_properties,
            f"{worker_properties} is given as the worker properties but looks like a "
            "connector file (it names connector.class, not bootstrap.servers)",
        )
    for path in connector_files:
        if _looks_like_worker(path):
            return _swapped(
                path,
                f"{path} is given as a connector file but looks like worker properties "
                "(it names bootstrap.servers, not connector.class)",
            )
    return None


def _swapped(path: Path, what: str) -> StartupError:
    return StartupError(
        f"{what}: the arguments look swapped",
        fix=f"give the worker properties first: {STANDALONE_USAGE}",
        file=str(path),
    )


def _property_names(props: dict[str, str]) -> set[str]:
    # a JSON file read as properties yields keys such as '"connector.class"' or '{"name"'
    return {key.strip('{"\' ') for key in props}


def _looks_like_connector(path: Path, props: dict[str, str]) -> bool:
    names = _property_names(props)
    if "bootstrap.servers" in names:
        return False
    return path.suffix.lower() == ".json" or "connector.class" in names


def _looks_like_worker(path: Path) -> bool:
    if path.suffix.lower() == ".json":
        return False
    try:
        names = _property_names(read_properties(path))
    except (OSError, UnicodeDecodeError):
        return False  # reported as an unreadable connector file
    return "bootstrap.servers" in names and "connector.class" not in names


def _startup_error(exc: Exception) -> StartupError:
    if isinstance(exc, StartupError):
        return exc
    return StartupError(
        f"the worker could not start: {type(exc).__name__}: {exc}",
        fix="check that Kafka (bootstrap.servers) is reachable and that Spark (spark.*) and "
            "the plugins (plugin.path) can start, then start the worker again",
        exit_code=1,
    )


def _stop_quietly(process: StandaloneProcess | DistributedProcess) -> None:
    """Stops what had started; a failure to stop is logged in one line, not raised."""
    try:
        process.shutdown()
    except Exception as exc:
        _log().warning("worker_stop_failed", error=f"{type(exc).__name__}: {exc}")


def _report(error: StartupError) -> int:
    """Logs the one ``worker_start_failed`` line; returns the exit code."""
    import structlog

    if not structlog.is_configured():
        _configure_logging("console")
    details = {"file": error.file, "property": error.property_name}
    _log().error(
        "worker_start_failed",
        error=error.message,
        fix=error.fix,
        **{key: value for key, value in details.items() if value is not None},
    )
    return error.exit_code


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
    from connect_grpc.config.worker import WorkerConfig

    try:
        config = WorkerConfig.from_properties(props)
        config.standalone_offset_file()
    except InvalidArgumentError as exc:
        raise _property_error(path, exc) from None
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
    from connect_grpc.config.connector_files import load_connector_file

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
            f"invalid connector file {path}: {exc.message.removeprefix(f'{path}: ')}",
            fix=f"fix {path} (see config/file-source.json for the format)",
            file=str(path),
        ) from None


def _check_plugin_path(path: Path, config: WorkerConfig) -> None:
    """Each ``plugin.path`` entry must be a directory or a zip archive (what ``sys.path``
    can import from): a typo would otherwise surface later as an unknown connector class."""
    for entry in config.plugin_path:
        resolved = entry.expanduser()
        if resolved.is_dir() or zipfile.is_zipfile(resolved):
            continue
        raise StartupError(
            f"the plugin.path entry {entry} is not a directory or a zip archive",
            fix=f"fix plugin.path in {path}: a comma-separated list of existing directories",
            file=str(path),
            property_name="plugin.path",
        )


def _standalone_process(config: WorkerConfig) -> StandaloneProcess:
    from connect_grpc.app import StandaloneProcess

    return _bound(config, lambda: StandaloneProcess(config))


def _bound(config: WorkerConfig, build: Callable[[], P]) -> P:
    """Builds the process (which binds its listener); a listener that cannot be bound is a
    StartupError naming ``listeners``."""
    try:
        return build()
    except OSError as exc:
        scheme = "grpcs" if config.security.tls is not None else "grpc"
        listener = f"{scheme}://{config.listener_host}:{config.listener_port}"
        raise StartupError(
            f"cannot listen on {listener}: {exc} (the port is in use, e.g. by another "
            "worker, or the host is not an address of this machine)",
            fix="stop what holds the port, or set the property listeners to "
                "grpc://HOST:PORT with a free port and an address of this machine",
            property_name="listeners",
        ) from None


if __name__ == "__main__":
    sys.exit(main())
