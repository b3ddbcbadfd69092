"""Phases of each start ``bench/start_phases.py`` made, read from both workers' logs.

Run from the repository root::

    .venv/bin/python bench/start_phases_logs.py DIR

A measuring aid. ``DIR`` is ``start_phases.py --keep``'s directory. For each start (the
first of each worker left out), the milliseconds from the create call (the client's clock,
the same machine's) to each of Kafka's own log lines of the start, which the same Kafka
classes log in both JVMs, and to connect-grpc's own events; then the median of each over
the starts. Kafka Connect's lines carry log4j's millisecond timestamps. The worker writes a
JVM's line when its host's relay delivers it (milliseconds after the JVM logged it, in
bursts), and its ``LogRecord.time_ms`` is not in the worker's log: a measuring copy of the
checkout shows it as the thread's suffix (``thread=f"{record.thread}|{record.time_ms}"`` in
``runtime/hosting/jvm_wire.java_log_line``), which this reads when it is there; else a
Java line's time is when the worker wrote it (each line is also listed so, "(written)").
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

#: Kafka's lines of a start, by a short name: (logger suffix, message prefix).
KAFKA_LINES = {
    "validating": ("AbstractHerder", "Validating connector"),
    "creating connector": ("Worker", "Creating connector"),
    "connector starting": ("FileStreamSourceConnector", "Starting file source connector"),
    "creating task": ("Worker", "Creating task"),
    "instantiated task": ("Worker", "Instantiated task"),
    "ProducerConfig": ("AbstractConfig", "ProducerConfig values"),
    "Kafka version": ("AppInfoParser", "Kafka version"),
    "task started": ("AbstractWorkerSourceTask", "WorkerSourceTask{id="),
}
OUR_EVENTS = ("connector_created", "connector_started", "task_hosted", "task_host_connected",
              "task_status", "task_started")
_KC_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) "
                      r"(?:\[([^|\]]+)\|[^\]]*\] )?(.*?)(?: \(([\w.$]+):\d+\))?$")


def _kc_time(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(
        tzinfo=UTC).timestamp()


def _name(logger: str, message: str) -> str | None:
    for name, (suffix, prefix) in KAFKA_LINES.items():
        # a multi-line message's first line names no logger (log4j writes it after the last)
        if (not logger or logger.endswith(suffix)) and message.startswith(prefix):
            if name == "task started" and "finished initialization" not in message:
                continue
            return name
    return None


def kafka_connect(path: Path) -> dict[str, dict[str, float]]:
    """Each connector's first time of each of Kafka's lines, by connector."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    pending_validation: float | None = None
    for line in path.read_text("utf-8", errors="replace").splitlines():
        match = _KC_LINE.match(line)
        if match is None:
            continue
        when, _, connector, message, logger = match.groups()
        name = _name(logger or "", message)
        if name == "validating":
            pending_validation = _kc_time(when)
            continue
        if connector and name:
            if name == "creating connector" and pending_validation is not None:
                found[connector].setdefault("validating", pending_validation)
                pending_validation = None
            found[connector].setdefault(name, _kc_time(when))
        if message.startswith("127.0.0.1") and "POST /connectors " in message:
            last = max(found, key=lambda c: found[c].get("creating connector", 0), default=None)
            if last is not None:
                found[last].setdefault("POST logged", _kc_time(when))
    return found


def connect_grpc(path: Path) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text("utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        connector = event.get("connector")
        if not connector:
            continue
        written = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
        if event["event"] == "java_log":
            thread = event.get("thread", "")
            when = int(thread.rsplit("|", 1)[1]) / 1000 if "|" in thread else written
            name = _name(event.get("logger", ""), event.get("message", ""))
            if name:
                found[connector].setdefault(name, when)
                found[connector].setdefault(name + " (written)", written)
        elif event["event"] in OUR_EVENTS:
            key = event["event"]
            if key == "task_status" and event.get("state") != "RUNNING":
                continue
            found[connector].setdefault(key, written)
    return found


def main(root: Path) -> int:
    marks = json.loads((root / "starts.json").read_text("utf-8"))
    logs = {"kc": kafka_connect(root / "kc" / "logs" / "connect.log"),
            "ours": connect_grpc(root / "ours" / "worker.log")}
    rows: dict[str, dict[str, list[float]]] = {"kc": defaultdict(list), "ours": defaultdict(list)}
    for mark in marks:
        system, connector = mark["system"], mark["connector"]
        if connector == "bench-start-0":
            continue
        times = logs[system].get(connector, {})
        rows[system]["create returned"].append(mark["created_s"] * 1000)
        rows[system]["task RUNNING seen"].append(mark["tasks_s"] * 1000)
        for name, when in times.items():
            rows[system][name].append((when - mark["began"]) * 1000)
    for system, table in rows.items():
        count = len(table["create returned"])
        sys.stdout.write(f"\n{system}: ms from the create call (median of {count} starts; "
                         f"min..max)\n")
        for name, values in sorted(table.items(), key=lambda item: statistics.median(item[1])):
            sys.stdout.write(f"  {statistics.median(values):7.1f}  ({min(values):6.1f}.."
                             f"{max(values):6.1f})  {name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
