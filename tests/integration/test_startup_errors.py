"""Start-up failures of ``connect-grpc standalone``: each ends the process with a non-zero
exit code (2 for configuration, 1 for run time) and exactly one ``worker_start_failed`` line
that names the file or property at fault and the fix, with no Python stack trace, and leaves
nothing running.

No case needs the broker: every configuration error must be found before Kafka is
contacted, so the worker properties point at an address where nothing listens.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.kafka.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Nothing listens there.
UNREACHABLE = "127.0.0.1:1"
#: A TEST-NET-3 address (RFC 5737): never an address of this machine.
FOREIGN_HOST = "203.0.113.7"

Arrange = Callable[[Path], list[str]]


@dataclass(frozen=True)
class Case:
    id: str
    #: Prepares the directory; returns the command's arguments after ``standalone``.
    arrange: Arrange
    #: The field of the failure line that names the culprit: "file" or "property".
    names: str
    #: Its expected value (a path relative to the test's directory, or a property name).
    culprit: str
    #: Text the failure's ``error`` must contain.
    says: str = ""
    exit_code: int = 2


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


def _binary_worker(tmp: Path) -> list[str]:
    (tmp / "w.properties").write_bytes(b"bootstrap.servers=\xff\n")
    return [str(tmp / "w.properties")]


def _props(**overrides: str | None) -> Arrange:
    return lambda tmp: [str(_worker(tmp, **overrides))]


def _with_offsets(content: str) -> Arrange:
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


def _connectors(**files: str | bytes | dict[str, Any] | None) -> Arrange:
    """Connector files by name (dots as ``_``): text, bytes, a JSON document, or None for
    a file that does not exist."""

    def arrange(tmp: Path) -> list[str]:
        paths = []
        for key, content in files.items():
            path = tmp / key.replace("_", ".")
            if isinstance(content, dict):
                path.write_text(json.dumps(content))
            elif isinstance(content, bytes):
                path.write_bytes(content)
            elif content is not None:
                path.write_text(content)
            paths.append(str(path))
        return [str(_worker(tmp)), *paths]

    return arrange


def _swapped(tmp: Path) -> list[str]:
    connector = tmp / "c.json"
    connector.write_text(json.dumps(_source("x"), indent=2))
    return [str(connector), str(_worker(tmp))]


def _source(name: str, **config: str) -> dict[str, Any]:
    return {"name": name, "config": {"connector.class": "FileStreamSource", "tasks.max": "1",
                                     "topic": "t", "file": "/dev/null", **config}}


SOURCE_PROPERTIES = "name=x\nconnector.class=FileStreamSource\ntasks.max=1\ntopic=t\nfile=/x\n"

CASES = [
    Case("worker properties missing", lambda tmp: [str(tmp / "nope.properties")],
         "file", "nope.properties", "No such file"),
    Case("worker properties is a directory", lambda tmp: [str(tmp)], "file", ""),
    Case("worker properties not UTF-8", _binary_worker, "file", "w.properties", "utf-8"),
    Case("bootstrap.servers missing", _props(**{"bootstrap.servers": None}),
         "property", "bootstrap.servers", "required"),
    Case("listeners malformed", _props(listeners="http://x:1"), "property", "listeners"),
    Case("listeners port out of range", _props(listeners="grpc://127.0.0.1:99999"),
         "property", "listeners", "65535"),
    Case("listeners host not of this machine", _props(listeners=f"grpc://{FOREIGN_HOST}:8083"),
         "property", "listeners", "cannot listen"),
    Case("tasks.max.limit not an int", _props(**{"tasks.max.limit": "1_0"}),
         "property", "tasks.max.limit"),
    Case("log.format unknown", _props(**{"log.format": "xml"}), "property", "log.format"),
    Case("exactly-once source support in standalone mode",
         _props(**{"exactly.once.source.support": "enabled"}),
         "property", "exactly.once.source.support", "only in distributed mode"),
    Case("exactly.once.source.support unknown",
         _props(**{"exactly.once.source.support": "Enabled"}),
         "property", "exactly.once.source.support", "disabled, preparing, enabled"),
    Case("plugin.path missing", _props(**{"plugin.path": "/nonexistent/plugins"}),
         "property", "plugin.path", "/nonexistent/plugins"),
    Case("offsets file property missing", _props(**{"offset.storage.file.filename": None}),
         "property", "offset.storage.file.filename"),
    Case("offsets file not JSON", _with_offsets("{not json"), "file", "connect.offsets",
         "not valid JSON"),
    Case("offsets file of another shape", _with_offsets(json.dumps({"offsets": {"a": 1}})),
         "file", "connect.offsets", "not an offsets file"),
    Case("offsets entry of another shape",
         _with_offsets(json.dumps({"offsets": [[["c", {"f": 1}], 7]]})),
         "file", "connect.offsets", "not an offsets file"),
    Case("offsets path is a directory", _offsets_dir, "file", "connect.offsets",
         "is a directory"),
    Case("offsets directory not writable", _offsets_under_a_file, "file", "plain-file/o",
         "not a directory"),
    Case("connector file missing", _connectors(gone_json=None), "file", "gone.json"),
    Case("connector file not JSON", _connectors(bad_json="{"), "file", "bad.json"),
    Case("connector properties not UTF-8", _connectors(bad_properties=b"name=\xff\n"),
         "file", "bad.properties"),
    Case("connector file bad initial_state",
         _connectors(state_json={"name": "x", "config": {}, "initial_state": "SLEEPING"}),
         "file", "state.json", "initial_state"),
    Case("connector without a class", _connectors(c_json={"name": "x", "config": {}}),
         "file", "c.json", "connector.class"),
    Case("connector of an unknown class",
         _connectors(c_json=_source("x", **{"connector.class": "NoSuchConnector"})),
         "file", "c.json", "NoSuchConnector"),
    Case("connector config invalid", _connectors(c_json=_source("x", **{"tasks.max": "1_0"})),
         "file", "c.json", "tasks.max"),
    Case("connector above tasks.max.limit",
         _connectors(c_json=_source("x", **{"tasks.max": "2147483647"})),
         "file", "c.json", "tasks.max.limit"),
    Case("connector name empty", _connectors(c_json=_source(" ")), "file", "c.json", "name"),
    Case("arguments swapped", _swapped, "file", "c.json", "the arguments look swapped"),
    Case("two files, one connector",
         _connectors(a_json=_source("x"), b_properties=SOURCE_PROPERTIES),
         "file", "b.properties", "a.json"),
]


def _run(
    args: list[str], timeout: float = 120, mode: str = "standalone"
) -> subprocess.CompletedProcess[str]:
    """The real command, in its own session so that anything it leaves running is found."""
    return subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", mode, *args],
        capture_output=True, text=True, timeout=timeout, check=False, start_new_session=True,
    )


def _failure_lines(output: str) -> list[dict[str, Any]]:
    events = []
    for line in output.splitlines():
        if "worker_start_failed" not in line:
            continue
        try:
            events.append(json.loads(line))
        except ValueError:  # console format (before the properties were read): keep the line
            events.append({"raw": line})
    return events


def _survivors(session: int, grace: float = 10.0) -> list[str]:
    """The command lines of the processes still running in ``session`` once ``grace``
    seconds have passed (zombies, already dead, are not counted)."""
    deadline = time.monotonic() + grace
    while True:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == session and fields[0] != "Z":
                    found.append((stat.parent / "cmdline").read_text().replace("\0", " "))
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _check(
    result: subprocess.CompletedProcess[str], case: Case, culprit: str
) -> dict[str, Any]:
    output = result.stdout + result.stderr
    assert result.returncode == case.exit_code, output
    assert "Traceback" not in output, output
    (event,) = _failure_lines(output)
    raw = event.get("raw", "")
    assert event.get(case.names) == culprit or f"{case.names}={culprit}" in raw, event
    assert event.get("fix") or "fix=" in raw, event
    assert case.says in event.get("error", raw), event
    return event


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_start_up_failure_is_one_line_naming_the_culprit(tmp_path: Path, case: Case) -> None:
    culprit = case.culprit if case.names == "property" else str(tmp_path / case.culprit)
    _check(_run(case.arrange(tmp_path), timeout=60), case, culprit.rstrip("/"))


def test_listener_port_in_use_names_the_property(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _run([str(_worker(tmp_path, listeners=f"grpc://127.0.0.1:{port}"))])
    _check(result, Case("port in use", _props(), "property", "listeners", "in use"), "listeners")


def test_failure_after_spark_started_stops_everything(tmp_path: Path) -> None:
    """Initial offsets are checked only when the connector is created, after Spark started:
    the failure still names the file, and nothing (Spark's JVM included) outlives the
    command."""
    connector = _source("x")
    connector["initial_offsets"] = [{"offset": {"position": 1}}]  # no partition
    path = tmp_path / "c.json"
    path.write_text(json.dumps(connector))
    worker = _worker(tmp_path, **{"spark.master": "local[1]"})
    process = subprocess.Popen(
        [sys.executable, "-m", "connect_grpc.cli", "standalone", str(worker), str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    output, _ = process.communicate(timeout=240)
    result = subprocess.CompletedProcess(process.args, process.returncode, output, "")
    assert "spark_started" in output, output
    _check(result, Case("offsets", _props(), "file", "", "initial_offsets"), str(path))
    assert _survivors(session=process.pid) == []  # start_new_session: its id is the pid


def test_spark_that_cannot_start_is_a_run_time_failure(tmp_path: Path) -> None:
    result = _run([str(_worker(tmp_path, **{"spark.master": "nonsense://x"}))], timeout=240)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    (event,) = _failure_lines(output)
    assert "could not start" in event["error"] and event["fix"], event


_CLUSTER = {
    "group.id": "g",
    "config.storage.topic": "g-configs",
    "offset.storage.topic": "g-offsets",
    "status.storage.topic": "g-status",
}


DISTRIBUTED_CASES = [
    Case("no group.id", lambda tmp: [str(_worker(tmp, **{**_CLUSTER, "group.id": None}))],
         "property", "group.id", "required"),
    Case("no status topic",
         lambda tmp: [str(_worker(tmp, **{**_CLUSTER, "status.storage.topic": None}))],
         "property", "status.storage.topic"),
    Case("bad partitions",
         lambda tmp: [str(_worker(tmp, **_CLUSTER, **{"offset.storage.partitions": "0"}))],
         "property", "offset.storage.partitions"),
    Case("heartbeat not below session",
         lambda tmp: [str(_worker(tmp, **_CLUSTER, **{"heartbeat.interval.ms": "20000"}))],
         "property", "heartbeat.interval.ms"),
    Case("wildcard advertised listener",
         lambda tmp: [str(_worker(tmp, **_CLUSTER, **{"advertised.listener": "grpc://0.0.0.0:1"}))],
         "property", "advertised.listener"),
    # default.api.timeout.ms: the same failure after 5 s of waiting rather than 60 s
    Case("Kafka unreachable",
         lambda tmp: [str(_worker(tmp, **_CLUSTER, **{"default.api.timeout.ms": "5000"}))],
         "property", "bootstrap.servers", "did not answer within 5s", exit_code=1),
]


@pytest.mark.parametrize("case", DISTRIBUTED_CASES, ids=[c.id for c in DISTRIBUTED_CASES])
def test_distributed_start_up_failure_is_one_line(tmp_path: Path, case: Case) -> None:
    result = _run(case.arrange(tmp_path), timeout=120, mode="distributed")
    _check(result, case, case.culprit)
