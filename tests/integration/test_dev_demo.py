"""``connect-grpc dev`` (what ``make demo`` runs) gives the same result every time: a
second run against the same broker and directory copies its 1000 lines like the first,
whatever offsets file, journal, topic records and sink group the first one left."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from connect_grpc.dev import DEMO_LINES, DEMO_SOURCE, DEMO_TOPIC
from connect_grpc.kafka.ports import free_port
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.integration.test_readme_commands import _records_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _run_demo(bootstrap: str, demo_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", "dev", "--port", str(free_port()),
         "--bootstrap-servers", bootstrap, "--demo-dir", str(demo_dir), "--run-seconds", "0.5"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=280, check=False,
    )


def test_a_second_demo_run_copies_every_line_like_the_first(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    demo_dir = tmp_path / "connect-demo"
    for run in (1, 2):
        result = _run_demo(kafka_bootstrap, demo_dir)
        assert result.returncode == 0, f"run {run}:\n{result.stdout}\n{result.stderr[-5000:]}"
        assert f"Lines copied:  {DEMO_LINES}/{DEMO_LINES}" in result.stdout, result.stdout
        assert "==> waiting for 1000 lines" in result.stdout
        # the last hint names a command that is there: grpcurl only when installed
        hint = "Try: grpcurl " if shutil.which("grpcurl") else "connect-grpc ctl --target "
        assert hint in result.stdout, result.stdout
        # the Spark start-up is announced with its usual duration and reported with its own
        assert re.search(r"spark_starting .*usual_seconds=\d+", result.stderr), result.stderr
        assert re.search(r"spark_started .*seconds=\d", result.stderr), result.stderr
        output = (demo_dir / "output.txt").read_text(encoding="utf-8").splitlines()
        assert output == [f"demo line {i}" for i in range(DEMO_LINES)], f"run {run}"
        assert _records_in(kafka_bootstrap, DEMO_TOPIC) == DEMO_LINES, f"run {run}"
        # what a run leaves behind for the next: the source's position at the end of its input
        assert _committed_position(demo_dir) == (demo_dir / "input.txt").stat().st_size


def _committed_position(demo_dir: Path) -> object:
    """The source's committed position, read from copies (a store compacts its journal into
    the file when it starts: the next run must meet the files as the last one left them)."""
    copies = demo_dir.parent / "offsets-copy"
    shutil.rmtree(copies, ignore_errors=True)
    copies.mkdir()
    for name in ("connect.offsets", "connect.offsets.journal"):
        if (demo_dir / name).exists():
            shutil.copy(demo_dir / name, copies / name)
    store = FileOffsetStore(copies / "connect.offsets")
    store.start()
    try:
        offset = store.get(DEMO_SOURCE, {"filename": str(demo_dir / "input.txt")})
        return None if offset is None else offset["position"]
    finally:
        store.stop()
