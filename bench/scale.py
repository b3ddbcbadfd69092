"""A cluster at scale: N idle connectors on 3 workers, against Apache Kafka Connect's own cluster.

Run from the repository root::

    .venv/bin/python bench/scale.py [--connectors N] [--no-anchor] [--no-kill]
                                     [--status-samples S] [--cpu-seconds C]
                                     [--session-timeout-ms T] [--keep-logs DIR]
                                     [--profile-kill DIR] [--json FILE]

Issue 25's goal at scale: "1,000 idle connectors on 3 workers: create p50 and status p50 no
worse than at 10 connectors; kill -9 of a worker → all RUNNING within session.timeout.ms + 2 s;
idle CPU recorded."

It starts the project's own broker (``LocalKafka``) in a temporary directory and, on it, a
3-worker connect-grpc cluster (bench/cluster.py's ``Cluster``: real ``connect-grpc
distributed`` processes, ``heartbeat.interval.ms=1000``, test plugins off, ``local[2]``
Spark each). Then, one system after the other (connect-grpc first, then, unless
``--no-anchor``, Kafka Connect 4.4.0's 3-worker cluster as bench/cluster_anchor.py starts
it, on the same broker once connect-grpc's workers are stopped):

1. **Create.** N ``FileStreamSource`` connectors (an empty file each, ``tasks.max=1``, so
   nothing is ever produced) created RUNNING one after another, through the workers in
   turn (connector i through worker i mod 3, so two in three are forwarded by a follower).
   Each call is timed; reported: p50 / p90 of the first 10 and of the last 10 % of them,
   and the CPU time the workers' process trees (psutil) used per create over the creates
   11 to 10 + N/10 and over the last N/10 (what each create costs, less swayed by the load
   of the shared machine than its latency).
2. **Status.** Once the first 10 are RUNNING (the creation pauses for it, and that pause is
   not counted in 3), ``--status-samples`` status reads (``GetConnectorStatus`` /
   ``GET /connectors/<name>/status``) of those 10, through the workers in turn; again once
   all N are RUNNING, of connectors picked at random among the N. p50 / p90 of each.
   After every 20 reads, 20 calls that look nothing up (the standard gRPC health check;
   Kafka Connect: ``GET /``) through the same workers in turn: the **floor**, what a call
   to that worker process costs at that moment, so that a change of the status p50 is told
   apart into the process (every call slower: the machine, or what else the workers run)
   and the read itself (status p50 less floor p50). After each floor block, as many calls
   to the **control**: a bare grpcio echo server in a process of its own that the bench
   starts (bench/cluster.py's anchor server), outside either cluster: what the machine
   alone (the clusters' other processes, the broker, other tenants) does to a call's time
   between the reads at 10 and at N.
3. **All RUNNING.** The time from the first create until every connector and its task show
   RUNNING (the status listing of one worker, polled every 0.25 s), and the time from the
   end of the last create to that moment.
4. **Idle CPU.** Once all are RUNNING, the CPU time (user + system) of each worker's process
   tree (the worker and its Spark JVM; psutil) over ``--cpu-seconds``, as a share of one core.
   Then, connect-grpc only: 30 ``WatchConnectorStatus`` streams opened at once on each
   worker and cancelled (a burst that grows each server's thread pool to 30), and the reads
   at N again: what a call costs once a burst has grown the pool (grpcio's pool then wakes
   its longest-idle thread for each call; BENCHMARKS.md, "Status after a burst"). It comes
   last because a grown pool stays grown: made at 10 (as until 2026-11-27), it slowed the
   reads at N that the goal compares with those at 10.
5. **kill -9** (connect-grpc only): one worker that does not lead gets SIGKILL on its whole
   process group. Timed from just before the kill: when the leader's ``GetClusterInfo``
   first shows an assignment without the dead worker (the group expired it and the leader
   handed its instances over), and when a survivor's status listing shows every connector
   and task RUNNING on a survivor; the latter against ``session.timeout.ms`` + 2 s.

``--profile-kill DIR`` runs ``py-spy record`` (collapsed stacks, ``--nonblocking``) on the
leader and the watching survivor from the kill on (``.venv/bin/pip install py-spy``; with
hundreds of threads per worker it samples slowly). The Markdown report goes to stdout,
progress to stderr. ``--keep-logs DIR`` copies the
workers' logs there before the temporary directory is removed. The full N=1000 run is heavy
on a 2-core machine (two clusters of 3 JVMs each, 1000 tasks); develop with ``--connectors 30
--no-anchor``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from cluster import (
    Cluster,
    EchoServer,
    log,
    machine,
    percentile,
    show_log_tails,
    stop_clusters,
)
from cluster_anchor import KafkaConnectCluster
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kafka_connect import FILE_SOURCE_CLASS, KafkaConnectDistributed
from process_tree import tree_cpu_seconds

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.logs.output import configure_logging
from connect_grpc.testing.cluster import WorkerProcess
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

WORKERS = 3
TOPIC = "bench-scale-idle"
FIRST = 10
CALL_TIMEOUT_S = 60.0
POLL_S = 0.25
RUNNING_TIMEOUT_S = 900.0
RECOVERY_TIMEOUT_S = 300.0
PAGE_SIZE = 1000
#: Status reads between two blocks of as many floor calls.
FLOOR_BLOCK = 20
#: Watch streams opened at once on each worker (below its 32 gRPC threads) for the burst.
BURST_STREAMS = 30
#: How much higher a p50 at N may be than at 10 and still count as "no worse": two p50s of
#: the same calls measured a minute apart on the shared machine differ by this much.
NOISE = 0.10

#: connector name -> (connector state, its worker, [(task state, its worker), ...])
Listing = dict[str, tuple[str, str, list[tuple[str, str]]]]


@dataclass
class Latencies:
    seconds: list[float] = field(default_factory=list)

    def ms(self, q: float) -> float:
        return percentile(self.seconds, q) * 1000 if self.seconds else float("nan")


@dataclass
class Recovery:
    session_timeout_ms: int
    killed: str
    leader: str
    reassigned_s: float | None
    all_running_s: float
    generations: int

    @property
    def within_bound(self) -> bool:
        return self.all_running_s <= self.session_timeout_ms / 1000 + 2


@dataclass
class ScaleRun:
    system: str
    connectors: int
    create_first: Latencies
    create_last: Latencies
    status_first: Latencies
    status_all: Latencies
    #: The cheapest call each worker answers (gRPC health check; Kafka Connect: ``GET /``),
    #: interleaved with the status reads: what the process itself costs a call then.
    floor_first: Latencies
    floor_all: Latencies
    #: The control: a bare grpcio server in a process of its own, outside the cluster,
    #: called beside the floor (what the machine alone does to a call's time).
    control_first: Latencies
    control_all: Latencies
    all_running_s: float
    after_last_create_s: float
    idle_cpu: list[float]
    cpu_seconds: float
    placements: Counter[str]
    load: tuple[float, float, float]
    #: The workers' CPU (process trees together) per create, in ms: over the creates after
    #: the first 10 and over the last 10 %, as many of each (None when N is too small).
    create_cpu_ms: tuple[float, float] | None = None
    recovery: Recovery | None = None
    #: connect-grpc only: status and floor at N again, after a burst of watch streams
    #: grew each worker's gRPC pool (each call then wakes its longest-idle thread).
    status_burst: Latencies | None = None
    floor_burst: Latencies | None = None


class System(Protocol):
    """One system's 3 workers, as the bench drives them (``via``: a worker's index)."""

    name: str

    def create(self, via: int, name: str, config: Mapping[str, str]) -> None: ...
    def status(self, via: int, name: str) -> None: ...
    def floor(self, via: int) -> None: ...
    def listing(self, via: int) -> Listing: ...
    def pids(self) -> list[int]: ...


def _state_name(state: int) -> str:
    return str(pb.InstanceState.Name(state)).removeprefix("INSTANCE_STATE_")


class Ours:
    name = "connect-grpc"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.workers: list[WorkerProcess] = list(cluster.live)
        self.health = [health_pb2_grpc.HealthStub(w.channel) for w in self.workers]

    def stub(self, via: int) -> pb_grpc.ConnectServiceStub:
        return self.workers[via % len(self.workers)].stub

    def create(self, via: int, name: str, config: Mapping[str, str]) -> None:
        self.stub(via).CreateConnector(
            pb.CreateConnectorRequest(
                name=name, config=config, initial_state=pb.INITIAL_STATE_RUNNING
            ),
            timeout=CALL_TIMEOUT_S,
        )

    def status(self, via: int, name: str) -> None:
        self.stub(via).GetConnectorStatus(
            pb.GetConnectorStatusRequest(name=name), timeout=CALL_TIMEOUT_S
        )

    def floor(self, via: int) -> None:
        self.health[via % len(self.health)].Check(
            health_pb2.HealthCheckRequest(service=""), timeout=CALL_TIMEOUT_S
        )

    def statuses(self, via: int) -> Iterator[pb.ConnectorStatus]:
        token = ""
        while True:
            page = self.stub(via).ListConnectors(
                pb.ListConnectorsRequest(expand_status=True, page_size=PAGE_SIZE, page_token=token),
                timeout=CALL_TIMEOUT_S,
            )
            for listing in page.connectors:
                yield listing.status
            token = page.next_page_token
            if not token:
                return

    def listing(self, via: int) -> Listing:
        return {
            status.name: (
                _state_name(status.connector.state),
                status.connector.worker_id,
                [(_state_name(t.state), t.worker_id) for t in status.tasks],
            )
            for status in self.statuses(via)
        }

    def placements(self) -> Counter[str]:
        kinds: Counter[str] = Counter()
        for status in self.statuses(0):
            for task in status.tasks:
                kind = pb.TaskPlacement.Kind.Name(task.placement.kind).removeprefix("KIND_")
                kinds[kind.lower()] += 1
        return kinds

    def pids(self) -> list[int]:
        return [w.pid for w in self.workers if w.pid is not None]

    def burst(self, name: str, streams: int) -> None:
        """``streams`` WatchConnectorStatus streams of ``name`` open at once on each worker
        (each holds a server thread until cancelled), then all cancelled."""
        request = pb.WatchConnectorStatusRequest(name=name)
        calls = [
            worker.stub.WatchConnectorStatus(request, timeout=CALL_TIMEOUT_S)
            for worker in self.workers
            for _ in range(streams)
        ]
        for call in calls:
            next(call)  # its first update: a server thread serves it now
        for call in calls:
            call.cancel()
        time.sleep(1)  # the servers' threads see the cancellations and go idle


class Theirs:
    name = "Kafka Connect"

    def __init__(self, workers: Sequence[KafkaConnectDistributed]) -> None:
        self.workers = list(workers)

    def create(self, via: int, name: str, config: Mapping[str, str]) -> None:
        self.workers[via % WORKERS].request(
            "POST", "/connectors", {"name": name, "config": dict(config)}, expect=(201,)
        )

    def status(self, via: int, name: str) -> None:
        self.workers[via % WORKERS].request("GET", f"/connectors/{name}/status")

    def floor(self, via: int) -> None:
        self.workers[via % WORKERS].request("GET", "/")

    def listing(self, via: int) -> Listing:
        answer: dict[str, Any] = self.workers[via % WORKERS].request(
            "GET", "/connectors?expand=status"
        )
        listing: Listing = {}
        for name, expanded in answer.items():
            status = expanded["status"]
            listing[name] = (
                status["connector"]["state"],
                status["connector"].get("worker_id", ""),
                [(t["state"], t.get("worker_id", "")) for t in status.get("tasks", [])],
            )
        return listing

    def pids(self) -> list[int]:
        return [w.pid for w in self.workers if w.pid is not None]


# --- the measurements -----------------------------------------------------------------------


def idle_config(file: Path) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE_CLASS, "file": str(file), "topic": TOPIC,
            "tasks.max": "1"}


def all_running(listing: Listing, names: Sequence[str], avoid: str = "") -> bool:
    """Whether each of ``names`` and its task(s) are RUNNING (on a worker other than
    ``avoid``)."""
    for name in names:
        entry = listing.get(name)
        if entry is None:
            return False
        state, worker, tasks = entry
        if state != "RUNNING" or worker == avoid or not tasks:
            return False
        if any(t_state != "RUNNING" or t_worker == avoid for t_state, t_worker in tasks):
            return False
    return True


def wait_running(
    system: System, names: Sequence[str], timeout: float, via: int = 0, avoid: str = ""
) -> float:
    """Polls ``via``'s listing until ``names`` are all RUNNING; returns time.monotonic()."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            listing = system.listing(via)
        except Exception as exc:  # a worker busy starting 1000 tasks may time out: poll again
            log(f"{system.name}: listing failed ({exc!r}); again")
            listing = {}
        now = time.monotonic()
        if all_running(listing, names, avoid):
            return now
        if now > deadline:
            states = Counter(entry[0] for entry in listing.values())
            raise RuntimeError(f"{system.name}: not all RUNNING after {timeout} s: {states}")
        time.sleep(POLL_S)


class Reads(NamedTuple):
    status: Latencies
    floor: Latencies
    control: Latencies


def status_reads(
    system: System, names: Sequence[str], samples: int, control: Callable[[], object]
) -> Reads:
    """``samples`` status reads and as many floor and control calls, in alternating blocks
    of FLOOR_BLOCK, through the workers in turn."""
    reads = Reads(Latencies(), Latencies(), Latencies())
    for index in range(samples):
        name = names[index % len(names)] if len(names) <= FIRST else random.choice(names)
        started = time.perf_counter()
        system.status(index, name)
        reads.status.seconds.append(time.perf_counter() - started)
        if (index + 1) % FLOOR_BLOCK == 0:
            for via in range(index + 1 - FLOOR_BLOCK, index + 1):
                started = time.perf_counter()
                system.floor(via)
                reads.floor.seconds.append(time.perf_counter() - started)
            for _ in range(FLOOR_BLOCK):
                started = time.perf_counter()
                control()
                reads.control.seconds.append(time.perf_counter() - started)
    return reads


def idle_cpu(pids: Sequence[int], seconds: float) -> list[float]:
    """Each process tree's CPU over ``seconds``, as a share of one core."""
    before = [tree_cpu_seconds(pid) for pid in pids]
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    return [(tree_cpu_seconds(pid) - b) / elapsed for pid, b in zip(pids, before, strict=True)]


def fill(
    system: System,
    root: Path,
    connectors: int,
    status_samples: int,
    cpu_seconds: float,
    control: Callable[[], object],
) -> tuple[ScaleRun, list[str]]:
    """Measurements 1-4 on ``system``; returns them and the connectors' names."""
    files = root / f"files-{system.name.replace(' ', '-').lower()}"
    files.mkdir(parents=True, exist_ok=True)
    prefix = "idle-" + system.name.split()[0].lower()[:2]
    names = [f"{prefix}-{i:04d}" for i in range(connectors)]
    creates: list[float] = []
    first = Reads(Latencies(), Latencies(), Latencies())
    after_burst: Reads | None = None
    paused = 0.0
    tail = max(1, connectors // 10)
    # CPU time is what the work each create causes costs, less swayed than latency by how
    # busy the shared machine is: compared between creates 11-(10+tail) and the last tail
    enough = connectors >= FIRST + 2 * tail
    cpu_marks = {FIRST, FIRST + tail, connectors - tail} if enough else set()
    cpu_at: dict[int, float] = {}
    first_started = time.monotonic()
    for index, name in enumerate(names):
        if index in cpu_marks:
            cpu_at[index] = sum(tree_cpu_seconds(pid) for pid in system.pids())
        file = files / f"{name}.txt"
        file.write_text("", "utf-8")
        started = time.perf_counter()
        system.create(index, name, idle_config(file))
        creates.append(time.perf_counter() - started)
        if index + 1 == FIRST:
            pause_started = time.monotonic()
            wait_running(system, names[:FIRST], RUNNING_TIMEOUT_S)
            first = status_reads(system, names[:FIRST], status_samples, control)
            log(f"{system.name}: first {FIRST} RUNNING; status p50 {first.status.ms(50):.2f} ms")
            paused = time.monotonic() - pause_started
        if (index + 1) % 100 == 0:
            recent = Latencies(creates[-100:])
            log(f"{system.name}: {index + 1} created, last 100 p50 {recent.ms(50):.1f} ms "
                f"(load {os.getloadavg()[0]:.2f})")
    last_created = time.monotonic()
    create_cpu_ms = None
    if cpu_marks:
        cpu_at[connectors] = sum(tree_cpu_seconds(pid) for pid in system.pids())
        create_cpu_ms = (
            (cpu_at[FIRST + tail] - cpu_at[FIRST]) / tail * 1000,
            (cpu_at[connectors] - cpu_at[connectors - tail]) / tail * 1000,
        )
        log(f"{system.name}: workers' CPU per create {create_cpu_ms[0]:.1f} ms early, "
            f"{create_cpu_ms[1]:.1f} ms over the last {tail}")
    done = wait_running(system, names, RUNNING_TIMEOUT_S)
    log(f"{system.name}: all {connectors} RUNNING {done - first_started - paused:.1f} s after "
        f"the first create, {done - last_created:.1f} s after the last")
    at_n = status_reads(system, names, status_samples, control)
    log(f"{system.name}: status p50 at {connectors}: {at_n.status.ms(50):.2f} ms; idle CPU "
        f"over {cpu_seconds:.0f} s")
    cpu = idle_cpu(system.pids(), cpu_seconds)
    if isinstance(system, Ours):
        # last, so that the pools it grows touch neither the reads at N nor the idle CPU
        system.burst(names[0], BURST_STREAMS)
        after_burst = status_reads(system, names, status_samples, control)
        log(f"{system.name}: after a burst of {BURST_STREAMS} streams per worker, "
            f"status p50 {after_burst.status.ms(50):.2f} ms")
    placements = system.placements() if isinstance(system, Ours) else Counter[str]()
    run = ScaleRun(
        system=system.name,
        connectors=connectors,
        create_first=Latencies(creates[:FIRST]),
        create_last=Latencies(creates[-tail:]),
        status_first=first.status,
        status_all=at_n.status,
        floor_first=first.floor,
        floor_all=at_n.floor,
        control_first=first.control,
        control_all=at_n.control,
        all_running_s=done - first_started - paused,
        after_last_create_s=done - last_created,
        idle_cpu=cpu,
        cpu_seconds=cpu_seconds,
        placements=placements,
        load=os.getloadavg(),
        create_cpu_ms=create_cpu_ms,
        status_burst=after_burst.status if after_burst else None,
        floor_burst=after_burst.floor if after_burst else None,
    )
    return run, names


def profile(pids: Mapping[str, int], seconds: float, into: Path) -> list[subprocess.Popen[bytes]]:
    """Starts ``py-spy record`` (collapsed stacks, without pausing the process) on each
    worker for ``seconds``: where the survivors' time goes after a kill."""
    py_spy = Path(sys.executable).parent / "py-spy"
    into.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [str(py_spy), "record", "--nonblocking", "--format", "raw", "--rate", "50",
             "--duration", str(int(seconds)), "--pid", str(pid), "-o", str(into / f"{name}.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    ]


def finish_profile(profiler: subprocess.Popen[bytes], within: float) -> None:
    """Waits for py-spy; one that lags behind its duration (many threads sample slowly)
    is interrupted, which makes it write what it has."""
    try:
        profiler.wait(within)
    except subprocess.TimeoutExpired:
        profiler.send_signal(signal.SIGINT)
        profiler.wait(30)


def kill_follower(ours: Ours, names: Sequence[str], profile_into: Path | None) -> Recovery:
    """Measurement 5: SIGKILL of a worker that does not lead, until all RUNNING again."""
    cluster = ours.cluster
    leader = cluster.leader()
    victim = next(w for w in cluster.live if w is not leader)
    survivor = next(w for w in cluster.live if w is not leader and w is not victim)
    dead = victim.id
    before = cluster.info(leader).generation
    log(f"kill -9 of {dead} (leader {leader.id}, watching from {survivor.id})")
    ours.workers = [leader, survivor]
    profilers = [] if profile_into is None else profile(
        {w.id: w.pid for w in (leader, survivor) if w.pid is not None},
        ours.cluster.session_timeout_ms / 1000 + 20,
        profile_into,
    )
    killed_at = time.monotonic()
    victim.kill()
    reassigned: float | None = None
    generation = before
    deadline = killed_at + RECOVERY_TIMEOUT_S
    while True:
        try:
            if reassigned is None:
                info = cluster.info(leader)
                generation = info.generation
                if all(w.id != dead for w in info.workers):
                    reassigned = time.monotonic() - killed_at
            listing = ours.listing(1)
        except Exception as exc:
            log(f"recovery: a call failed ({exc!r}); again")
            listing = {}
        if all_running(listing, names, avoid=dead):
            recovered = time.monotonic() - killed_at
            break
        if time.monotonic() > deadline:
            states = Counter(entry[0] for entry in listing.values())
            raise RuntimeError(f"not all RUNNING on survivors {RECOVERY_TIMEOUT_S} s after the "
                               f"kill: {states}")
        time.sleep(POLL_S)
    generation = cluster.info(leader).generation
    for profiler in profilers:
        finish_profile(profiler, ours.cluster.session_timeout_ms / 1000 + 30)
    log(f"recovery: an assignment without {dead} after {reassigned} s, all RUNNING on "
        f"survivors after {recovered:.2f} s (generation {before} -> {generation})")
    return Recovery(cluster.session_timeout_ms, dead, leader.id, reassigned,
                    recovered, generation - before)


# --- the report -----------------------------------------------------------------------------


def _own(status: Latencies, floor: Latencies) -> float:
    """A status read's p50 less the floor's, in ms."""
    return status.ms(50) - floor.ms(50)


def met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def report(runs: list[ScaleRun]) -> str:
    n = runs[0].connectors
    tail = max(1, n // 10)
    lines = [
        f"### {n} idle connectors on 3 workers (FileStreamSource of an empty file, tasks.max=1)",
        "",
        "| measurement | " + " | ".join(r.system for r in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]

    def row(label: str, cell: Callable[[ScaleRun], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(r) for r in runs) + " |")

    row(f"create p50 / p90, first {FIRST} (ms)",
        lambda r: f"{r.create_first.ms(50):.1f} / {r.create_first.ms(90):.1f}")
    row(f"create p50 / p90, last {tail} (ms)",
        lambda r: f"{r.create_last.ms(50):.1f} / {r.create_last.ms(90):.1f}")
    row(f"status p50 / p90 at {FIRST} (ms)",
        lambda r: f"{r.status_first.ms(50):.2f} / {r.status_first.ms(90):.2f}")
    row(f"status p50 / p90 at {n} (ms)",
        lambda r: f"{r.status_all.ms(50):.2f} / {r.status_all.ms(90):.2f}")
    row(f"floor p50 at {FIRST} / at {n} (ms; health check, Kafka Connect GET /)",
        lambda r: f"{r.floor_first.ms(50):.2f} / {r.floor_all.ms(50):.2f}")
    row(f"control p50 at {FIRST} / at {n} (ms; a bare grpcio server outside the cluster)",
        lambda r: f"{r.control_first.ms(50):.2f} / {r.control_all.ms(50):.2f}")
    row(f"status p50 less floor p50 at {FIRST} / at {n} (ms)",
        lambda r: f"{_own(r.status_first, r.floor_first):.2f} / "
        f"{_own(r.status_all, r.floor_all):.2f}")
    row(f"status p50 / floor p50 at {n} after a burst of {BURST_STREAMS} watch streams "
        "per worker (ms)",
        lambda r: "-" if r.status_burst is None or r.floor_burst is None else
        f"{r.status_burst.ms(50):.2f} / {r.floor_burst.ms(50):.2f}")
    row(f"workers' CPU per create, creates {FIRST + 1}-{FIRST + tail} / last {tail} (ms)",
        lambda r: "-" if r.create_cpu_ms is None else
        f"{r.create_cpu_ms[0]:.1f} / {r.create_cpu_ms[1]:.1f}")
    row("all RUNNING after the first create (s)", lambda r: f"{r.all_running_s:.1f}")
    row("all RUNNING after the last create (s)", lambda r: f"{r.after_last_create_s:.1f}")
    row("idle CPU of each worker's process tree (share of a core)",
        lambda r: " / ".join(f"{c:.0%}" for c in r.idle_cpu))
    row("idle CPU, the 3 workers together (cores)", lambda r: f"{sum(r.idle_cpu):.2f}")
    row("load average (1 min) at the end", lambda r: f"{r.load[0]:.2f}")
    ours = runs[0]
    if ours.placements:
        lines += ["", "Tasks by placement (connect-grpc): " + ", ".join(
            f"{kind} {count}" for kind, count in sorted(ours.placements.items())) + "."]
    if len(runs) > 1:
        theirs = runs[1]
        lines += [
            "",
            f"Ratios ours / Kafka Connect: create p50 (last {tail}) "
            f"{ours.create_last.ms(50) / theirs.create_last.ms(50):.2f}x, status p50 at {n} "
            f"{ours.status_all.ms(50) / theirs.status_all.ms(50):.2f}x, all RUNNING "
            f"{ours.all_running_s / theirs.all_running_s:.2f}x.",
        ]
    create_ratio = ours.create_last.ms(50) / ours.create_first.ms(50)
    status_ratio = ours.status_all.ms(50) / ours.status_first.ms(50)
    lines += [
        "",
        f"Goal, create p50 at {n} no worse than at {FIRST}: "
        f"{ours.create_last.ms(50):.1f} vs {ours.create_first.ms(50):.1f} ms "
        f"({create_ratio:.2f}x), {met(create_ratio <= 1 + NOISE)}. Status p50: "
        f"{ours.status_all.ms(50):.2f} vs {ours.status_first.ms(50):.2f} ms "
        f"({status_ratio:.2f}x), {met(status_ratio <= 1 + NOISE)}. (\"No worse\" here: at most "
        f"{NOISE:.0%} above, the spread of two p50s of one system on this shared machine.) "
        f"Of the status p50's change, the floor (a call that looks nothing up) moved "
        f"{ours.floor_all.ms(50) - ours.floor_first.ms(50):+.2f} ms and the rest "
        f"{_own(ours.status_all, ours.floor_all) - _own(ours.status_first, ours.floor_first):+.2f}"
        f" ms; over the same time the control (a bare grpcio server in a process of its own, "
        f"outside the cluster) moved {ours.control_all.ms(50) - ours.control_first.ms(50):+.2f}"
        " ms.",
    ]
    if ours.status_burst is not None and ours.floor_burst is not None:
        lines += [
            "",
            f"After a burst of {BURST_STREAMS} watch streams on each worker (its gRPC pool "
            f"grown to as many threads), status p50 at {n} "
            f"{ours.status_burst.ms(50) / ours.status_all.ms(50):.2f}x and floor p50 "
            f"{ours.floor_burst.ms(50) / ours.floor_all.ms(50):.2f}x what they were before it.",
        ]
    recovery = ours.recovery
    if recovery is not None:
        def seconds(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} s"

        bound = recovery.session_timeout_ms / 1000 + 2
        lines += [
            "",
            f"kill -9 of {recovery.killed} (a follower; leader {recovery.leader}), "
            f"session.timeout.ms={recovery.session_timeout_ms}: the leader's assignment left the "
            f"dead worker out after {seconds(recovery.reassigned_s)}, every connector and task "
            f"RUNNING on a survivor "
            f"after **{recovery.all_running_s:.2f} s** ({recovery.generations} assignment "
            f"generation(s)); goal <= {bound:.0f} s: {met(recovery.within_bound)}.",
        ]
    return "\n".join(lines) + "\n"


# --- the run --------------------------------------------------------------------------------


def measure_ours(
    root: Path,
    bootstrap: str,
    args: argparse.Namespace,
    keep: list[Cluster],
    control: Callable[[], object],
) -> ScaleRun:
    cluster = Cluster(root / "connect-grpc", bootstrap, args.session_timeout_ms)
    keep.append(cluster)
    started = time.monotonic()
    cluster.start(WORKERS)
    info = cluster.settled(WORKERS)
    log(f"connect-grpc: {WORKERS} workers up in {time.monotonic() - started:.1f} s, leader "
        f"{info.leader_id}")
    ours = Ours(cluster)
    run, names = fill(
        ours, root, args.connectors, args.status_samples, args.cpu_seconds, control
    )
    if args.kill:
        run.recovery = kill_follower(ours, names, args.profile_kill)
    cluster.stop()
    return run


def measure_theirs(
    root: Path, bootstrap: str, args: argparse.Namespace, control: Callable[[], object]
) -> ScaleRun:
    kc = KafkaConnectCluster(root / "kafka-connect", bootstrap)
    started = time.monotonic()
    kc.start()
    try:
        kc.leader_and_follower()
        log(f"Kafka Connect: {WORKERS} workers up in {time.monotonic() - started:.1f} s")
        run, _ = fill(Theirs(kc.workers), root, args.connectors, args.status_samples,
                      args.cpu_seconds, control)
        return run
    except BaseException:
        log(kc.log_tails())
        raise
    finally:
        kc.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--connectors", type=int, default=1000, help="idle connectors (N)")
    parser.add_argument("--status-samples", type=int, default=200,
                        help="status reads at 10 and at N connectors")
    parser.add_argument("--cpu-seconds", type=float, default=30.0,
                        help="how long idle CPU is measured once all are RUNNING")
    parser.add_argument("--session-timeout-ms", type=int, default=10_000,
                        help="connect-grpc's session.timeout.ms (Kafka Connect's default)")
    parser.add_argument("--no-anchor", action="store_true",
                        help="leave Kafka Connect's cluster out")
    parser.add_argument("--no-kill", dest="kill", action="store_false",
                        help="leave the kill -9 of a worker out")
    parser.add_argument("--profile-kill", type=Path,
                        help="py-spy the leader and the watching survivor from the kill on "
                        "(collapsed stacks into this directory; .venv/bin/pip install py-spy)")
    parser.add_argument("--keep-logs", type=Path, help="copy the workers' logs here")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    if args.connectors < FIRST:
        parser.error(f"--connectors must be at least {FIRST}")

    configure_logging("console", "WARNING")
    # a SIGTERM ends the run through the finally blocks, which stop the workers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_before = os.getloadavg()
    run_started = time.monotonic()
    runs: list[ScaleRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        broker = LocalKafka(root / "kafka", die_with_parent=True)
        clusters: list[Cluster] = []
        control_server = EchoServer()

        def control() -> bytes:
            return control_server.call(b"", timeout=CALL_TIMEOUT_S)

        try:
            started = time.monotonic()
            bootstrap = broker.start()
            log(f"broker {bootstrap} started in {time.monotonic() - started:.1f} s")
            runs.append(measure_ours(root, bootstrap, args, clusters, control))
            if not args.no_anchor:
                runs.append(measure_theirs(root, bootstrap, args, control))
        except BaseException:
            show_log_tails(clusters)
            raise
        finally:
            stop_clusters(clusters, args.keep_logs)
            broker.stop()
            control_server.stop()

    out = sys.stdout
    out.write("\n")
    for key, value in machine(load_before).items():
        out.write(f"- {key}: {value}\n")
    out.write(f"- wall time of the run: {time.monotonic() - run_started:.0f} s\n\n")
    out.write(report(runs))
    if args.json is not None:
        args.json.write_text(json.dumps([_figures(r) for r in runs], indent=2), "utf-8")
    return 0


def _figures(run: ScaleRun) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "system": run.system,
        "connectors": run.connectors,
        "create_first_p50_ms": run.create_first.ms(50),
        "create_last_p50_ms": run.create_last.ms(50),
        "status_first_p50_ms": run.status_first.ms(50),
        "status_all_p50_ms": run.status_all.ms(50),
        "floor_first_p50_ms": run.floor_first.ms(50),
        "floor_all_p50_ms": run.floor_all.ms(50),
        "control_first_p50_ms": run.control_first.ms(50),
        "control_all_p50_ms": run.control_all.ms(50),
        "all_running_s": run.all_running_s,
        "after_last_create_s": run.after_last_create_s,
        "idle_cpu": run.idle_cpu,
        "placements": dict(run.placements),
        "create_cpu_ms": run.create_cpu_ms,
    }
    if run.status_burst is not None and run.floor_burst is not None:
        figures["status_burst_p50_ms"] = run.status_burst.ms(50)
        figures["floor_burst_p50_ms"] = run.floor_burst.ms(50)
    if run.recovery is not None:
        figures["recovery"] = vars(run.recovery)
    return figures


if __name__ == "__main__":
    sys.exit(main())
