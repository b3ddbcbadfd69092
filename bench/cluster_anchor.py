"""The write-path anchor of bench/cluster.py: Apache Kafka Connect's own 3-worker cluster.

Imported by ``bench/cluster.py`` (``--anchor-samples``). On the bench's broker it starts three
``ConnectDistributed`` workers (``KafkaConnectDistributed``: a group, config, offsets and status
topics of their own, REST on free ports, exactly-once source support off, Connect's defaults
otherwise) and then, in rounds, runs one cycle of writes on each of four targets: connect-grpc's
leader, a connect-grpc follower, Kafka Connect's leader (named in its log: its REST API does not
say) and a Kafka Connect follower (which forwards what it forwards). The order of the four
rotates from one round to the next, so both systems see the same machine state.

One cycle, on a connector of its own (``FileStreamSource`` of an empty file, one task, so
nothing is produced): create STOPPED, put config, alter offsets, reset offsets, resume from
STOPPED (the call, and until the status shows the connector and every task RUNNING), pause,
resume from PAUSED, restart (the connector only; also reported by where the connector ran,
read from its status just before: a plain restart is carried out by the worker that runs
it, so one sent to another worker is forwarded there, by both systems; then, once RUNNING
again, the same restart sent to the worker that runs the connector), restart with its tasks
(KIP-745's ``include_tasks``: both systems answer with the plan once the request is
written, and the workers carry it out as they read it), stop, delete; then a second
connector created RUNNING, timed until every task is RUNNING, and deleted while it runs.
The create STOPPED is also timed until the called worker's status shows it STOPPED (the
call, then polling as for the states below). Between the timed
writes the cycle waits, untimed, for the state the next write starts from (PAUSED before
resume from paused, RUNNING after a resume or restart), polling the same worker's status.

Also per round, interleaved with the cycles: the floor (one transactional produce and commit
to a 1-partition topic, then its read-back by a ``read_committed`` consumer that waits at the
topic's end) and a bare grpcio echo, direct and through a bare relay server (``echo`` and
``relay``, given by bench/cluster.py), whose difference is one bare forwarding hop.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import grpc
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kafka_connect import FILE_SOURCE_CLASS, KafkaConnectDistributed, KafkaConnectError

from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

WORKERS = 3
CALL_TIMEOUT_S = 60.0
STATE_TIMEOUT_S = 60.0
STATE_POLL_S = 0.005
#: A loaded shared machine has taken minutes to start JVMs.
START_TIMEOUT_S = 300.0
START_ATTEMPTS = 3
ECHO_CALLS_PER_ROUND = 10
FLOOR_PER_ROUND = 3
TOPIC = "bench-anchor"

#: The timed writes, in the order of a cycle.
WRITES = (
    "create STOPPED",
    "put config",
    "alter offsets",
    "reset offsets",
    "resume from stopped",
    "pause",
    "resume from paused",
    "restart",
    "restart with tasks",
    "stop",
    "delete",
    "delete running",
)
#: A restart, by where the connector ran: a plain restart is carried out by that worker, so
#: one sent elsewhere is forwarded there (by both systems), and the cell mixes the two.
RESTART_HERE = "restart, the connector on the called worker"
RESTART_ELSEWHERE = "restart, the connector on another worker"
#: The same restart sent, a moment later, to the worker that runs the connector.
RESTART_OWN = "restart sent to the connector's own worker"
RESUME_RUNNING = "resume from STOPPED → every task RUNNING"
CREATE_STOPPED = "create STOPPED → STOPPED on the called worker"
CREATE_RUNNING = "create RUNNING → every task RUNNING"
ROLES = ("leader", "follower")
SYSTEMS = ("connect-grpc", "Kafka Connect")


def log(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] anchor: {message}\n")
    sys.stderr.flush()


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)

    def p50_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    def p90_ms(self) -> float:
        if len(self.seconds) < 2:
            return self.p50_ms()
        return statistics.quantiles(self.seconds, n=10, method="inclusive")[-1] * 1000


def source_config(file: Path, batch_size: int) -> dict[str, str]:
    return {
        "connector.class": FILE_SOURCE_CLASS,
        "file": str(file),
        "topic": TOPIC,
        "tasks.max": "1",
        "batch.size": str(batch_size),
    }


class Target(Protocol):
    """One worker of one system, as the cycle drives it."""

    def create(self, name: str, config: Mapping[str, str], stopped: bool) -> None: ...
    def put_config(self, name: str, config: Mapping[str, str]) -> None: ...
    def alter_offsets(self, name: str, file: Path, position: int) -> None: ...
    def reset_offsets(self, name: str) -> None: ...
    def pause(self, name: str) -> None: ...
    def resume(self, name: str) -> None: ...
    def restart(self, name: str, include_tasks: bool = False) -> None: ...
    def stop(self, name: str) -> None: ...
    def delete(self, name: str) -> None: ...
    def states(self, name: str) -> tuple[str, list[str]]:
        """The connector's state and its tasks' states (names as Kafka Connect's REST)."""
        ...

    def worker_id(self) -> str:
        """This worker's id, as statuses name it."""
        ...

    def connector_worker(self, name: str) -> str:
        """The id of the worker that runs the connector's instance (its status names it)."""
        ...


class GrpcTarget:
    """A connect-grpc worker, over its long-lived channel."""

    def __init__(self, stub: pb_grpc.ConnectServiceStub) -> None:
        self.stub = stub
        self._worker_id = ""

    def worker_id(self) -> str:
        if not self._worker_id:
            info = self.stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=CALL_TIMEOUT_S)
            self._worker_id = info.worker_id
        return self._worker_id

    def connector_worker(self, name: str) -> str:
        status = self.stub.GetConnectorStatus(
            pb.GetConnectorStatusRequest(name=name), timeout=CALL_TIMEOUT_S
        ).status
        return str(status.connector.worker_id)

    def create(self, name: str, config: Mapping[str, str], stopped: bool) -> None:
        state = pb.INITIAL_STATE_STOPPED if stopped else pb.INITIAL_STATE_RUNNING
        self.stub.CreateConnector(
            pb.CreateConnectorRequest(name=name, config=config, initial_state=state),
            timeout=CALL_TIMEOUT_S,
        )

    def put_config(self, name: str, config: Mapping[str, str]) -> None:
        self.stub.PutConnectorConfig(
            pb.PutConnectorConfigRequest(name=name, config=config), timeout=CALL_TIMEOUT_S
        )

    def alter_offsets(self, name: str, file: Path, position: int) -> None:
        offset = pb.ConnectorOffset(
            partition=pb.OffsetFields(fields={"filename": pb.OffsetValue(string_value=str(file))}),
            offset=pb.OffsetFields(fields={"position": pb.OffsetValue(integer_value=position)}),
        )
        self.stub.AlterOffsets(
            pb.AlterOffsetsRequest(name=name, offsets=[offset]), timeout=CALL_TIMEOUT_S
        )

    def reset_offsets(self, name: str) -> None:
        self.stub.ResetOffsets(pb.ResetOffsetsRequest(name=name), timeout=CALL_TIMEOUT_S)

    def pause(self, name: str) -> None:
        self.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=CALL_TIMEOUT_S)

    def resume(self, name: str) -> None:
        self.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=CALL_TIMEOUT_S)

    def restart(self, name: str, include_tasks: bool = False) -> None:
        self.stub.RestartConnector(
            pb.RestartConnectorRequest(name=name, include_tasks=include_tasks),
            timeout=CALL_TIMEOUT_S,
        )

    def stop(self, name: str) -> None:
        self.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=CALL_TIMEOUT_S)

    def delete(self, name: str) -> None:
        self.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=CALL_TIMEOUT_S)

    def states(self, name: str) -> tuple[str, list[str]]:
        try:
            status = self.stub.GetConnectorStatus(
                pb.GetConnectorStatusRequest(name=name), timeout=CALL_TIMEOUT_S
            ).status
        except grpc.RpcError as exc:
            if isinstance(exc, grpc.Call) and exc.code() == grpc.StatusCode.NOT_FOUND:
                return "NOT_FOUND", []
            raise

        def named(state: int) -> str:
            return str(pb.InstanceState.Name(state)).removeprefix("INSTANCE_STATE_")

        return named(status.connector.state), [named(t.state) for t in status.tasks]


class RestTarget:
    """A Kafka Connect worker, over its REST API (one HTTP connection per call, as urllib)."""

    def __init__(self, worker: KafkaConnectDistributed) -> None:
        self.worker = worker

    def worker_id(self) -> str:
        # Kafka Connect names a worker by its advertised REST host and port
        return f"127.0.0.1:{self.worker.rest_port}"

    def connector_worker(self, name: str) -> str:
        status = self.worker.request("GET", f"/connectors/{name}/status")
        return str(status["connector"]["worker_id"])

    def create(self, name: str, config: Mapping[str, str], stopped: bool) -> None:
        body: dict[str, Any] = {"name": name, "config": dict(config)}
        if stopped:
            body["initial_state"] = "STOPPED"
        self.worker.request("POST", "/connectors", body, expect=(201,))

    def put_config(self, name: str, config: Mapping[str, str]) -> None:
        self.worker.request("PUT", f"/connectors/{name}/config", dict(config), expect=(200, 201))

    def alter_offsets(self, name: str, file: Path, position: int) -> None:
        body = {
            "offsets": [{"partition": {"filename": str(file)}, "offset": {"position": position}}]
        }
        self.worker.request("PATCH", f"/connectors/{name}/offsets", body)

    def reset_offsets(self, name: str) -> None:
        self.worker.request("DELETE", f"/connectors/{name}/offsets")

    def pause(self, name: str) -> None:
        self.worker.request("PUT", f"/connectors/{name}/pause", expect=(202,))

    def resume(self, name: str) -> None:
        self.worker.request("PUT", f"/connectors/{name}/resume", expect=(202,))

    def restart(self, name: str, include_tasks: bool = False) -> None:
        # with includeTasks Kafka Connect answers 202 and the plan (restartConnectorAndTasks)
        query = "?includeTasks=true" if include_tasks else ""
        self.worker.request(
            "POST", f"/connectors/{name}/restart{query}", expect=(200, 202, 204)
        )

    def stop(self, name: str) -> None:
        self.worker.request("PUT", f"/connectors/{name}/stop", expect=(204,))

    def delete(self, name: str) -> None:
        self.worker.request("DELETE", f"/connectors/{name}", expect=(204,))

    def states(self, name: str) -> tuple[str, list[str]]:
        try:
            status = self.worker.request("GET", f"/connectors/{name}/status")
        except KafkaConnectError as exc:
            if "HTTP 404" in str(exc):
                return "NOT_FOUND", []
            raise
        return status["connector"]["state"], [t["state"] for t in status.get("tasks", [])]


def wait_for_state(target: Target, name: str, state: str, tasks: int = 1) -> None:
    """Polls ``target``'s status of ``name`` until the connector and ``tasks`` tasks (all of
    its tasks) are in ``state``; raises on FAILED or after STATE_TIMEOUT_S."""
    deadline = time.perf_counter() + STATE_TIMEOUT_S
    while True:
        connector, task_states = target.states(name)
        if (
            connector == state
            and len(task_states) == tasks
            and all(task == state for task in task_states)
        ):
            return
        if "FAILED" in (connector, *task_states):
            raise RuntimeError(f"{name}: FAILED ({connector}, {task_states})")
        if time.perf_counter() > deadline:
            raise RuntimeError(
                f"{name}: not {state} after {STATE_TIMEOUT_S} s: {connector} {task_states}"
            )
        time.sleep(STATE_POLL_S)


def wait_until_stopped(target: Target, name: str) -> None:
    """Until the connector shows STOPPED with no task (so offsets may be changed)."""
    wait_for_state(target, name, "STOPPED", tasks=0)


Results = dict[str, Samples]


def cycle(
    target: Target,
    name: str,
    file: Path,
    results: Results,
    workers: Mapping[str, Target] | None = None,
) -> None:
    """One cycle of every timed write on ``target`` (see the module's docstring);
    ``workers``: every worker of the target's system by id, for the restart sent to the
    connector's own worker."""

    def timed(label: str, call: Callable[[], None]) -> float:
        started = time.perf_counter()
        call()
        results.setdefault(label, Samples()).seconds.append(time.perf_counter() - started)
        return started

    started = timed(
        "create STOPPED", lambda: target.create(name, source_config(file, 100), stopped=True)
    )
    wait_until_stopped(target, name)
    results.setdefault(CREATE_STOPPED, Samples()).seconds.append(time.perf_counter() - started)
    timed("put config", lambda: target.put_config(name, source_config(file, 200)))
    timed("alter offsets", lambda: target.alter_offsets(name, file, 0))
    timed("reset offsets", lambda: target.reset_offsets(name))
    started = timed("resume from stopped", lambda: target.resume(name))
    wait_for_state(target, name, "RUNNING")
    results.setdefault(RESUME_RUNNING, Samples()).seconds.append(time.perf_counter() - started)
    timed("pause", lambda: target.pause(name))
    wait_for_state(target, name, "PAUSED")
    timed("resume from paused", lambda: target.resume(name))
    wait_for_state(target, name, "RUNNING")
    runner = target.connector_worker(name)
    timed("restart", lambda: target.restart(name))
    restarted = results["restart"].seconds[-1]
    placed = RESTART_HERE if runner == target.worker_id() else RESTART_ELSEWHERE
    results.setdefault(placed, Samples()).seconds.append(restarted)
    wait_for_state(target, name, "RUNNING")
    own = (workers or {}).get(target.connector_worker(name))
    if own is not None:
        timed(RESTART_OWN, lambda: own.restart(name))
        wait_for_state(target, name, "RUNNING")
    timed("restart with tasks", lambda: target.restart(name, include_tasks=True))
    wait_for_state(target, name, "RUNNING")
    timed("stop", lambda: target.stop(name))
    wait_until_stopped(target, name)
    timed("delete", lambda: target.delete(name))
    running = f"{name}-r"
    started = timed(
        "create RUNNING (call)",
        lambda: target.create(running, source_config(file, 100), stopped=False),
    )
    wait_for_state(target, running, "RUNNING")
    results.setdefault(CREATE_RUNNING, Samples()).seconds.append(time.perf_counter() - started)
    timed("delete running", lambda: target.delete(running))


# --- Kafka Connect's cluster ---------------------------------------------------------------


class KafkaConnectCluster:
    def __init__(self, root: Path, bootstrap: str) -> None:
        group = f"kc-anchor-{uuid.uuid4().hex[:6]}"
        self.workers = [
            KafkaConnectDistributed(root / f"kc-{i}", bootstrap, group, die_with_parent=True)
            for i in range(WORKERS)
        ]

    def start(self) -> None:
        """Launches every worker at once, then waits for each; stops all if one fails."""
        try:
            for worker in self.workers:
                worker.launch()
            for worker in self.workers:
                self._wait_or_relaunch(worker)
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _wait_or_relaunch(worker: KafkaConnectDistributed) -> None:
        """Waits for the worker; launches it again when it died at once. Why: forked from
        this process, whose gRPC threads are running, a child has been seen to abort
        (SIGABRT, a gRPC poller error in its stdout) before it ran Java."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                worker.wait_ready(START_TIMEOUT_S)
                return
            except KafkaConnectError as exc:
                if attempt == START_ATTEMPTS or worker.running:
                    raise
                log(f"Kafka Connect worker {worker.rest_url} died starting ({exc}); again")
                worker.launch()

    def leader_and_follower(
        self, timeout: float = 120.0
    ) -> tuple[KafkaConnectDistributed, KafkaConnectDistributed]:
        """Once every worker logged the same leader URL: the leader and another worker."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            urls = {w.leader_url() for w in self.workers}
            if len(urls) == 1 and None not in urls:
                url = urls.pop()
                leader = next((w for w in self.workers if w.rest_url == url), None)
                if leader is not None:
                    return leader, next(w for w in self.workers if w is not leader)
            time.sleep(0.2)
        raise RuntimeError(f"Kafka Connect's workers did not agree on a leader: {urls}")

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()

    def log_tails(self) -> str:
        return "\n".join(w.log_tails()[-3000:] for w in self.workers)


# --- the floor: one bare transaction and its read-back -------------------------------------


class Floor:
    """A transactional producer and a read_committed consumer on a 1-partition topic."""

    def __init__(self, bootstrap: str) -> None:
        self.topic = f"bench-floor-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(self.topic, 1, 1)])[self.topic].result(30)
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": f"{self.topic}-tx", "linger.ms": 0}
        )
        self.producer.init_transactions(30)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{self.topic}-reader",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 5,
            }
        )
        self.consumer.assign([TopicPartition(self.topic, 0, 0)])
        self.commit = Samples()
        self.read_back = Samples()

    def sample(self) -> None:
        value = uuid.uuid4().bytes
        started = time.perf_counter()
        self.producer.begin_transaction()
        self.producer.produce(self.topic, value)
        self.producer.commit_transaction(30)
        committed = time.perf_counter()
        deadline = committed + 30
        while True:
            message = self.consumer.poll(1.0)
            if message is not None and message.error() is None and message.value() == value:
                break
            if time.perf_counter() > deadline:
                raise KafkaException(f"the floor's record was not read back from {self.topic}")
        self.commit.seconds.append(committed - started)
        self.read_back.seconds.append(time.perf_counter() - started)

    def close(self) -> None:
        self.consumer.close()


# --- the run --------------------------------------------------------------------------------


@dataclass
class AnchorRun:
    #: (system, role) -> label -> samples
    results: dict[tuple[str, str], Results]
    floor_commit: Samples
    floor_read_back: Samples
    echo: Samples
    relay: Samples
    rounds: int
    load_during: list[tuple[float, float, float]]


def run(
    root: Path,
    bootstrap: str,
    ours: tuple[pb_grpc.ConnectServiceStub, pb_grpc.ConnectServiceStub],
    echo: Callable[[], object],
    relay: Callable[[], object],
    rounds: int,
    ours_all: Sequence[pb_grpc.ConnectServiceStub] = (),
) -> AnchorRun:
    """Starts Kafka Connect's cluster, runs ``rounds`` rounds (one cycle on each target, the
    floor, the echo and relay calls), stops it. ``ours``: connect-grpc's leader and a
    follower; ``ours_all``: each of its workers (for the restart sent to the connector's
    own worker)."""
    import os

    file = root / "anchor-source.txt"
    file.write_text("", "utf-8")
    kc = KafkaConnectCluster(root / "kafka-connect", bootstrap)
    started = time.monotonic()
    kc.start()
    try:
        kc_leader, kc_follower = kc.leader_and_follower()
        log(
            f"Kafka Connect: {WORKERS} workers up in {time.monotonic() - started:.1f} s, "
            f"leader {kc_leader.rest_url}, follower {kc_follower.rest_url}"
        )
        targets: list[tuple[tuple[str, str], Target]] = [
            (("connect-grpc", "leader"), GrpcTarget(ours[0])),
            (("Kafka Connect", "leader"), RestTarget(kc_leader)),
            (("connect-grpc", "follower"), GrpcTarget(ours[1])),
            (("Kafka Connect", "follower"), RestTarget(kc_follower)),
        ]
        every: dict[str, list[Target]] = {
            "connect-grpc": [GrpcTarget(stub) for stub in ours_all],
            "Kafka Connect": [RestTarget(worker) for worker in kc.workers],
        }
        workers = {
            system: {worker.worker_id(): worker for worker in members}
            for system, members in every.items()
        }
        floor = Floor(bootstrap)
        results: dict[tuple[str, str], Results] = {key: {} for key, _ in targets}
        echo_samples, relay_samples = Samples(), Samples()
        load: list[tuple[float, float, float]] = []
        # one unrecorded round: first connections, JIT, topic creation
        for key, target in targets:
            cycle(target, f"anchor-warmup-{key[0][0].lower()}{key[1][0]}", file, {},
                  workers[key[0]])
        floor.sample()
        for index in range(rounds):
            shift = index % len(targets)
            for key, target in targets[shift:] + targets[:shift]:
                cycle(target, f"anchor-{index}-{key[0][0].lower()}{key[1][0]}", file, results[key],
                      workers[key[0]])
            for _ in range(FLOOR_PER_ROUND):
                floor.sample()
            for _ in range(ECHO_CALLS_PER_ROUND):
                pair = ((echo_samples, echo), (relay_samples, relay))
                for samples, call in pair if index % 2 else pair[::-1]:
                    begun = time.perf_counter()
                    call()
                    samples.seconds.append(time.perf_counter() - begun)
            load.append(os.getloadavg())
            log(f"round {index + 1}/{rounds} done (load {load[-1][0]:.2f})")
        floor.close()
        return AnchorRun(
            results, floor.commit, floor.read_back, echo_samples, relay_samples, rounds, load
        )
    except BaseException:
        log(kc.log_tails())
        raise
    finally:
        kc.stop()


def report(run: AnchorRun) -> str:
    ours_l, kc_l = run.results[("connect-grpc", "leader")], run.results[("Kafka Connect", "leader")]
    ours_f, kc_f = (
        run.results[("connect-grpc", "follower")],
        run.results[("Kafka Connect", "follower")],
    )
    floor = run.floor_read_back.p50_ms()
    hop = run.relay.p50_ms() - run.echo.p50_ms()
    loads = [load[0] for load in run.load_during]
    lines = [
        f"### Write path against Apache Kafka Connect's 3-worker cluster ({run.rounds} cycles "
        f"of each "
        f"target, interleaved; p50 in ms)",
        "",
        "| write | ours, leader | KC, leader | ratio | ours, follower | KC, follower | ratio "
        "| forwarding: ours | forwarding: KC | ours (leader) / floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label in (*WRITES, CREATE_STOPPED, RESUME_RUNNING, CREATE_RUNNING):
        a, b, c, d = (r[label].p50_ms() for r in (ours_l, kc_l, ours_f, kc_f))
        lines.append(
            f"| {label} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {c:.1f} | {d:.1f} | {c / d:.2f}x "
            f"| {c - a:+.1f} | {d - b:+.1f} | {a / floor:.1f}x |"
        )
    lines += ["", *restarts_by_placement(run), ""]
    lines += [
        f"Floor (one transactional produce + commit to a 1-partition topic, then its read-back by "
        f"a read_committed consumer; {len(run.floor_read_back.seconds)} samples): commit p50 "
        f"{run.floor_commit.p50_ms():.1f} ms, with the read-back p50 **{floor:.1f} ms** "
        f"(p90 {run.floor_read_back.p90_ms():.1f}).",
        f"Bare grpcio: echo p50 {run.echo.p50_ms():.2f} ms, through a relay server "
        f"{run.relay.p50_ms():.2f} ms: one bare relay hop **{hop:.2f} ms** "
        f"(goal: ours forwarded - direct <= 1.5x that = {1.5 * hop:.2f} ms).",
        f"Load average (1 min) at the end of each round: min {min(loads):.2f}, "
        f"median {statistics.median(loads):.2f}, max {max(loads):.2f}.",
    ]
    return "\n".join(lines) + "\n"


def restarts_by_placement(run: AnchorRun) -> list[str]:
    """The restarts of both roles, split by where the connector ran: p50 (count) each."""
    lines = [
        "Restarts by where the connector ran (both roles pooled; p50 in ms, count):",
        "",
        "| the connector ran on | ours | KC | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, where in (
        (RESTART_HERE, "the called worker"),
        (RESTART_ELSEWHERE, "another"),
        (RESTART_OWN, "the called worker, sent there on purpose"),
    ):
        pooled = {
            system: Samples([s for role in ROLES
                             for s in run.results[(system, role)].get(label, Samples()).seconds])
            for system in SYSTEMS
        }
        ours, kc = pooled["connect-grpc"], pooled["Kafka Connect"]
        if not ours.seconds or not kc.seconds:
            lines.append(f"| {where} | {_p50_count(ours)} | {_p50_count(kc)} | - |")
            continue
        ratio = ours.p50_ms() / kc.p50_ms()
        lines.append(f"| {where} | {_p50_count(ours)} | {_p50_count(kc)} | {ratio:.2f}x |")
    return lines


def _p50_count(samples: Samples) -> str:
    return f"{samples.p50_ms():.1f} ({len(samples.seconds)})" if samples.seconds else "- (0)"


# --- where a leader write's time goes -------------------------------------------------------

#: The leader's debug events that time the steps of one write (see ``LeaderWriter.write``, on
#: the herder's logger, and ``FencedWriter._transact``), and their fields.
STEP_EVENTS = {
    "config_transaction_timed": ("begin_ms", "produce_ms", "commit_ms"),
    "leader_write_timed": ("send_ms", "read_back_ms"),
}
STEP_LOGGERS = ("connect_grpc.cluster.fenced_writer", "connect_grpc.herder.distributed")


@dataclass
class Breakdown:
    writes: int
    client: Samples
    steps: dict[str, Samples]


def breakdown(
    stub: pb_grpc.ConnectServiceStub, log_path: Path, name: str, file: Path, writes: int
) -> Breakdown:
    """``writes`` PutConnectorConfig calls of the STOPPED connector ``name`` sent to the leader
    one after the other, timed by the client, with the leader's own timings of each step
    (its debug events, switched on for the run with SetLogLevel and off again)."""
    import json

    def set_level(level: str) -> None:
        for logger in STEP_LOGGERS:
            stub.SetLogLevel(
                pb.SetLogLevelRequest(name=logger, level=level, scope=pb.LOG_LEVEL_SCOPE_WORKER),
                timeout=CALL_TIMEOUT_S,
            )

    file.touch()
    target = GrpcTarget(stub)
    target.create(name, source_config(file, 1), stopped=True)
    start_of_run = log_path.stat().st_size
    client = Samples()
    set_level("DEBUG")
    try:
        for index in range(writes):
            started = time.perf_counter()
            target.put_config(name, source_config(file, 2 + index))
            client.seconds.append(time.perf_counter() - started)
    finally:
        set_level("INFO")
    target.delete(name)
    steps: dict[str, Samples] = {}
    with log_path.open("rb") as worker_log:
        worker_log.seek(start_of_run)
        for line in worker_log:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            for field_name in STEP_EVENTS.get(event.get("event"), ()):
                # a read-back is null when the leader answered on the acknowledgement
                waited_ms = event[field_name] or 0.0
                steps.setdefault(field_name, Samples()).seconds.append(waited_ms / 1000)
    return Breakdown(writes, client, steps)


def breakdown_report(result: Breakdown, floor: AnchorRun | None) -> str:
    lines = [
        f"### Where a leader write's time goes ({result.writes} PutConnectorConfig of a STOPPED "
        "connector sent to the leader one after another)",
        "",
        "| step | p50 (ms) | p90 (ms) | samples |",
        "|---|---:|---:|---:|",
        f"| client: the whole call | {result.client.p50_ms():.2f} | "
        f"{result.client.p90_ms():.2f} | {len(result.client.seconds)} |",
    ]
    for field_name in (
        *STEP_EVENTS["leader_write_timed"],
        *STEP_EVENTS["config_transaction_timed"],
    ):
        samples = result.steps.get(field_name)
        if samples is None:
            continue
        indent = "&nbsp;&nbsp;" if field_name in STEP_EVENTS["config_transaction_timed"] else ""
        lines.append(
            f"| {indent}{field_name.removesuffix('_ms')} | {samples.p50_ms():.2f} | "
            f"{samples.p90_ms():.2f} | {len(samples.seconds)} |"
        )
    send, read_back = result.steps.get("send_ms"), result.steps.get("read_back_ms")
    if send is not None and read_back is not None:
        rest = result.client.p50_ms() - send.p50_ms() - read_back.p50_ms()
        lines.append(
            f"| the rest (gRPC both ways, servicer, connector lock, validation, the answer): "
            f"client p50 - send p50 - read_back p50 | {rest:.2f} | | |"
        )
    if floor is not None:
        lines += [
            "",
            f"Floor of the same run: commit p50 {floor.floor_commit.p50_ms():.2f} ms, commit and "
            f"read_committed read-back p50 {floor.floor_read_back.p50_ms():.2f} ms.",
        ]
    return "\n".join(lines) + "\n"
