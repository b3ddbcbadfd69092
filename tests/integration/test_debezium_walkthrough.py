"""docs/debezium.md's "The walk-through" runs as written, in one shell, twice in a row on
the state the first run leaves (the PostgreSQL directory, the worker's cluster and its
internal topics, the data topic, the sink's consumer group): a private PostgreSQL from
``python -m connect_grpc.testing.postgres``, a distributed worker whose ``plugin.path`` is
the directory ``make install`` filled, Debezium PostgreSQL 3.6.1.Final created with ``ctl
apply``, its records read back by a FileStreamSink created over grpcurl, changes made with
psql, the connector moved with its offsets (stopped, offsets saved and reset, deleted,
created STOPPED over grpcurl, offsets altered, resumed), and the clean-up.

Only what names this machine's ports, paths and shared names is replaced: the broker
address, the worker's gRPC port, ``/tmp/connect-debezium`` (a directory of the test's own
the ``postgres`` account can reach, as root runs PostgreSQL as it), and the names the
broker and PostgreSQL keep across tests (the cluster ``connect-debezium`` and its topics,
``inventory``: connector, topic prefix, slot and publication), the same in both rounds.
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
from tests.integration.warm_ups import install_grpcurl

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

PAGE = DOCS / "debezium.md"
SECTION = "## The walk-through"
DOCUMENTED_DIR = "/tmp/connect-debezium"
DOCUMENTED_BROKER = "127.0.0.1:9092"
DOCUMENTED_GRPC = ("localhost:8096", "127.0.0.1:8096")
#: The rows the walk-through's table starts with, and the changes it makes.
ROWS = 1000


@pytest.fixture
def work_dir() -> Iterator[Path]:
    """Stands for /tmp/connect-debezium: under /tmp and open to the ``postgres`` account
    (pytest's tmp_path is not), named so that no other replacement touches it; the
    server the block starts there is stopped at the end whatever happened."""
    directory = Path(tempfile.mkdtemp(prefix="dbz-walkthrough-"))
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


def test_the_debezium_walkthrough_runs_as_written_twice(
    kafka_bootstrap: str, work_dir: Path
) -> None:
    chosen = section_commands(PAGE, SECTION)
    texts = [c.text for c in chosen]
    assert any("connect_grpc.testing.postgres start" in t for t in texts)
    assert any(t.startswith("grpcurl ") and "CreateConnector" in t for t in texts)
    assert any(" apply -f " in t for t in texts)
    assert texts[-1].startswith("rm ")
    run = uuid.uuid4().hex[:8]
    grpc = f"127.0.0.1:{free_port()}"
    # in this order: the directory's name first, since the cluster's name is part of it
    replacements = {
        DOCUMENTED_DIR: str(work_dir),
        DOCUMENTED_BROKER: kafka_bootstrap,
        **{documented: grpc for documented in DOCUMENTED_GRPC},
        "connect-debezium": f"connect-debezium-{run}",
        # a replication slot's name takes lower-case letters, digits and underscores
        "inventory": f"inventory_{run}",
    }
    path_dirs = [install_grpcurl(), Path(sys.executable).parent]
    for round_ in (1, 2):
        outcomes = run_in_one_shell(chosen, grpc, path_dirs, work_dir / f"shell-{round_}", 1200,
                                    replacements)
        _assert_as_documented(outcomes, work_dir, round_)
        by_text = {o.command.text.split("#")[0].strip(): o.output for o in outcomes}
        [plugins] = [out for text, out in by_text.items()
                     if text.endswith("grep PostgresConnector")]
        assert "io.debezium.connector.postgresql.PostgresConnector" in plugins
        assert "3.6.1.Final" in plugins
        [offsets] = [out for text, out in by_text.items()
                     if text.endswith("offsets get inventory")]
        assert f"inventory_{run}" in offsets and "lsn_commit" in offsets, offsets
        [snapshots] = [out for text, out in by_text.items() if text.startswith("grep -c")]
        assert snapshots.strip() == str(ROWS)
        _check_records(_read_lines(outcomes), round_)


def _read_lines(outcomes: list[Outcome]) -> list[str]:
    """The sink file's lines that ``head`` and the ``tail``s printed (the clean-up removes
    the file; its length is what the block's waits and ``grep -c`` check)."""
    shown = []
    for outcome in outcomes:
        if outcome.command.words[:1] in (["head"], ["tail"]):
            shown.extend(outcome.output.splitlines())
    return shown


def _check_records(shown: list[str], round_: int) -> None:
    """head -n 1 (a snapshot's read), tail -n 4 (insert, update, delete, tombstone) and
    tail -n 1 after the move (the row inserted while no connector ran)."""
    assert len(shown) == 6, (round_, shown)
    events = [None if line == "null" else json.loads(line) for line in shown]
    first, insert, update, delete, tombstone, moved = events
    assert first is not None and first["op"] == "r" and first["before"] is None
    assert insert is not None and insert["op"] == "c"
    assert insert["after"] == {"id": 1001, "item": "item-1001", "quantity": 5}
    assert update is not None and update["op"] == "u"
    assert update["after"] == {"id": 1, "item": "item-1", "quantity": 42}
    assert delete is not None and delete["op"] == "d" and delete["after"] is None
    assert delete["before"]["id"] == 2
    assert tombstone is None
    assert moved is not None and moved["op"] == "c"
    assert moved["after"] == {"id": 1002, "item": "item-1002", "quantity": 5}


def _assert_as_documented(outcomes: list[Outcome], work_dir: Path, round_: int) -> None:
    failed = [outcome.describe() for outcome in outcomes if outcome.problem() is not None]
    if not failed:
        return
    logs = "\n".join(
        f"{path.name} (tail):\n{path.read_text(errors='replace')[-4000:]}"
        for path in (work_dir / "worker.log", work_dir / "postgres" / "server.log")
        if path.exists()
    )
    pytest.fail(f"round {round_}: " + "\n\n".join(failed) + f"\n\n{logs}")
