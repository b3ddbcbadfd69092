"""The user guide's examples that start a worker of their own run as written, on the
documented local setup (one broker, ``config/worker-standalone.properties``), each twice on
one worker's state (its offsets file, the topics and consumer groups the first run made):

- docs/pipeline.md's "Kafka's transformation example": Kafka's documented SMT example
  (``config/smt-file-source.properties``) moves each run's line into its topic as a Struct,
  which the sink writes back; docs/operations.md's "Pipeline preview" commands preview it on
  that worker.
- docs/connectors.md's "Topic creation by source connectors": its ``properties`` block is what
  ``config/topic-creation-source.properties`` sets; the task creates its topic with the
  default group's settings once. A keyless record sent to a topic the ``compacted`` group
  created fails the task with a message that says why in Connect's terms.

Only the worker properties that name this machine's ports and paths are replaced, and the
connector files are copies whose directory and topics are the test's own. The keyless record's
test runs on the topic-creation block's last worker when both run (the same documented
properties, its connector left running), rather than starting another like it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from connect_grpc.config.worker import read_properties
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.documents import (
    CONNECTORS,
    OPERATIONS,
    PIPELINE,
    ROOT,
    Command,
    section_commands,
    section_lines,
)
from tests.integration.helpers import FAILED, RUNNING, create, read_all, wait_for_states
from tests.integration.test_readme_commands import (
    DOCUMENTED_ADDRESS,
    _is_cli,
    assert_as_documented,
    assert_ran,
    run_in_one_shell,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: docs/connectors.md's section.
SECTION = "## Topic creation by source connectors"
#: docs/pipeline.md's section.
SMT_SECTION = "## Kafka's transformation example"
#: docs/operations.md's section.
PREVIEW_SECTION = "## Pipeline preview"
#: Where each section is.
PAGES = {SECTION: CONNECTORS, SMT_SECTION: PIPELINE, PREVIEW_SECTION: OPERATIONS}
SMT_DIR = "/tmp/connect-smt"
SMT_TOPIC = "connect-smt"
SMT_LINE = "Struct{line=hello,data_source=test-file-source}"
DOCUMENTED_DIR = "/tmp/connect-created"
DOCUMENTED_TOPIC = "connect-created"
CONNECTOR_FILE = ROOT / "config" / "topic-creation-source.properties"
#: Worker properties that name this machine's ports and paths.
REPLACED = {"bootstrap.servers", "listeners", "offset.storage.file.filename"}


def _properties_block() -> list[str]:
    lines = CONNECTORS.read_text(encoding="utf-8").splitlines()
    section = section_lines(CONNECTORS, SECTION)
    start = next(n for n in section if lines[n - 1].strip() == "```properties")
    end = next(n for n in section if n > start and lines[n - 1].strip() == "```")
    return lines[start:end - 1]


def test_the_documented_keys_are_the_connector_files() -> None:
    block = _properties_block()
    assert "topic.creation.default.replication.factor=-1" in block
    shipped = CONNECTOR_FILE.read_text(encoding="utf-8").splitlines()
    assert [line for line in block if line not in shipped] == []


def _section(heading: str) -> list[Command]:
    return section_commands(PAGES[heading], heading)


def _worker_extra(heading: str = SECTION) -> tuple[Path, list[Path], dict[str, str]]:
    [start] = [c for c in _section(heading) if _is_cli(c, "standalone")]
    words = shlex.split(start.text.replace("\\\n", " "), comments=True)
    worker_file, *connector_files = (ROOT / word for word in words[2:])
    assert worker_file.name == "worker-standalone.properties"
    properties = read_properties(worker_file)
    extra = {"test.plugins.enabled": "false",
             **{key: value for key, value in properties.items() if key not in REPLACED}}
    return worker_file, connector_files, extra


def _copies(files: list[Path], replacements: dict[str, str], into: Path) -> list[Path]:
    copies = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for documented, actual in replacements.items():
            text = text.replace(documented, actual)
        copy = into / path.name
        copy.write_text(text, encoding="utf-8")
        copies.append(copy)
    return copies


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _has_lines(path: Path, count: int) -> bool:
    return len(_lines(path)) >= count


def _has_records(bootstrap: str, topic: str, count: int) -> bool:
    """Whether the 6-partition ``topic`` holds ``count`` records or more."""
    return len(read_all(bootstrap, topic, 6)) >= count


def test_readme_kafka_smt_example_and_its_preview(kafka_bootstrap: str, tmp_path: Path) -> None:
    chosen = _section(SMT_SECTION)
    [start] = [c for c in chosen if _is_cli(c, "standalone")]
    # what the block does before it starts the worker (the sink's directory) runs first
    before, shell = chosen[: chosen.index(start)], chosen[chosen.index(start) + 1 :]
    assert before
    previews = _section(PREVIEW_SECTION)
    assert any("preview -f config/smt-file-source.properties" in c.text for c in previews)
    _, connector_files, extra = _worker_extra(SMT_SECTION)
    assert [f.name for f in connector_files] == [
        "smt-file-source.properties", "smt-file-sink.properties"]
    files_dir, topic = tmp_path / "smt", f"{SMT_TOPIC}-{uuid.uuid4().hex[:8]}"
    # the directory first: the topic's name is part of it
    copies = _copies(connector_files, {SMT_DIR: str(files_dir), SMT_TOPIC: topic}, tmp_path)
    replacements = {SMT_DIR: str(files_dir)}
    for round_ in (1, 2):
        assert_ran(run_in_one_shell(before, DOCUMENTED_ADDRESS, [Path(sys.executable).parent],
                                    tmp_path / f"before-{round_}", 60, replacements))
        worker = WorkerProcess(tmp_path / "worker", kafka_bootstrap, extra_properties=extra,
                               connector_files=copies)
        with worker:
            address = f"127.0.0.1:{worker.port}"
            outcomes = run_in_one_shell(shell, address, [Path(sys.executable).parent],
                                        tmp_path / f"shell-{round_}", 300, replacements)
            assert_as_documented(outcomes, worker)
            output = files_dir / "output.txt"
            wait_until(partial(_has_lines, output, round_), timeout=90)
            assert _lines(output) == [SMT_LINE] * round_
            records = read_all(kafka_bootstrap, topic)
            assert len(records) == round_  # each run's line, in the topic
            envelope = json.loads(records[-1].value())
            assert envelope["payload"] == {"line": "hello", "data_source": "test-file-source"}
            assert [f["field"] for f in envelope["schema"]["fields"]] == ["line", "data_source"]
            shown = run_in_one_shell(previews, address, [Path(sys.executable).parent],
                                     tmp_path / f"preview-{round_}", 120, replacements)
            assert_as_documented(shown, worker)
            table = shown[-1].output
            assert "DELIVERED" in table and "InsertSource (InsertField$Value)" in table, table


class _Kept:
    """A documented worker (``worker-standalone.properties``) a test leaves running for a
    later test of the module that needs one like it, rather than stopping it and that test
    starting another (a start is mostly its Spark session's: seconds of both cores)."""

    def __init__(self, wanted: bool) -> None:
        #: Whether a later test of the session will take it.
        self.wanted = wanted
        self.worker: WorkerProcess | None = None

    @contextlib.contextmanager
    def started(self, worker: WorkerProcess, keep: bool) -> Iterator[WorkerProcess]:
        """``worker`` started; stopped at the end unless ``keep`` and it is wanted (and
        whenever the block fails)."""
        worker.start()
        try:
            yield worker
        except BaseException:
            worker.stop()
            raise
        if keep and self.wanted and self.worker is None:
            self.worker = worker
        else:
            worker.stop()

    def take(self) -> WorkerProcess | None:
        """The kept worker, if one is kept and still runs (handed over: the taker stops it)."""
        worker, self.worker = self.worker, None
        if worker is not None and worker.returncode is not None:
            worker.stop()
            return None
        return worker


@pytest.fixture(scope="module")
def kept(request: pytest.FixtureRequest) -> Iterator[_Kept]:
    """Hands the topic-creation block's last worker to the keyless record's test, when the
    session runs that test."""
    taker = test_a_keyless_record_in_a_compacted_topic_fails_the_task_saying_why.__name__
    held = _Kept(any(getattr(item, "module", None) is request.module
                     and getattr(item, "originalname", None) == taker
                     for item in request.session.items))
    yield held
    if held.worker is not None:
        held.worker.stop()


def test_readme_topic_creation_block(
    kafka_bootstrap: str, tmp_path: Path, kept: _Kept
) -> None:
    shell = [c for c in _section(SECTION) if not _is_cli(c, "standalone")]
    _, connector_files, extra = _worker_extra()
    assert connector_files == [CONNECTOR_FILE]
    [connector_file] = connector_files
    files_dir, topic = tmp_path / "created", f"{DOCUMENTED_TOPIC}-{uuid.uuid4().hex[:8]}"
    copy = tmp_path / connector_file.name
    copy.write_text(
        connector_file.read_text(encoding="utf-8")
        .replace(DOCUMENTED_DIR, str(files_dir)).replace(DOCUMENTED_TOPIC, topic),
        encoding="utf-8",
    )
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for round_ in (1, 2):
        worker = WorkerProcess(tmp_path / "worker", kafka_bootstrap, extra_properties=extra,
                               connector_files=[copy])
        with kept.started(worker, keep=round_ == 2):
            outcomes = run_in_one_shell(
                shell, f"127.0.0.1:{worker.port}", [Path(sys.executable).parent],
                tmp_path / f"shell-{round_}", 300, {DOCUMENTED_DIR: str(files_dir)},
            )
            assert_as_documented(outcomes, worker)
            wait_until(partial(_has_records, kafka_bootstrap, topic, round_), timeout=90)
            assert len(read_all(kafka_bootstrap, topic, 6)) == round_  # each run's line
            metadata = admin.list_topics(topic, timeout=10).topics[topic]
            assert len(metadata.partitions) == 6  # the default group's, created once
            tracked = worker.stub.GetConnectorTopics(
                pb.GetConnectorTopicsRequest(name="created-source"), timeout=10
            )
            assert list(tracked.topics) == [topic]
            wait_for_states(worker.stub, "created-source", RUNNING, [RUNNING])


def test_a_keyless_record_in_a_compacted_topic_fails_the_task_saying_why(
    kafka_bootstrap: str, tmp_path: Path, kept: _Kept
) -> None:
    _, [connector_file], extra = _worker_extra()
    config = read_properties(connector_file)
    topic = f"state-{uuid.uuid4().hex[:8]}"  # the compacted group's
    source = tmp_path / "input.txt"
    source.write_text("a line has no key\n", encoding="utf-8")
    config.update({"name": "compacted-source", "file": str(source), "topic": topic})
    # the topic-creation block's worker (the same properties), else one of its own
    worker = kept.take() or WorkerProcess(tmp_path / "worker", kafka_bootstrap,
                                          extra_properties=extra).start()
    try:
        create(worker.stub, "compacted-source", config)
        wait_for_states(worker.stub, "compacted-source", RUNNING, [FAILED], timeout=120)
        status = worker.stub.GetConnectorStatus(
            pb.GetConnectorStatusRequest(name="compacted-source"), timeout=10
        )
        trace = status.status.tasks[0].trace
        assert f"the record has no key, and topic {topic} refused it" in trace, trace
        assert "only when the topic is compacted (cleanup.policy=compact)" in trace, trace
    finally:
        worker.stop()
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource("topic", topic)
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    assert described["cleanup.policy"].value == "compact"
