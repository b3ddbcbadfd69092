"""AlterOffsets of many source partitions on a 3-worker cluster, against Kafka Connect's.

Imported by ``bench/cluster.py`` (``--alter-partitions N``; ``--alter-only`` runs it alone).
On the bench's broker it starts Kafka Connect 4.4.0's own 3-worker cluster (as
``bench/cluster_anchor.py`` does) and, on each of four targets (connect-grpc's leader, a
connect-grpc follower, Kafka Connect's leader, a Kafka Connect follower), a STOPPED
``FileStreamSource`` connector of its own. Then, in rounds whose target order rotates, each
target gets one alter of N partitions (one call, N entries: ``{"filename": "f<i>"}`` ->
``{"position": <i>}``) and one reset of them (every partition a tombstone), each timed end to
end by the client: gRPC ``AlterOffsets`` / ``ResetOffsets`` for connect-grpc, ``PATCH`` /
``DELETE /connectors/<name>/offsets`` for Kafka Connect. One unrecorded round comes first,
and after each call (untimed) the target's offsets are read until they count N (after an
alter) or none (after a reset).

With ``profile_dir``, py-spy records connect-grpc's leader (its pid, ``--rate 100``) during
the recorded alters and resets sent to it, one file of collapsed stacks (py-spy's raw
format) per call, to see where the time goes; py-spy must be installed in the bench's environment.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_anchor import (
    CALL_TIMEOUT_S,
    WORKERS,
    KafkaConnectCluster,
    source_config,
    wait_until_stopped,
)
from cluster_anchor import GrpcTarget as _GrpcTarget  # the create / states of the anchor
from cluster_anchor import RestTarget as _RestTarget

from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

#: An alter or reset of tens of thousands of partitions may take long on a loaded machine.
OFFSETS_CALL_TIMEOUT_S = 300.0
#: Attempts of one Kafka Connect offsets call that fails with HTTP 500 (see RestOffsets).
KC_ATTEMPTS = 5
SETTLE_TIMEOUT_S = 120.0
KINDS = ("alter", "reset")
ROLES = ("leader", "follower")
SYSTEMS = ("connect-grpc", "Kafka Connect")


def log(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] alter: {message}\n")
    sys.stderr.flush()


def offsets(partitions: int) -> list[tuple[str, int]]:
    """The (filename, position) of every partition: short names, so 40,000 of them fit in
    one gRPC message of the worker's default 4 MiB limit."""
    return [(f"f{index:05d}", index) for index in range(partitions)]


class GrpcOffsets(_GrpcTarget):
    """A connect-grpc worker; the request of N partitions is built once. ``alter_many`` and
    ``reset_many`` return the seconds the call took."""

    retries = 0

    def __init__(self, stub: pb_grpc.ConnectServiceStub, pairs: list[tuple[str, int]]) -> None:
        super().__init__(stub)
        self._entries = [
            pb.ConnectorOffset(
                partition=pb.OffsetFields(fields={"filename": pb.OffsetValue(string_value=name)}),
                offset=pb.OffsetFields(fields={"position": pb.OffsetValue(integer_value=at)}),
            )
            for name, at in pairs
        ]

    def request_bytes(self, name: str) -> int:
        return pb.AlterOffsetsRequest(name=name, offsets=self._entries).ByteSize()

    def alter_many(self, name: str) -> float:
        request = pb.AlterOffsetsRequest(name=name, offsets=self._entries)
        started = time.perf_counter()
        self.stub.AlterOffsets(request, timeout=OFFSETS_CALL_TIMEOUT_S)
        return time.perf_counter() - started

    def reset_many(self, name: str) -> float:
        started = time.perf_counter()
        self.stub.ResetOffsets(pb.ResetOffsetsRequest(name=name), timeout=OFFSETS_CALL_TIMEOUT_S)
        return time.perf_counter() - started

    def count(self, name: str) -> int:
        answer = self.stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=CALL_TIMEOUT_S)
        return len(answer.offsets)


class RestOffsets(_RestTarget):
    """A Kafka Connect worker; the body of N partitions is built once (as JSON bytes, like
    the gRPC request's serialisation, outside the timing)."""

    def __init__(self, worker: Any, pairs: list[tuple[str, int]]) -> None:
        super().__init__(worker)
        self._body = {
            "offsets": [
                {"partition": {"filename": name}, "offset": {"position": at}} for name, at in pairs
            ]
        }
        self.retries = 0

    def alter_many(self, name: str) -> float:
        return self._offsets_call("PATCH", name, self._body)

    def reset_many(self, name: str) -> float:
        return self._offsets_call("DELETE", name, None)

    def _offsets_call(self, method: str, name: str, body: Any) -> float:
        """Kafka Connect (seen with 4.1.1) may fail a call sent right after a big alter or
        reset with HTTP 500 (a ConcurrentModificationException in
        ConnectorOffsetBackingStore.connectorPartitions while its offsets topic reader
        still applies the records): it is sent again after a second, as a user would; only
        the successful attempt is timed and the retries are counted."""
        for attempt in range(1, KC_ATTEMPTS + 1):
            started = time.perf_counter()
            # the worker's _request: a longer timeout than its request's
            status, payload = self.worker._request(
                method, f"/connectors/{name}/offsets", body, timeout=OFFSETS_CALL_TIMEOUT_S
            )
            seconds = time.perf_counter() - started
            if status == 200:
                return seconds
            if status != 500 or attempt == KC_ATTEMPTS:
                raise RuntimeError(f"{method} offsets: HTTP {status}: {payload}")
            self.retries += 1
            log(f"Kafka Connect: {method} offsets of {name} failed (HTTP 500); again in 1 s")
            time.sleep(1.0)
        raise AssertionError("unreachable")

    def count(self, name: str) -> int:
        """The offsets stored, or -1 when Kafka Connect failed to read them (HTTP 500: the
        same race as in ``_offsets_call``), so that the caller reads again."""
        status, payload = self.worker._request("GET", f"/connectors/{name}/offsets")
        if status == 500:
            return -1
        if status != 200:
            raise RuntimeError(f"GET offsets: HTTP {status}: {payload}")
        return len(payload["offsets"])


Target = GrpcOffsets | RestOffsets


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)

    def p50_s(self) -> float:
        return statistics.median(self.seconds)

    def spread(self) -> str:
        return ", ".join(f"{s:.2f}" for s in sorted(self.seconds))


@dataclass
class AlterRun:
    partitions: int
    rounds: int
    request_bytes: int
    #: (system, role, kind) -> samples
    results: dict[tuple[str, str, str], Samples]
    load_during: list[float]
    #: Kafka Connect's offsets calls that failed with HTTP 500 and were sent again.
    kc_retries: int
    stack_files: list[Path]


class Profiler:
    """py-spy recording one process while ``running`` is on, into one SVG per label."""

    def __init__(self, pid: int, directory: Path) -> None:
        self._pid = pid
        self._directory = directory
        self._process: subprocess.Popen[bytes] | None = None
        self.written: list[Path] = []

    def start(self, label: str) -> None:
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        target = self._directory / f"leader-{label}.txt"
        self._process = subprocess.Popen(
            [py_spy, "record", "--pid", str(self._pid), "--rate", "100", "--threads",
             "--output", str(target), "--format", "raw", "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.written.append(target)
        time.sleep(1.0)  # py-spy attaches

    def stop(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGINT)
            self._process.wait(60)
            self._process = None


def run(
    root: Path,
    bootstrap: str,
    ours: tuple[pb_grpc.ConnectServiceStub, pb_grpc.ConnectServiceStub],
    leader_pid: int | None,
    partitions: int,
    rounds: int,
    profile_dir: Path | None = None,
) -> AlterRun:
    """Starts Kafka Connect's cluster, runs ``rounds`` recorded rounds (see the module's
    docstring), stops it."""
    pairs = offsets(partitions)
    file = root / "alter-source.txt"
    file.write_text("", "utf-8")
    kc = KafkaConnectCluster(root / "kafka-connect-alter", bootstrap)
    started = time.monotonic()
    kc.start()
    try:
        kc_leader, kc_follower = kc.leader_and_follower()
        log(f"Kafka Connect: {WORKERS} workers up in {time.monotonic() - started:.1f} s")
        leader = GrpcOffsets(ours[0], pairs)
        targets: list[tuple[tuple[str, str], Target]] = [
            (("connect-grpc", "leader"), leader),
            (("Kafka Connect", "leader"), RestOffsets(kc_leader, pairs)),
            (("connect-grpc", "follower"), GrpcOffsets(ours[1], pairs)),
            (("Kafka Connect", "follower"), RestOffsets(kc_follower, pairs)),
        ]
        names = {key: f"alter-{key[0][0].lower()}{key[1][0]}" for key, _ in targets}
        for key, target in targets:
            target.create(names[key], source_config(file, 100), stopped=True)
            wait_until_stopped(target, names[key])
        results = {(s, r, k): Samples() for s in SYSTEMS for r in ROLES for k in KINDS}
        load: list[float] = []
        profiler = (
            Profiler(leader_pid, profile_dir)
            if profile_dir is not None and leader_pid is not None
            else None
        )
        for index in range(-1, rounds):  # round -1: unrecorded, then the counts are checked
            shift = index % len(targets)
            for key, target in targets[shift:] + targets[:shift]:
                for kind, call in (("alter", target.alter_many), ("reset", target.reset_many)):
                    profiled = profiler is not None and index >= 0 and target is leader
                    seconds = _timed(call, names[key], profiler if profiled else None, kind)
                    if index >= 0:
                        results[(*key, kind)].seconds.append(seconds)
                    log(f"round {index + 1}: {key[0]} {key[1]} {kind} {seconds:.2f} s")
                    _settle(target, names[key], partitions if kind == "alter" else 0, key)
            load.append(os.getloadavg()[0])
        request_bytes = leader.request_bytes(names[targets[0][0]])
        stack_files = profiler.written if profiler is not None else []
        retries = sum(target.retries for _, target in targets)
        return AlterRun(
            partitions, rounds, request_bytes, results, load, retries, stack_files
        )
    except BaseException:
        log(kc.log_tails())
        raise
    finally:
        kc.stop()


def _timed(call: Callable[[str], float], name: str, profiler: Profiler | None, label: str) -> float:
    if profiler is not None:
        profiler.start(f"{label}-{len(profiler.written)}")
    try:
        return call(name)
    finally:
        if profiler is not None:
            profiler.stop()


def _settle(target: Target, name: str, expected: int, key: tuple[str, str]) -> None:
    """Untimed, after each call: waits until the target's read of the offsets counts
    ``expected`` of them (the call took effect and the worker's view caught up with it)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while (stored := target.count(name)) != expected:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{key}: {stored} offsets stored, {expected} expected")
        time.sleep(0.5)


def report(result: AlterRun) -> str:
    lines = [
        f"### AlterOffsets of {result.partitions:,} source partitions against Apache Kafka "
        f"Connect's 3-worker cluster ({result.rounds} rounds, targets interleaved; p50 in s)",
        "",
        "| call | ours, leader | KC, leader | ratio | ours, follower | KC, follower | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        ours_l, kc_l, ours_f, kc_f = (
            result.results[(system, role, kind)].p50_s()
            for role in ROLES
            for system in SYSTEMS
        )
        lines.append(
            f"| {kind} | {ours_l:.2f} | {kc_l:.2f} | {ours_l / kc_l:.2f}x | {ours_f:.2f} | "
            f"{kc_f:.2f} | {ours_f / kc_f:.2f}x |"
        )
    worst = max(
        result.results[("connect-grpc", role, "alter")].p50_s() for role in ROLES
    )
    lines += [
        "",
        "All samples (s): "
        + "; ".join(
            f"{system} {role} {kind}: {result.results[(system, role, kind)].spread()}"
            for system in SYSTEMS
            for role in ROLES
            for kind in KINDS
        )
        + ".",
        f"The AlterOffsetsRequest is {result.request_bytes:,} bytes. Goal (issue 25): "
        f"alter <= 3 s on a cluster: {'met' if worst <= 3 else 'NOT met'} (worst p50 "
        f"{worst:.2f} s). Load average (1 min) after each round: "
        + ", ".join(f"{load:.2f}" for load in result.load_during)
        + f". Kafka Connect's calls sent again after an HTTP 500: {result.kc_retries}.",
    ]
    if result.stack_files:
        stacks = ", ".join(map(str, result.stack_files))
        lines.append(f"py-spy stacks (collapsed) of the leader's calls: {stacks}")
    return "\n".join(lines) + "\n"
