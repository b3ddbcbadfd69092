"""docs/debezium.md's "On a standalone worker" runs as written, in one shell, twice in a row
on the state the first run leaves (the PostgreSQL directory, the data topic, the sink's
consumer group): Debezium PostgreSQL 3.6.1.Final on ``connect-grpc standalone`` as a Kafka
Connect user runs it on ``connect-standalone``, from a ``.properties`` connector file given
on the command line beside a FileStreamSink's, its task under Kafka's standalone worker in
the driver's JVM, its offsets relayed to the worker's offsets file.

What each round checks: the snapshot's 1,000 read events reach Kafka (the sink's file), a
row inserted after it streams in, the worker is stopped (its task commits as it stops) and
started again on the same files, and a row inserted while it was down arrives once, with no
second snapshot (``grep -c`` counts 1,000 read events, the file holds exactly 1,002 lines);
``offsets get`` shows Debezium's offset (its LSNs) as the worker read it from its file.

Only what names this machine's ports, paths and shared names is replaced: the broker
address, the worker's gRPC port, ``/tmp/connect-debezium`` (a directory of the test's own
the ``postgres`` account can reach, as root runs PostgreSQL as it), and ``inventory``
(connector, topic prefix, slot and publication, which the broker and PostgreSQL keep across
tests), the same in both rounds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.kafka.ports import free_port
from tests.documents import DOCS, section_commands
from tests.integration.test_readme_commands import Outcome, run_in_one_shell

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

PAGE = DOCS / "debezium.md"
SECTION = "## On a standalone worker"
DOCUMENTED_DIR = "/tmp/connect-debezium"
DOCUMENTED_BROKER = "127.0.0.1:9092"
DOCUMENTED_GRPC = ("localhost:8096", "127.0.0.1:8096")
#: The rows the table starts with (the snapshot).
ROWS = 1000


@pytest.fixture
def work_dir() -> Iterator[Path]:
    """Stands for /tmp/connect-debezium: under /tmp and open to the ``postgres`` account
    (pytest's tmp_path is not); the server the block starts there is stopped at the end
    whatever happened."""
    directory = Path(tempfile.mkdtemp(prefix="dbz-standalone-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        subprocess.run(
            [sys.executable, "-m", "connect_grpc.testing.postgres", "stop", "--dir",
             str(directory / "postgres")],
            capture_output=True, timeout=120, check=False,
        )
        shutil.rmtree(directory, ignore_errors=True)


def test_debezium_on_a_standalone_worker_runs_as_written_twice(
    kafka_bootstrap: str, work_dir: Path
) -> None:
    chosen = section_commands(PAGE, SECTION)
    texts = [c.text for c in chosen]
    starts = [t for t in texts if t.startswith(".venv/bin/connect-grpc standalone ")]
    # the worker started twice on the same files: the connectors' from the command line
    assert len(starts) == 2 and starts[0].split(">")[0] == starts[1].split(">")[0], starts
    assert "inventory.properties" in starts[0]
    assert texts[-1].startswith("rm ")
    run = uuid.uuid4().hex[:8]
    grpc = f"127.0.0.1:{free_port()}"
    replacements = {
        DOCUMENTED_DIR: str(work_dir),
        DOCUMENTED_BROKER: kafka_bootstrap,
        **{documented: grpc for documented in DOCUMENTED_GRPC},
        # a replication slot's name takes lower-case letters, digits and underscores
        "inventory": f"inventory_{run}",
    }
    for round_ in (1, 2):
        outcomes = run_in_one_shell(chosen, grpc, [Path(sys.executable).parent],
                                    work_dir / f"shell-{round_}", 1500, replacements)
        _assert_as_documented(outcomes, work_dir, round_)
        by_text = {o.command.text.split("#")[0].strip(): o.output for o in outcomes}
        [snapshots] = [out for text, out in by_text.items() if text.startswith("grep -c")]
        assert snapshots.strip() == str(ROWS), (round_, snapshots)
        [lines] = [out for text, out in by_text.items() if text.startswith("wc -l")]
        assert lines.strip() == str(ROWS + 2), (round_, lines)
        [offsets] = [out for text, out in by_text.items()
                     if text.endswith("offsets get inventory")]
        assert f'{{"server":"inventory_{run}"}}' in offsets, offsets
        # a streaming offset (lsn_proc: a change processed after the snapshot); lsn_commit
        # comes with a record streamed after a transaction's commit, none here
        for key in ("lsn", "lsn_proc", "txId", "ts_usec"):
            assert f'"{key}":' in offsets, (key, offsets)
        assert '"snapshot"' not in offsets, offsets
        [tail] = [o.output for o in outcomes if o.command.words[:1] == ["tail"]]
        _check_tail(tail, round_)


def _check_tail(tail: str, round_: int) -> None:
    """``tail -n 2`` of the sink's file, which then held 1,002 lines, 1,000 of them reads:
    the row inserted after the snapshot and the row inserted while the worker was down."""
    events = [json.loads(line) for line in tail.splitlines()]
    assert [(e["op"], e["after"]) for e in events] == [
        ("c", {"id": 1001, "item": "item-1001", "quantity": 5}),
        ("c", {"id": 1002, "item": "item-1002", "quantity": 5}),
    ], (round_, tail)


def _assert_as_documented(outcomes: list[Outcome], work_dir: Path, round_: int) -> None:
    failed = [outcome.describe() for outcome in outcomes if outcome.problem() is not None]
    if not failed:
        return
    logs = "\n".join(
        f"{path.name} (tail):\n{path.read_text(errors='replace')[-6000:]}"
        for path in (work_dir / "worker.log", work_dir / "postgres" / "server.log")
        if path.exists()
    )
    pytest.fail(f"round {round_}: " + "\n\n".join(failed) + f"\n\n{logs}")
