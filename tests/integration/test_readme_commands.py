"""README.md and the user guide work as written: their commands (README.md's start by hand;
docs/running.md's standalone worker, local broker and two-worker cluster; docs/pipeline.md's
record pipeline; docs/clients.md's grpcurl calls) and the grpcurl recipes run against live
workers. Which test runs each ```sh block of the documents:
tests/unit/test_documented_commands.py.

- grpcurl is installed once, pinned (``warm_ups.GRPCURL_VERSION``), from the Go module proxy
  with the ``go install`` command docs/running.md shows, into ``<cache>/go-bin/<version>``
  (``<cache>`` is ``$CONNECT_GRPC_CACHE`` or ``~/.cache/connect-grpc``), in the background
  early in the session (``warm_ups``).
- The worker is what ``make demo`` (``connect-grpc dev``) runs: a standalone worker with the
  demo's two connectors (``connect_grpc.dev``'s own definitions, on topic ``connect-demo``)
  and no test plugins, but against the session's broker and on a free port, with the demo's
  files in a temporary directory.
- Every ``grpcurl`` command of docs/clients.md's "gRPC API", and every command of
  clients/grpcurl/README.md, runs with bash in document order (the recipes in one shell, so
  their variables carry over) with only the address ``localhost:8083`` rewritten to the test
  worker's. Each must exit 0; a command followed by a ``# ERROR:`` / ``# Error …`` comment
  must fail with the documented text; a command marked ``# streams until Ctrl-C`` must still
  be streaming after a few seconds (it is then interrupted).
- docs/running.md shows ``connect-grpc kafka start|status|stop`` bare (port 9092, the default
  state dir), for users; the test runs the same commands with ``--state-dir`` (a temporary
  dir) and, for start, ``--port`` (a free port) added; their JVMs get the C1 compiler only
  (``JAVA_TOOL_OPTIONS``), as the session's Spark drivers do.
- The ``connect-grpc standalone …`` command of docs/running.md and README.md (the same one)
  runs with the files it names; only the worker properties that name this machine's ports
  and paths (``bootstrap.servers``, ``listeners``, ``offset.storage.file.filename``) are
  replaced. README.md's ``ctl`` call then runs against it.
- docs/running.md's "Distributed mode" block runs as written in one shell, twice on the
  state the first run left (the internal topics, the group), with copies of the two worker
  files whose ``bootstrap.servers`` and ``listeners`` are replaced, and the two documented
  addresses and log paths rewritten to match.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.config.worker import read_properties
from connect_grpc.dev import DEMO_DIR, DEMO_TOPIC, _demo_connectors, reset_demo_topic
from connect_grpc.kafka.broker import DEFAULT_BROKER_PORT, default_state_dir
from connect_grpc.kafka.ports import free_port
from connect_grpc.pipeline.dead_letter_headers import (
    ERROR_HEADER_CONNECTOR_NAME,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_STAGE,
)
from connect_grpc.testing import class_archive
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.documents import (
    CLIENTS,
    PIPELINE,
    README,
    ROOT,
    RUNNING,
    Command,
    commands,
    section_commands,
    section_text,
)
from tests.integration.helpers import read_all
from tests.integration.warm_ups import GRPCURL_INSTALL, install_grpcurl

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

RECIPES = ROOT / "clients" / "grpcurl" / "README.md"

DOCUMENTED_ADDRESS = "localhost:8083"
STREAM_SECONDS = 3
DEMO_LINES = 20


# --------------------------------------------------------------------------------------------
# the documented sections (tests/unit/test_documented_commands.py lists who runs each block)

#: README.md's start by hand: the local broker, the standalone worker, a ctl call.
BY_HAND_SECTION = "## By hand"
#: docs/running.md's sections.
STANDALONE_SECTION = "## Standalone mode"
DATA_SECTION = "## Where the data lives"
DISTRIBUTED_SECTION = "## Distributed mode"
#: docs/pipeline.md's record pipeline example (test_readme_record_pipeline_block).
PIPELINE_SECTION = "## A record pipeline, as Kafka Connect users write it"
#: docs/clients.md's grpcurl calls.
GRPC_API_SECTION = "## gRPC API"


# --------------------------------------------------------------------------------------------
# running them


@dataclass(frozen=True, slots=True)
class Outcome:
    command: Command
    returncode: int
    output: str

    def problem(self) -> str | None:
        """Why this outcome is not what the document promises, or None."""
        if self.command.streams:
            if self.returncode != 124 or not self.output.lstrip().startswith("{"):
                return f"expected a stream still running after {STREAM_SECONDS}s"
            return None
        if self.command.expected_error:
            wanted = [line for line in self.command.expected_error
                      if "…" not in line and "..." not in line]
            if self.returncode == 0:
                return "expected the documented error, got exit 0"
            missing = [line for line in wanted if _squash(line) not in _squash(self.output)]
            return f"documented error text missing: {missing}" if missing else None
        return None if self.returncode == 0 else f"exit {self.returncode}"

    def describe(self) -> str:
        return (f"line {self.command.line}: {self.problem()}\n$ {self.command.text}\n"
                f"{self.output[-3000:]}")


def _squash(text: str) -> str:
    return " ".join(text.split())


def run_in_one_shell(
    chosen: list[Command], address: str, path_dirs: list[Path], work: Path, timeout: float,
    replacements: Mapping[str, str] | None = None,
    environment: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """Runs the commands in order in one bash process (variables carry over), each with its
    own output and exit code; ``localhost:8083`` becomes ``address``, and each key of
    ``replacements`` its value; ``environment`` adds to (or overrides) the shell's inherited
    variables. The shell runs in a process group of its own, killed at the end, so that
    nothing a command left in the background outlives the test."""
    work.mkdir(parents=True, exist_ok=True)
    script: list[str] = []
    for index, command in enumerate(chosen):
        text = command.text.replace(DOCUMENTED_ADDRESS, address)
        for documented, actual in (replacements or {}).items():
            text = text.replace(documented, actual)
        if command.streams:
            assert command.words[0] == "grpcurl" and "<<" not in text, command
            text = f"timeout -s INT -k 5 {STREAM_SECONDS} {text}"
        script += ["{", text, f"}} >{work}/{index}.out 2>&1", f"echo $? >{work}/{index}.rc"]
    (work / "script.sh").write_text("\n".join(script) + "\n", encoding="utf-8")
    env = {**os.environ, **(environment or {}),
           "PATH": os.pathsep.join([*map(str, path_dirs), os.environ["PATH"]])}
    shell = subprocess.Popen(
        ["bash", str(work / "script.sh")], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert shell.wait(timeout) == 0
    finally:
        _kill_group(shell.pid)
    return [
        Outcome(
            command,
            int((work / f"{index}.rc").read_text(encoding="utf-8")),
            (work / f"{index}.out").read_text(encoding="utf-8", errors="replace"),
        )
        for index, command in enumerate(chosen)
    ]


def _kill_group(pgid: int) -> None:
    """Ends the process group ``pgid`` (SIGTERM, then SIGKILL after 30 s), if any is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            wait_until(lambda: not _group_alive(pgid), timeout=30)
            return
        except TimeoutError:
            continue


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_as_documented(outcomes: list[Outcome], worker: WorkerProcess) -> None:
    failed = [outcome.describe() for outcome in outcomes if outcome.problem() is not None]
    assert not failed, (f"{len(failed)} command(s) not as documented:\n\n" + "\n\n".join(failed)
                        + f"\n\nworker log (tail):\n{worker.logs()[-5000:]}")


def assert_ran(outcomes: list[Outcome]) -> None:
    """The commands a block runs before its worker starts did as documented."""
    failed = [outcome.describe() for outcome in outcomes if outcome.problem() is not None]
    assert not failed, f"{len(failed)} command(s) not as documented:\n\n" + "\n\n".join(failed)


# --------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def grpcurl_dir() -> Path:
    """The directory of the pinned grpcurl, installed once (cached across sessions)."""
    return install_grpcurl()


@dataclass(frozen=True, slots=True)
class Demo:
    worker: WorkerProcess
    bootstrap_servers: str
    input: Path
    output: Path


@pytest.fixture(scope="module")
def _demo(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """A worker like ``make demo``'s: the demo's connectors, no test plugins, and like it
    an empty topic and no sink group to start from (the broker may be one that runs across
    sessions, ``CONNECT_GRPC_KAFKA_BOOTSTRAP``)."""
    reset_demo_topic(kafka_bootstrap)
    work = tmp_path_factory.mktemp("readme-demo")
    demo_dir = work / "connect-demo"
    demo_dir.mkdir()
    (demo_dir / "input.txt").touch()
    files = []
    for name, config in _demo_connectors(demo_dir).items():
        path = work / f"{name}.json"
        path.write_text(json.dumps({"name": name, "config": config}), encoding="utf-8")
        files.append(path)
    worker = WorkerProcess(
        work / "worker", kafka_bootstrap,
        extra_properties={"test.plugins.enabled": "false"}, connector_files=files,
    )
    with worker:
        yield Demo(worker, kafka_bootstrap, demo_dir / "input.txt", demo_dir / "output.txt")


@pytest.fixture
def demo(_demo: Demo, request: pytest.FixtureRequest) -> Iterator[Demo]:
    """The module's demo worker, stopped when the last of the selected tests that use it
    ends rather than with the module: its two connectors' tasks keep running, and the
    module's later tests start workers and a broker of their own beside it."""
    yield _demo
    items = request.session.items
    later = items[items.index(request.node) + 1:]
    if not any(
        getattr(item, "module", None) is request.module
        and "demo" in getattr(item, "fixturenames", ())
        for item in later
    ):
        _demo.worker.stop()


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _records_in(bootstrap_servers: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "readme-check"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        total = 0
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10
            )
            total += high - low
        return total
    finally:
        consumer.close()


# --------------------------------------------------------------------------------------------
# tests


def test_readme_installs_the_pinned_grpcurl() -> None:
    assert GRPCURL_INSTALL in section_text(RUNNING, "## Requirements")


def test_readme_grpcurl_commands(demo: Demo, grpcurl_dir: Path, tmp_path: Path) -> None:
    """docs/clients.md's grpcurl calls, against the demo's worker."""
    chosen = [c for c in section_commands(CLIENTS, GRPC_API_SECTION) if c.words[0] == "grpcurl"]
    assert len(chosen) >= 2
    for command in chosen:
        assert DOCUMENTED_ADDRESS in command.text, command
    assert any("demo-file-source" in command.text for command in chosen)
    outcomes = run_in_one_shell(chosen, demo.worker.address, [grpcurl_dir], tmp_path, 120)
    assert_as_documented(outcomes, demo.worker)


def test_grpcurl_recipes(demo: Demo, grpcurl_dir: Path, tmp_path: Path) -> None:
    """Every recipe runs as written; they leave the demo's connectors, files and topic alone
    and clean up after themselves; ListPlugins shows no test plugin."""
    demo_lines = [f"readme demo line {i}" for i in range(DEMO_LINES)]
    with demo.input.open("a", encoding="utf-8") as handle:
        handle.writelines(f"{line}\n" for line in demo_lines)
    try:
        wait_until(lambda: _lines(demo.output) == demo_lines, timeout=60)
    except TimeoutError:
        pytest.fail(f"the demo pipeline did not copy its lines:\n{demo.worker.logs()[-5000:]}")

    recipes = commands(RECIPES)
    text = RECIPES.read_text(encoding="utf-8")
    assert f"ADDR={DOCUMENTED_ADDRESS}" in text
    for command in recipes:
        assert str(DEMO_DIR) not in command.text and DEMO_TOPIC not in command.text, command
    outcomes = run_in_one_shell(recipes, demo.worker.address, [grpcurl_dir], tmp_path, 300)
    assert_as_documented(outcomes, demo.worker)

    plugin_lists = [o.output for o in outcomes if "/ListPlugins" in o.command.text]
    assert plugin_lists and all('"class_name"' in output for output in plugin_lists)
    assert not any("connect_grpc.testing" in output for output in plugin_lists)
    stub = demo.worker.stub
    listed = stub.ListConnectors(pb.ListConnectorsRequest(), timeout=10)
    assert sorted(c.name for c in listed.connectors) == sorted(_demo_connectors(Path()))
    assert _records_in(demo.bootstrap_servers, DEMO_TOPIC) == DEMO_LINES
    assert _lines(demo.output) == demo_lines


def test_demo_worker_logs_no_spark_start_or_pool_warnings(demo: Demo) -> None:
    """Spark's warnings that every start and every connector used to print: the hostname
    resolving to a loopback address, and each connector's scheduler pool created on the fly
    (both connectors have launched their jobs once their tasks run)."""
    running = pb.INSTANCE_STATE_RUNNING

    def tasks_running() -> bool:
        listed = demo.worker.stub.ListConnectors(
            pb.ListConnectorsRequest(expand_status=True), timeout=10
        ).connectors
        return len(listed) == 2 and all(
            [t.state for t in c.status.tasks] == [running] for c in listed
        )

    wait_until(tasks_running, timeout=120)
    logs = demo.worker.log_path.read_text(encoding="utf-8", errors="replace")
    assert "spark_started" in logs
    assert "resolves to a loopback address" not in logs
    assert "FairSchedulableBuilder" not in logs and "has not been configured" not in logs


def _is_cli(command: Command, subcommand: str) -> bool:
    words = command.words
    return Path(words[0]).name == "connect-grpc" and words[1:2] == [subcommand]


def _cli_env() -> dict[str, str]:
    """README.md may say ``connect-grpc`` or ``.venv/bin/connect-grpc``: both must work."""
    venv_bin = Path(sys.executable).parent
    return {**os.environ, "PATH": os.pathsep.join([str(venv_bin), os.environ["PATH"]])}


def _kafka_cli_env() -> dict[str, str]:
    """:func:`_cli_env` with the JVM option the session gives its Spark drivers (the C1
    compiler only) for every JVM ``kafka start`` runs (Kafka's storage tool, the broker,
    which lives only for the test): it takes about half the CPU time to start (the
    broker's 8 s → 4 s on the 2-core machine). The JVM notes it on its stderr."""
    environment = _cli_env()
    inherited = environment.get("JAVA_TOOL_OPTIONS", "")
    environment["JAVA_TOOL_OPTIONS"] = f"{inherited} {class_archive.BASE_JAVA_OPTIONS}".strip()
    return environment


def test_readme_kafka_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``connect-grpc kafka start|status|stop`` as docs/running.md's "Standalone mode" shows
    them (README.md's start by hand opens with the same ``kafka start``), then the block of
    "Where the data lives" that wipes the broker's data (stop, ``rm -rf`` of the documented
    directory, here the test's)."""
    monkeypatch.delenv("CONNECT_GRPC_CACHE", raising=False)
    documented_dir = default_state_dir()
    state_dir = tmp_path / "kafka"
    port = free_port()
    running_block = [c for c in section_commands(RUNNING, STANDALONE_SECTION)
                     if _is_cli(c, "kafka")]
    wipe = section_commands(RUNNING, DATA_SECTION)
    assert len({c.block for c in wipe}) == 1, wipe
    assert [c.words[2] for c in running_block] == ["start", "status", "stop"]
    [by_hand] = [c for c in section_commands(README, BY_HAND_SECTION) if _is_cli(c, "kafka")]
    assert by_hand.text == running_block[0].text
    assert wipe[-1].words[:2] == ["rm", "-rf"]
    running = False
    try:
        for command in [*running_block, *wipe]:
            words = command.words
            if words[0] == "rm":
                [target] = [Path(word).expanduser() for word in words[2:]]
                assert target == documented_dir or documented_dir in target.parents, command
                assert not running, f"{command.text}: the broker still runs"
                shutil.rmtree(state_dir / target.relative_to(documented_dir))
                continue
            assert _is_cli(command, "kafka"), command
            assert "--state-dir" not in words and "--port" not in words, command
            flags = ["--state-dir", str(state_dir)]
            if words[2] == "start":
                flags += ["--port", str(port)]
            result = subprocess.run(
                [*words, *flags], cwd=ROOT, env=_kafka_cli_env(), stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=120, check=False,
            )
            outcome = (result.returncode, result.stdout.strip())
            if words[2] == "start":
                running = True
                assert outcome == (0, f"127.0.0.1:{port}"), result.stderr
                assert (state_dir / "data" / "kraft" / "meta.properties").exists()
            elif words[2] == "status":
                expected = (0, f"127.0.0.1:{port}") if running else (1, "not running")
                assert outcome == expected, result.stderr
            else:
                running = False
                assert outcome[0] == 0, result.stderr
    finally:
        subprocess.run([sys.executable, "-m", "connect_grpc.cli", "kafka", "stop",
                        "--state-dir", str(state_dir)], timeout=60, check=False)
    assert not (state_dir / "data").exists()  # wiped


#: The topic of the connector files of docs/running.md's "Standalone mode".
RUNNING_TOPIC = "connect-local"


def test_readme_standalone_command(kafka_bootstrap: str, tmp_path: Path) -> None:
    """docs/running.md's standalone worker, which README.md's start by hand runs too: the
    files it names work together, use their own files and topic (not the demo's), and move
    data; README.md's ``ctl`` call lists both connectors RUNNING."""
    [command] = [c for c in section_commands(RUNNING, STANDALONE_SECTION)
                 if _is_cli(c, "standalone")]
    by_hand = section_commands(README, BY_HAND_SECTION)
    [same] = [c for c in by_hand if _is_cli(c, "standalone")]
    assert same.text == command.text
    [ctl_call] = [c for c in by_hand if _is_cli(c, "ctl")]
    words = shlex.split(command.text.replace("\\\n", " "), comments=True)
    worker_file, *connector_files = (ROOT / word for word in words[2:])
    properties = read_properties(worker_file)
    assert properties["bootstrap.servers"].endswith(f":{DEFAULT_BROKER_PORT}")
    replaced = {"bootstrap.servers", "listeners", "offset.storage.file.filename"}
    # the files' topic, made the test's own: the broker keeps what other tests and earlier
    # runs wrote to connect-local (plain lines, from workers without converters), which the
    # sink would read with the worker's JsonConverter
    topic = f"{RUNNING_TOPIC}-{uuid.uuid4().hex[:8]}"
    copies = []
    for path in connector_files:
        copy = tmp_path / path.name
        text = path.read_text(encoding="utf-8")
        assert f'"{RUNNING_TOPIC}"' in text or f"={RUNNING_TOPIC}\n" in text, path
        copy.write_text(text.replace(RUNNING_TOPIC, topic), encoding="utf-8")
        copies.append(copy)
    # the files' directory (/tmp/connect-local, renamed with the topic) exists before the
    # worker starts, as the guide's mkdir makes it: FileStreamSink never creates it
    Path("/tmp", topic).mkdir(exist_ok=True)
    worker = WorkerProcess(
        tmp_path / "worker", kafka_bootstrap,
        extra_properties={
            "test.plugins.enabled": "false",
            **{key: value for key, value in properties.items() if key not in replaced},
        },
        connector_files=copies,
    )
    with worker:
        # the worker serves while it creates the files' connectors, one after the other
        def listed() -> dict[str, dict[str, str]] | None:
            answer = worker.stub.ListConnectors(pb.ListConnectorsRequest(expand_info=True),
                                                timeout=10)
            found = {c.name: dict(c.info.config) for c in answer.connectors}
            return found if len(found) >= len(connector_files) else None

        configs = wait_until(listed, timeout=30)
        assert configs is not None
        assert len(configs) == len(connector_files) == 2
        [source] = [c for c in configs.values() if "topic" in c]
        [sink] = [c for c in configs.values() if "topics" in c]
        assert source["topic"] == sink["topics"] != DEMO_TOPIC
        for config in (source, sink):
            assert not config["file"].startswith(str(DEMO_DIR)), config
        marker = f"readme standalone {uuid.uuid4().hex}"
        source_file = Path(source["file"])
        source_file.parent.mkdir(parents=True, exist_ok=True)
        with source_file.open("a", encoding="utf-8") as handle:
            handle.write(marker + "\n")
        try:
            wait_until(lambda: marker in _lines(Path(sink["file"])), timeout=90)
        except TimeoutError:
            pytest.fail(f"{marker!r} did not reach {sink['file']}:\n{worker.logs()[-5000:]}")
        running = pb.INSTANCE_STATE_RUNNING
        for listing in worker.stub.ListConnectors(
            pb.ListConnectorsRequest(expand_status=True), timeout=10
        ).connectors:
            assert listing.status.connector.state == running
            assert [t.state for t in listing.status.tasks] == [running]
        [shown] = run_in_one_shell([ctl_call], worker.address, [Path(sys.executable).parent],
                                   tmp_path / "ctl", 60)
        assert_as_documented([shown], worker)
        rows = [line.split() for line in shown.output.splitlines()[1:] if line.strip()]
        assert sorted((row[0], row[2]) for row in rows) == sorted(
            (name, "RUNNING") for name in configs), shown.output


#: The gRPC addresses of docs/running.md's two distributed workers, as its block writes them.
DISTRIBUTED_ADDRESSES = ("localhost:8093", "localhost:8094")


@pytest.mark.timeout(1500)
def test_readme_distributed_block(kafka_bootstrap: str, tmp_path: Path) -> None:
    """docs/running.md's "Distributed mode" block runs as written, in one shell, twice (the
    block says it can run again: the second run finds the internal topics, the group and the
    deleted connector's records the first left): two workers from the files it names (each
    a copy with only the broker address and the listener replaced, to fit the test's broker
    and free ports), the leader found with ``ctl cluster``, a connector created through the
    follower, its status, the clean-up."""
    chosen = section_commands(RUNNING, DISTRIBUTED_SECTION)
    starts = [c for c in chosen if _is_cli(c, "distributed")]
    assert len(starts) == 2, starts
    files = [ROOT / c.words[2] for c in starts]
    properties = [read_properties(path) for path in files]
    for props, address in zip(properties, DISTRIBUTED_ADDRESSES, strict=True):
        assert props["bootstrap.servers"].endswith(f":{DEFAULT_BROKER_PORT}")
        assert props["listeners"] == f"grpc://{address.replace('localhost', '127.0.0.1')}"
    differing = {k for k in properties[0] if properties[0][k] != properties[1].get(k)}
    assert differing == {"listeners", "worker.id"}, differing
    replacements = {"/tmp/connect-worker-": str(tmp_path / "worker-")}
    for index, (path, props) in enumerate(zip(files, properties, strict=True)):
        port = free_port()
        copy = tmp_path / path.name
        copy.write_text("".join(
            f"{key}={value}\n" for key, value in {
                **props, "bootstrap.servers": kafka_bootstrap,
                "listeners": f"grpc://127.0.0.1:{port}",
            }.items()
        ), encoding="utf-8")
        replacements[str(path.relative_to(ROOT))] = str(copy)
        replacements[DISTRIBUTED_ADDRESSES[index]] = f"127.0.0.1:{port}"
    for round_ in (1, 2):
        outcomes = run_in_one_shell(
            chosen, "unused", [Path(sys.executable).parent], tmp_path / f"shell-{round_}", 650,
            replacements,
        )
        failed = [outcome.describe() for outcome in outcomes if outcome.problem() is not None]
        logs = "\n".join(
            f"{log.name} (tail):\n{log.read_text(errors='replace')[-3000:]}"
            for log in sorted(tmp_path.glob("worker-*.log"))
        )
        assert not failed, f"round {round_}:\n" + "\n\n".join(failed) + f"\n\n{logs}"
        by_text = {o.command.text.split("#")[0].strip(): o.output for o in outcomes}
        [cluster] = [out for text, out in by_text.items() if text.endswith(" cluster")]
        leader_port = replacements[DISTRIBUTED_ADDRESSES[0]].rsplit(":", 1)[1]
        assert re.search(rf"^Leader: +local-worker-1 127\.0\.0\.1:{leader_port}$", cluster,
                         re.M), cluster
        assert "Answered by: local-worker-2" in cluster
        [listing] = [out for text, out in by_text.items() if "get connectors" in text]
        assert "local-file-source" in listing and "RUNNING" in listing, listing


#: Where docs/pipeline.md's record pipeline keeps its files, and its topics' common prefix.
PIPELINE_DIR = "/tmp/connect-people"
PIPELINE_TOPIC = "connect-people"


def test_readme_record_pipeline_block(kafka_bootstrap: str, tmp_path: Path) -> None:
    """docs/pipeline.md's record pipeline, run twice on one worker's state (its offsets file, the
    sink's consumer group): the worker from the files the block names, then the commands of
    "another shell". Each run adds exactly the two people, transformed, to the sink's file
    and the line that is not JSON to the dead-letter queue, with its context headers. The
    connector files are copies with their directory and topics made the test's own."""
    chosen = section_commands(PIPELINE, PIPELINE_SECTION)
    [start] = [c for c in chosen if _is_cli(c, "standalone")]
    # what the block does before it starts the worker (the sink's directory) runs first
    before = chosen[: chosen.index(start)]
    # ctl dlq reads the dead letters: it runs once they are there (its output is checked)
    dlq = [c for c in chosen if c.words[1:2] == ["ctl"] and "dlq" in c.words]
    shell = [c for c in chosen[chosen.index(start) + 1 :] if c not in dlq]
    assert before and all(not _is_cli(c, "standalone") for c in before)
    assert len(dlq) == 1
    words = shlex.split(start.text.replace("\\\n", " "), comments=True)
    worker_file, *connector_files = (ROOT / word for word in words[2:])
    run = uuid.uuid4().hex[:8]
    files_dir, topic = tmp_path / "people", f"{PIPELINE_TOPIC}-{run}"
    replacements = {PIPELINE_DIR: str(files_dir), DOCUMENTED_BROKER: kafka_bootstrap}
    copies = []
    for path in connector_files:
        text = path.read_text(encoding="utf-8").replace(PIPELINE_DIR, str(files_dir))
        copy = tmp_path / path.name
        copy.write_text(text.replace(PIPELINE_TOPIC, topic), encoding="utf-8")
        copies.append(copy)
    properties = read_properties(worker_file)
    replaced = {"bootstrap.servers", "listeners", "offset.storage.file.filename"}
    extra = {"test.plugins.enabled": "false",
             **{key: value for key, value in properties.items() if key not in replaced}}
    for round_ in (1, 2):
        assert_ran(run_in_one_shell(before, DOCUMENTED_ADDRESS, [Path(sys.executable).parent],
                                    tmp_path / f"before-{round_}", 60, replacements))
        worker = WorkerProcess(tmp_path / "worker", kafka_bootstrap, extra_properties=extra,
                               connector_files=copies)
        with worker:
            outcomes = run_in_one_shell(
                shell, f"127.0.0.1:{worker.port}", [Path(sys.executable).parent],
                tmp_path / f"shell-{round_}", 300, replacements,
            )
            assert_as_documented(outcomes, worker)
            [listing] = [o.output for o in outcomes if "get connectors" in o.command.text]
            assert listing.count("RUNNING") >= 2, listing
            _check_people_round(kafka_bootstrap, files_dir / "people.txt", f"{topic}-dlq", round_)
            [shown] = run_in_one_shell(
                dlq, f"127.0.0.1:{worker.port}", [Path(sys.executable).parent],
                tmp_path / f"dlq-{round_}", 120, replacements,
            )
            assert_as_documented([shown], worker)
            _check_dead_letters_shown(shown.output, f"{topic}-dlq", round_)


def _check_people_round(bootstrap: str, written: Path, dlq: str, round_: int) -> None:
    """After run ``round_`` of the pipeline block: the two people of each run in the sink's
    file, the poison line of each run in the dead-letter queue, with its context headers."""
    expected = ["Struct{name=alice,ssn=,source=people.jsonl}",
                "Struct{name=bob,ssn=,source=people.jsonl}"]
    wait_until(lambda: len(_lines(written)) >= 2 * round_, timeout=90)
    assert _lines(written) == expected * round_
    dead = wait_until(lambda: _dead_letters(bootstrap, dlq, round_), timeout=60)
    assert dead is not None  # wait_until returns what the condition gave once truthy
    poison = b"not json: this line goes to the dead-letter queue"
    assert [m.value() for m in dead] == [poison] * round_
    headers = dict(dead[-1].headers() or [])
    assert headers[ERROR_HEADER_STAGE] == b"VALUE_CONVERTER"
    assert headers[ERROR_HEADER_CONNECTOR_NAME] == b"people-sink"
    assert headers[ERROR_HEADER_ORIG_OFFSET] == str(3 * round_ - 2).encode()


#: The local broker's address, as the documented commands name it.
DOCUMENTED_BROKER = f"127.0.0.1:{DEFAULT_BROKER_PORT}"


def _check_dead_letters_shown(output: str, dlq: str, round_: int) -> None:
    """``ctl dlq``'s text: each poison line, as a record of the queue with its error
    headers, the oldest first."""
    assert output.count("value: not json: this line goes to the dead-letter queue") == round_
    assert output.count(f"{dlq}[0]@") == round_, output
    assert output.index("__connect.errors.stage: VALUE_CONVERTER") < output.index("value:")
    assert "__connect.errors.connector.name: people-sink" in output
    assert "key: (null)" in output


def _dead_letters(bootstrap: str, topic: str, count: int) -> list[Any] | None:
    messages = read_all(bootstrap, topic)
    return messages if len(messages) >= count else None
