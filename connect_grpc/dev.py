"""``connect-grpc dev``: the local broker, a standalone worker and a demo pipeline
(FileStreamSource → Kafka topic → FileStreamSink), with its status shown.

Every run starts from the same state, so a second run shows what the first did: the demo
directory is emptied (input, output, the offsets file, its journal and temporary files)
and the demo's topic and its sink's consumer group are deleted and the topic created again
(the broker keeps its data across runs).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import structlog

from connect_grpc.app import StandaloneProcess
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kafka import broker, processes
from connect_grpc.kernel.domain import ConnectorStatus, TargetState
from connect_grpc.kernel.kafka_clients import is_retriable
from connect_grpc.logs.output import capture_output, restore_output
from connect_grpc.runtime.client_settings import sink_group_id

log = structlog.get_logger(__name__)

DEMO_TOPIC = "connect-demo"
DEMO_LINES = 1000
DEMO_DIR = Path("/tmp/connect-demo")
DEMO_SOURCE = "demo-file-source"
DEMO_SINK = "demo-file-sink"
#: How long the demo waits for its lines to reach the output file.
COPY_TIMEOUT_S = 120.0
#: How long a reset of the topic and group may take: a sink member of a demo killed with
#: -9 stays in the group until its session times out (45 s by default).
RESET_TIMEOUT_S = 60.0
_KAFKA_TIMEOUT_S = 10.0


def _demo_connectors(demo_dir: Path) -> dict[str, dict[str, str]]:
    return {
        DEMO_SOURCE: {
            "connector.class": "FileStreamSource",
            "tasks.max": "1",
            "file": str(demo_dir / "input.txt"),
            "topic": DEMO_TOPIC,
        },
        DEMO_SINK: {
            "connector.class": "FileStreamSink",
            "tasks.max": "1",
            "file": str(demo_dir / "output.txt"),
            "topics": DEMO_TOPIC,
        },
    }


def try_hint(port: int, which: Callable[[str], str | None] = shutil.which) -> str:
    """What to try next against the demo's worker: grpcurl's listing of its services when
    grpcurl is installed (optional: it comes with Go), else the same look through ctl,
    which is installed with connect-grpc."""
    target = f"127.0.0.1:{port}"
    if which("grpcurl") is not None:
        return f"Try: grpcurl -plaintext {target} list"
    ctl = "connect-grpc" if which("connect-grpc") is not None else _own_command()
    return f"Try: {ctl} ctl --target {target} get connectors"


def _own_command() -> str:
    """This interpreter's connect-grpc script (``.venv/bin/connect-grpc`` for ``make
    demo``), as a path relative to the working directory when it is under it."""
    script = Path(sys.executable).parent / "connect-grpc"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _describe(status: ConnectorStatus) -> str:
    tasks = ", ".join(f"task {t.id}: {t.status.state.value}" for t in status.tasks)
    return f"  {status.name:<18} {status.connector.state.value:<8} [{tasks}]\n"


#: The offsets file in the demo directory; the store also writes ``<name>.journal`` and,
#: while it rewrites the file, ``<name>*.tmp`` (storage/file_offsets.py).
OFFSETS_FILE = "connect.offsets"


def demo_files(demo_dir: Path) -> list[Path]:
    """Every file of ``demo_dir`` the demo writes (and only those: the directory is the
    user's to choose)."""
    return [
        demo_dir / "input.txt",
        demo_dir / "output.txt",
        demo_dir / OFFSETS_FILE,
        demo_dir / f"{OFFSETS_FILE}.journal",
        *demo_dir.glob(f"{OFFSETS_FILE}*.tmp"),
    ]


def fresh_demo_dir(demo_dir: Path) -> None:
    """Removes the demo's files from an earlier run (a stale offsets journal would make the
    source resume in the middle of the new input) and creates an empty input file."""
    demo_dir.mkdir(parents=True, exist_ok=True)
    for leftover in demo_files(demo_dir):
        leftover.unlink(missing_ok=True)
    (demo_dir / "input.txt").touch()


def reset_demo_topic(bootstrap_servers: str, timeout: float = RESET_TIMEOUT_S) -> None:
    """Deletes the demo sink's consumer group and the demo topic, then creates the topic
    again, empty: the sink then starts at the first line of this run, whatever an earlier
    run left in the broker.

    Raises:
        DemoResetError: the group or the topic could not be deleted or created in time.
    """
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    deadline = time.monotonic() + timeout
    group = sink_group_id(DEMO_SINK, _demo_connectors(DEMO_DIR)[DEMO_SINK])
    _delete_group(admin, group, deadline)
    _delete_topic(admin, deadline)
    _create_topic(admin, deadline)
    log.info("demo_topic_reset", topic=DEMO_TOPIC, group=group)


class DemoResetError(RuntimeError):
    """The demo's topic or consumer group could not be reset."""


def _until_done(
    call: Callable[[], object], what: str, deadline: float, done: Sequence[int] = (),
    retry: Sequence[int] = (),
) -> None:
    """Calls ``call`` (an admin request whose future it waits for) until it succeeds or
    fails with a code of ``done``; retries timeouts, retriable errors (a fresh broker has
    no group coordinator yet) and codes of ``retry`` until ``deadline``."""
    from confluent_kafka import KafkaError, KafkaException

    while True:
        try:
            call()
            return
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in done:
                return
            # the project's one classification (a fresh broker answers NOT_COORDINATOR for
            # a while, which librdkafka does not flag retriable)
            retriable = is_retriable(error) or error.code() in (KafkaError._TIMED_OUT, *retry)
            if not retriable or time.monotonic() > deadline:
                raise DemoResetError(f"cannot {what}: {error}") from exc
        time.sleep(0.5)


def _delete_group(admin: Any, group: str, deadline: float) -> None:
    from confluent_kafka import KafkaError

    _until_done(
        lambda: admin.delete_consumer_groups([group], request_timeout=_KAFKA_TIMEOUT_S)[
            group
        ].result(),
        f"delete the demo sink's consumer group {group} (is another demo worker running?)",
        deadline,
        done=[KafkaError.GROUP_ID_NOT_FOUND],
        # a member of a demo killed with -9 stays until its session times out
        retry=[KafkaError.NON_EMPTY_GROUP],
    )


def _delete_topic(admin: Any, deadline: float) -> None:
    from confluent_kafka import KafkaError

    _until_done(
        lambda: admin.delete_topics([DEMO_TOPIC], operation_timeout=_KAFKA_TIMEOUT_S)[
            DEMO_TOPIC
        ].result(),
        f"delete the demo topic {DEMO_TOPIC}",
        deadline,
        done=[KafkaError.UNKNOWN_TOPIC_OR_PART],
    )
    while DEMO_TOPIC in admin.list_topics(timeout=_KAFKA_TIMEOUT_S).topics:
        if time.monotonic() > deadline:
            raise DemoResetError(f"the demo topic {DEMO_TOPIC} is still being deleted")
        time.sleep(0.2)


def _create_topic(admin: Any, deadline: float) -> None:
    from confluent_kafka import KafkaError

    # Public, but re-exported without __all__ in confluent-kafka 2.16's typed package.
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    topic = NewTopic(DEMO_TOPIC, num_partitions=1, replication_factor=1)
    _until_done(
        lambda: admin.create_topics([topic], operation_timeout=_KAFKA_TIMEOUT_S)[
            DEMO_TOPIC
        ].result(),
        f"create the demo topic {DEMO_TOPIC}",
        deadline,
        retry=[KafkaError.TOPIC_ALREADY_EXISTS],  # its deletion is still being completed
    )


def _wait_for_lines(path: Path, count: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        seen = len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0
        if seen >= count:
            break
        time.sleep(0.5)
    return seen


def _say(text: str, out: TextIO | None = None) -> None:
    """A progress line of the demo, on stdout (the logs go to stderr): ``out`` once
    ``capture_output`` has replaced ``sys.stdout``."""
    stream = out or sys.stdout
    stream.write(f"==> {text}\n")
    stream.flush()


def _start_broker(kafka_port: int) -> tuple[str, bool]:
    """(bootstrap servers, whether this run started the broker).

    Raises:
        KafkaBrokerError: it could not be started.
    """
    running = broker.status()
    if running is not None:
        _say(f"using the local Kafka broker already running at {running}")
        return running, False
    _say(f"starting the local Kafka broker on 127.0.0.1:{kafka_port} (first time: its jars "
         "are fetched with mvn, about 1 min; then about 10 s)")
    return broker.start_background(port=kafka_port), True


def run_dev(
    port: int,
    run_seconds: float,
    kafka_port: int = broker.DEFAULT_BROKER_PORT,
    bootstrap_servers: str | None = None,
    demo_dir: Path = DEMO_DIR,
) -> int:
    """Runs the demo; returns the process exit code. With ``bootstrap_servers`` it uses that
    broker and starts none."""
    started_broker = False
    try:
        if bootstrap_servers is None:
            bootstrap, started_broker = _start_broker(kafka_port)
        else:
            bootstrap = bootstrap_servers
        _say(f"resetting the demo's topic {DEMO_TOPIC} and directory {demo_dir}")
        reset_demo_topic(bootstrap)
    except (processes.KafkaBrokerError, DemoResetError) as exc:
        log.error("demo_start_failed", error=str(exc))
        if started_broker:
            broker.stop()
        return 1
    fresh_demo_dir(demo_dir)
    config = WorkerConfig.from_properties({
        "bootstrap.servers": bootstrap,
        "listeners": f"grpc://127.0.0.1:{port}",
        "offset.storage.file.filename": str(demo_dir / OFFSETS_FILE),
        "worker.id": f"dev-worker:{port}",
        "spark.master": "local[*]",
    })
    process = StandaloneProcess(config)
    process.install_signal_handlers()
    console = capture_output()  # what plugins print becomes masked log lines
    try:
        _say("starting the worker and its Spark session (usually 10-30 s; minutes on a busy "
             "machine or the first start after boot)", console.stdout)
        process.start()
        for name, connector_config in _demo_connectors(demo_dir).items():
            process.herder.create_connector(name, connector_config, TargetState.STARTED)
        with (demo_dir / "input.txt").open("a", encoding="utf-8") as handle:
            handle.writelines(f"demo line {i}\n" for i in range(DEMO_LINES))
        _say(f"waiting for {DEMO_LINES} lines to reach {demo_dir / 'output.txt'} "
             f"(a few seconds; at most {COPY_TIMEOUT_S:.0f} s)", console.stdout)
        copied = _wait_for_lines(demo_dir / "output.txt", DEMO_LINES, timeout=COPY_TIMEOUT_S)
        out = console.stdout
        out.write(f"\nKafka broker:  {bootstrap}\nWorker (gRPC): 127.0.0.1:{process.server.port}\n")
        out.write(f"Pipeline:      {demo_dir / 'input.txt'} -> topic {DEMO_TOPIC} -> "
                  f"{demo_dir / 'output.txt'}\nLines copied:  {copied}/{DEMO_LINES}\n")
        out.write("Connectors:\n")
        for name in process.herder.connectors():
            out.write(_describe(process.herder.connector_status(name)))
        out.write(f"\n{try_hint(process.server.port)}\n")
        out.write("Append lines to the input file to see them flow; Ctrl-C stops.\n")
        out.flush()
        process.wait(run_seconds or None)
        return 0 if copied >= DEMO_LINES else 1
    finally:
        process.shutdown()
        restore_output()
        if started_broker:
            broker.stop()
