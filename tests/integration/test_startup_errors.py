"""Start-up failures of ``connect-grpc standalone``: each ends the process with a non-zero
exit code and exactly one ``worker_start_failed`` line that names the file or property at
fault and the fix, and no stack trace."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.testing.cluster import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Nothing listens there: every case below must fail before Kafka is contacted.
UNREACHABLE = "127.0.0.1:1"


@dataclass(frozen=True)
class Case:
    id: str
    #: Prepares the directory; returns the command's arguments after ``standalone``.
    arrange: Callable[[Path], list[str]]
    exit_code: int
    names: str  # "file" or "property"
    expected: Callable[[Path], str]


def _worker(tmp: Path, **overrides: str | None) -> Path:
    props: dict[str, str | None] = {
        "bootstrap.servers": UNREACHABLE,
        "listeners": f"grpc://127.0.0.1:{free_port()}",
        "offset.storage.file.filename": str(tmp / "connect.offsets"),
        "log.format": "json",
        **overrides,
    }
    path = tmp / "worker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v is not None))
    return path


def _with_offsets(content: str) -> Callable[[Path], list[str]]:
    def arrange(tmp: Path) -> list[str]:
        (tmp / "connect.offsets").write_text(content)
        return [str(_worker(tmp))]

    return arrange


def _offsets_dir(tmp: Path) -> list[str]:
    (tmp / "connect.offsets").mkdir()
    return [str(_worker(tmp))]


def _offsets_under_a_file(tmp: Path) -> list[str]:
    (tmp / "plain-file").write_text("x")
    return [str(_worker(tmp, **{"offset.storage.file.filename": str(tmp / "plain-file" / "o")}))]


def _connector_file(name: str, content: str | None) -> Callable[[Path], list[str]]:
    def arrange(tmp: Path) -> list[str]:
        if content is not None:
            (tmp / name).write_text(content)
        return [str(_worker(tmp)), str(tmp / name)]

    return arrange


CASES = [
    Case("worker properties missing", lambda tmp: [str(tmp / "nope.properties")], 2, "file",
         lambda tmp: str(tmp / "nope.properties")),
    Case("worker properties is a directory", lambda tmp: [str(tmp)], 2, "file", str),
    Case("bootstrap.servers missing",
         lambda tmp: [str(_worker(tmp, **{"bootstrap.servers": None}))], 2, "property",
         lambda tmp: "bootstrap.servers"),
    Case("listeners malformed", lambda tmp: [str(_worker(tmp, listeners="http://x:1"))], 2,
         "property", lambda tmp: "listeners"),
    Case("tasks.max.limit not an int",
         lambda tmp: [str(_worker(tmp, **{"tasks.max.limit": "1_0"}))], 2, "property",
         lambda tmp: "tasks.max.limit"),
    Case("offsets file property missing",
         lambda tmp: [str(_worker(tmp, **{"offset.storage.file.filename": None}))], 2,
         "property", lambda tmp: "offset.storage.file.filename"),
    Case("offsets file not JSON", _with_offsets("{not json"), 2, "file",
         lambda tmp: str(tmp / "connect.offsets")),
    Case("offsets file of another shape", _with_offsets(json.dumps({"offsets": {"a": 1}})), 2,
         "file", lambda tmp: str(tmp / "connect.offsets")),
    Case("offsets path is a directory", _offsets_dir, 2, "file",
         lambda tmp: str(tmp / "connect.offsets")),
    Case("offsets directory not writable", _offsets_under_a_file, 2, "file",
         lambda tmp: str(tmp / "plain-file" / "o")),
    Case("connector file missing", _connector_file("gone.json", None), 2, "file",
         lambda tmp: str(tmp / "gone.json")),
    Case("connector file not JSON", _connector_file("bad.json", "{"), 2, "file",
         lambda tmp: str(tmp / "bad.json")),
    Case("connector file bad initial_state",
         _connector_file("state.json", json.dumps(
             {"name": "x", "config": {}, "initial_state": "SLEEPING"})), 2, "file",
         lambda tmp: str(tmp / "state.json")),
]


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", "standalone", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )


def _failure_lines(output: str) -> list[dict[str, Any]]:
    events = []
    for line in output.splitlines():
        if "worker_start_failed" not in line:
            continue
        try:
            events.append(json.loads(line))
        except ValueError:  # console format: keep the raw line
            events.append({"raw": line})
    return events


def _check(result: subprocess.CompletedProcess[str], exit_code: int, key: str, named: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == exit_code, output
    assert "Traceback" not in output, output
    (event,) = _failure_lines(output)
    assert event.get(key) == named or named in event.get("raw", ""), event
    assert event.get("fix") or "fix=" in event.get("raw", ""), event


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_start_up_failure_is_one_line_naming_the_culprit(tmp_path: Path, case: Case) -> None:
    result = _run(case.arrange(tmp_path), timeout=60)
    _check(result, case.exit_code, case.names, case.expected(tmp_path))


def test_listener_port_in_use_names_the_property(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _run([str(_worker(tmp_path, listeners=f"grpc://127.0.0.1:{port}"))])
    _check(result, 2, "property", "listeners")


def test_invalid_connector_in_a_file_names_the_file_and_stops_the_worker(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("name=bad\nconnector.class=FileStreamSource\ntasks.max=1_0\ntopic=t\nfile=/x\n")
    worker = _worker(tmp_path, **{"bootstrap.servers": kafka_bootstrap, "spark.master": "local[1]"})
    result = _run([str(worker), str(bad)], timeout=240)
    _check(result, 2, "file", str(bad))
    assert "tasks.max" in _failure_lines(result.stdout + result.stderr)[0]["error"]
