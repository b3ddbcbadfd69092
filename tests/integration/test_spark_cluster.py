"""Distributed workers on a real Spark standalone cluster (issue 8, item 10).

A Spark master and one Spark worker (2 cores, 1g) are started from pyspark's own
distribution; two ``connect-grpc distributed`` workers join it with
``spark.master=spark://…``. Each worker is its own Spark application; a SequenceSource with
two tasks (one per worker) writes to a topic, and each task is hosted in a Python worker of
the executor the Spark worker launched for that worker's application (a task that started
before its executor registered with the driver runs on the driver until then, and is moved
into a host once the executor's slot is there).

Each task's status names its executor (Spark's id) and host; once an executor is killed
(kill -9), its task's status stops naming it from the first status its worker reports after
(not placed, until a new executor hosts it, which then names the new one), and every record
is still there. Then a FileStreamSink whose directory does not exist, hosted on an executor,
fails with a status whose first line names the directory and the ``file`` key.

A Java task on the same cluster: a worker whose ``plugin.path`` holds Kafka's ``connect-file``
jars runs Kafka's FileStreamSource, its task hosted in its executor's JVM by Kafka's worker,
with the plugins the worker shipped to the executor (``spark.archives``): the worker's
``plugin.path`` is relative to its own working directory, which the executor (working in its
own Spark work directory) does not share, so the path it was given leads nowhere there. The
executor's JVM host the worker launched ahead of its first Java task built that Kafka worker
before the task came (``WarmWorker``, decision 0133), and the task's start built none.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import CONNECT_FILE, ensure_plugins
from connect_grpc.java.shipped_plugins import shipped_name
from connect_grpc.kernel.domain import PlacementKind, State
from connect_grpc.testing.cluster import WorkerProcess, cluster_properties, wait_until
from connect_grpc.testing.spark_cluster import SparkStandaloneCluster
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import (
    RUNNING,
    create,
    create_topic,
    logged_events,
    python_workers_under,
    read_all,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

RECORDS = 1000
#: What two applications sharing a 2-core, 1g Spark worker need: by default an application
#: takes every free core (spark.deploy.defaultCores is unlimited) and executors have 1g,
#: so the second application would get no executor at all.
EXECUTOR_PROPERTIES = {
    "spark.cores.max": "1",
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
}
#: What the executor's stderr (Spark's default log4j profile, INFO) says for each Python task.
PYTHON_TASK_LINE = "PythonRunner: Starting Python task execution"


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandaloneCluster]:
    with SparkStandaloneCluster(tmp_path_factory.mktemp("spark"), cores=2, memory="1g") as cluster:
        yield cluster


def _app_name(worker: WorkerProcess) -> str:
    return f"connect-grpc-worker-{worker.port}"


def _apps_with_executors(
    spark: SparkStandaloneCluster, workers: list[WorkerProcess]
) -> dict[str, str] | None:
    """App name → app id once every worker's application runs with one core granted."""
    apps = {app["name"]: app for app in spark.master_state()["activeapps"]}
    wanted = {_app_name(w) for w in workers}
    if set(apps) != wanted:
        return None
    if any(apps[name]["state"] != "RUNNING" or apps[name]["cores"] != 1 for name in wanted):
        return None
    return {name: str(apps[name]["id"]) for name in wanted}


def _settled(worker: WorkerProcess, count: int) -> pb.GetClusterInfoResponse | None:
    info = worker.stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5)
    return info if len(info.workers) == count and info.leader_id else None


def _python_tasks_ran(spark: SparkStandaloneCluster, app_id: str) -> bool:
    return any(
        PYTHON_TASK_LINE in (path / "stderr").read_text("utf-8", errors="replace")
        for path in spark.executor_dirs(app_id)
    )


def _executor_jvms(app_id: str) -> list[int]:
    """The executor JVMs (CoarseGrainedExecutorBackend) running for the application."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue  # exited meanwhile
        if any(w.endswith("CoarseGrainedExecutorBackend") for w in words) and app_id in words:
            found.append(int(entry))
    return found


def _host_pids(worker: WorkerProcess, connector: str) -> list[int]:
    """The pids of the hosts the worker's tasks of ``connector`` connected from (its log's
    ``task_host_connected`` events)."""
    pids = []
    for line in worker.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"task_host_connected"' in line:
            event = json.loads(line)
            if event.get("connector") == connector:
                pids.append(int(event["pid"]))
    return pids


def _executor_of(spark: SparkStandaloneCluster, app_id: str) -> str | None:
    """The id of the application's running executor on the Spark worker (one per app)."""
    ids = [str(e["id"]) for e in spark.worker_state()["executors"] if e["appid"] == app_id]
    return ids[0] if len(ids) == 1 else None


def _task_status(stub: Any, name: str, task: int) -> pb.TaskStatus:
    answer: pb.GetTaskStatusResponse = stub.GetTaskStatus(
        pb.GetTaskStatusRequest(name=name, task_id=task), timeout=5
    )
    return answer.task


def _failed(stub: Any, name: str, task: int) -> pb.TaskStatus | None:
    status = _task_status(stub, name, task)
    return status if status.state == pb.INSTANCE_STATE_FAILED else None


def _hosted_on(status: pb.TaskStatus) -> str | None:
    """``executor <id> on <host>`` when the status places the task on an executor."""
    placed = status.HasField("placement") and (
        status.placement.kind == pb.TaskPlacement.KIND_SPARK_EXECUTOR
    )
    return status.placement.host if placed else None


def _completed_apps(spark: SparkStandaloneCluster) -> set[str]:
    """The ids of the completed applications once none is active (empty until then)."""
    state = spark.master_state()
    if state["activeapps"]:
        return set()
    return {str(app["id"]) for app in state["completedapps"]}


def test_two_workers_share_a_spark_standalone_cluster(
    spark_cluster: SparkStandaloneCluster,
    kafka_bootstrap: str,
    kafka_admin: Any,
    unique_topic: str,
    tmp_path: Path,
) -> None:
    properties = {
        **cluster_properties(f"spark-cluster-{uuid.uuid4().hex[:8]}"),
        "spark.master": spark_cluster.master_url,
        **EXECUTOR_PROPERTIES,
    }
    workers = [
        WorkerProcess(tmp_path / f"worker-{i}", kafka_bootstrap, properties, mode="distributed")
        for i in range(2)
    ]
    try:
        # one after the other: workers of a new cluster that start at the same instant race
        # to create its internal topics (the loser may exit: UNKNOWN_TOPIC_OR_PART)
        for worker in workers:
            worker.start(timeout=120)

        # two Spark applications, each with an executor (1 of the Spark worker's 2 cores)
        found = wait_until(lambda: _apps_with_executors(spark_cluster, workers), timeout=60)
        assert found is not None
        apps: dict[str, str] = found
        assert spark_cluster.master_state()["coresused"] == 2
        executors = spark_cluster.worker_state()["executors"]
        assert sorted(e["appid"] for e in executors) == sorted(apps.values())

        stub = workers[0].stub
        wait_until(lambda: _settled(workers[0], 2), timeout=90)
        create_topic(kafka_admin, unique_topic)
        name = f"sequence-{uuid.uuid4().hex[:6]}"
        create(stub, name, {
            "connector.class": "SequenceSource",
            "tasks.max": "2",
            "topic": unique_topic,
            "sequence.count": str(RECORDS),
        })
        wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING], timeout=90)
        info = stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5)
        owners = {w.id: [t.task for t in w.tasks if t.connector == name] for w in info.workers}
        assert sorted(map(len, owners.values())) == [1, 1], owners

        def values() -> list[str]:
            return [m.value().decode() for m in read_all(kafka_bootstrap, unique_topic)]

        wait_until(lambda: len(values()) >= RECORDS, timeout=90, interval=1)
        assert set(values()) == {str(i) for i in range(RECORDS)}

        # each worker's task is hosted by a Python worker of its application's executor
        for worker in workers:
            app_id = apps[_app_name(worker)]
            try:
                pids = wait_until(lambda w=worker: _host_pids(w, name), timeout=60)  # type: ignore[misc]
            except TimeoutError:
                raise AssertionError(f"{_app_name(worker)}: its task was never hosted\n"
                                     f"{worker.logs()}") from None
            [jvm] = _executor_jvms(app_id)
            assert pids[-1] in python_workers_under(jvm), (pids, app_id)

        # each worker's batches ran as Python tasks on its application's executor
        for app_name, app_id in apps.items():
            assert spark_cluster.executor_dirs(app_id), f"{app_name}: no executor directory"
            try:
                wait_until(functools.partial(_python_tasks_ran, spark_cluster, app_id), timeout=30)
            except TimeoutError:
                raise AssertionError(f"{app_name}: no Python task ran on its executor") from None

        # each task's status names its application's executor and the executor's host
        by_id = {_app_name(w).removeprefix("connect-grpc-"): w for w in workers}
        task_app = {t: apps[_app_name(by_id[w])] for w, ts in owners.items() for t in ts}
        for task, app_id in task_app.items():
            executor = _executor_of(spark_cluster, app_id)
            assert executor is not None, spark_cluster.worker_state()
            where = wait_until(lambda t=task: _hosted_on(_task_status(stub, name, t)),  # type: ignore[misc]
                               timeout=60)
            assert where == f"executor {executor} on {socket.gethostname()}", (task, where)

        # kill -9 of task 0's executor: from the first status after it, the task is not
        # placed on that executor any more, until a new executor hosts it
        app_id = task_app[0]
        dead = f"executor {_executor_of(spark_cluster, app_id)} on {socket.gethostname()}"
        [jvm] = _executor_jvms(app_id)
        before = _task_status(stub, name, 0)
        assert _hosted_on(before) == dead
        os.kill(jvm, signal.SIGKILL)
        seen: list[pb.TaskStatus] = []

        def rehosted() -> bool:
            status = _task_status(stub, name, 0)
            if status.revision != (seen[-1] if seen else before).revision:
                seen.append(status)
            where = _hosted_on(status)
            return where is not None and where != dead and status.state == RUNNING

        wait_until(rehosted, timeout=120)
        assert seen, "no status after the kill"
        assert all(_hosted_on(status) != dead for status in seen), seen
        assert not seen[0].HasField("placement"), seen[0]  # not placed while re-hosted
        assert set(values()) == {str(i) for i in range(RECORDS)}

        # a sink whose directory does not exist, hosted on an executor: FAILED, saying so
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)
        missing = tmp_path / "no-such-dir"
        sink = f"sink-{uuid.uuid4().hex[:6]}"
        create(stub, sink, {
            "connector.class": "FileStreamSink",
            "tasks.max": "1",
            "topics": unique_topic,
            "file": str(missing / "out.txt"),
        })
        failed = wait_until(lambda: _failed(stub, sink, 0), timeout=120)
        assert failed is not None
        first_line = failed.trace.splitlines()[0]
        assert f"directory {missing} does not exist" in first_line, failed.trace
        assert f"{missing / 'out.txt'} (the 'file' key)" in first_line, failed.trace
        assert "in the Spark task hosting the task" in failed.trace, failed.trace  # executor
        assert not missing.exists()

        for worker in workers:
            assert worker.stop() == 0, worker.logs()
        completed = wait_until(lambda: _completed_apps(spark_cluster), timeout=60)
        assert set(apps.values()) <= completed
    finally:
        for worker in workers:
            worker.stop()


FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: What the JVM host logs when it points Kafka's plugin.path at the shipped copies.
SHIPPED_LINE = "are the copies its worker shipped: plugin.path"
#: The first call that needs the Java plugins waits for the driver's scan of plugin.path.
JAVA_CALL_TIMEOUT_S = 240
#: What a JVM logs once it built the Kafka worker of a connect-grpc worker.
BUILT_LINE = "Started Kafka Connect's worker for connect-grpc worker"



def _open_files(pid: int) -> list[str]:
    """What the process's file descriptors point at (its JVM keeps the jars it loads from
    open)."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue  # closed meanwhile
    return found


def test_a_java_task_runs_on_an_executor_with_the_plugins_its_worker_shipped(
    spark_cluster: SparkStandaloneCluster,
    kafka_bootstrap: str,
    kafka_admin: Any,
    unique_topic: str,
    tmp_path: Path,
) -> None:
    work = tmp_path / "worker"
    # the worker's plugin.path: a directory of its working directory holding connect-file
    plugins = work / "plugins"
    shutil.copytree(ensure_plugins() / CONNECT_FILE.name, plugins / CONNECT_FILE.name)
    properties = {
        **cluster_properties(f"spark-cluster-java-{uuid.uuid4().hex[:8]}"),
        "spark.master": spark_cluster.master_url,
        **EXECUTOR_PROPERTIES,
        "plugin.path": "plugins",
        "plugin.discovery": "service_load",
        "value.converter": STRING_CONVERTER,
    }
    worker = WorkerProcess(work, kafka_bootstrap, properties, mode="distributed", cwd=work)
    try:
        worker.start(timeout=120)
        found = wait_until(lambda: _apps_with_executors(spark_cluster, [worker]), timeout=60)
        assert found is not None
        app_id = found[_app_name(worker)]
        create_topic(kafka_admin, unique_topic)
        # the host launched ahead in the application's executor was told to build the Kafka
        # worker of the worker's Java tasks, and built it, before any Java task exists
        warmed = wait_until(lambda: logged_events(worker, "jvm_host_worker_warmed"), timeout=120)
        executor_id = _executor_of(spark_cluster, app_id)
        assert [(e["executor"], e["built"]) for e in warmed] == [(executor_id, True)], warmed
        assert not logged_events(worker, "task_host_connected"), "no Java task ran before"
        # written once the task runs on the executor (a task that started before its
        # executor registered runs in the driver's JVM until then): its lines are the
        # executor's to read
        source = tmp_path / "in.txt"
        source.touch()
        lines = [f"line {i}" for i in range(RECORDS)]
        name = f"java-source-{uuid.uuid4().hex[:6]}"
        with ConnectClient(worker.address, timeout=JAVA_CALL_TIMEOUT_S,
                           retry_unavailable=True) as client:
            client.create_connector(name, {"connector.class": FILE_SOURCE, "tasks.max": "1",
                                           "file": str(source), "topic": unique_topic})

            def running() -> Any:
                tasks = client.get_connector_status(name).tasks
                if not tasks or tasks[0].status.state is not State.RUNNING:
                    return None
                placement = tasks[0].status.placement
                if placement is None or placement.kind is not PlacementKind.SPARK_EXECUTOR:
                    return None
                return tasks[0].status

            try:
                status = wait_until(running, timeout=180)
            except TimeoutError:
                raise AssertionError(f"{name}'s task not RUNNING on an executor: "
                                     f"{client.get_connector_status(name)}\n"
                                     f"{worker.logs()}") from None
            # in the JVM of the application's executor, with connect-file's version
            executor = _executor_of(spark_cluster, app_id)
            assert executor is not None, spark_cluster.worker_state()
            assert status.placement.kind is PlacementKind.SPARK_EXECUTOR
            assert status.placement.host == f"executor {executor} on {socket.gethostname()}"
            assert status.version == CONNECT_FILE.version

            # the lines reach Kafka, each once
            source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

            def values() -> list[str]:
                return [m.value().decode() for m in read_all(kafka_bootstrap, unique_topic)]

            wait_until(lambda: len(values()) >= RECORDS, timeout=90, interval=1)
            assert values() == lines

            # the worker's plugin.path leads nowhere in the executor's working directory; the
            # copy the worker shipped is there, and the executor's JVM loaded its jars from it
            [executor_dir] = spark_cluster.executor_dirs(app_id)
            assert not (executor_dir / "plugins").exists()
            shipped = executor_dir / shipped_name("plugins")
            assert sorted(p.name for p in (shipped / CONNECT_FILE.name).iterdir()) == sorted(
                p.name for p in (plugins / CONNECT_FILE.name).iterdir()
            )
            [jvm] = _executor_jvms(app_id)
            opened = [f for f in _open_files(jvm) if f.endswith(".jar")]
            assert any(f.startswith(f"{shipped}/{CONNECT_FILE.name}/") for f in opened), opened
            assert not any(f.startswith(str(plugins)) for f in opened), opened
            # and its host said so: in the executor's log (or the worker's, where Java
            # plugins' log lines are brought)
            said = [
                line for path in (executor_dir / "stderr", worker.log_path)
                for line in path.read_text("utf-8", errors="replace").splitlines()
                if SHIPPED_LINE in line
            ]
            assert said and f"plugin.path {shipped} (the worker's: plugins)" in said[0], said
            # the first Java task adopted that host and ran on the Kafka worker built ahead:
            # its start built none (a build on a task's start is relayed to the worker's log,
            # the one ahead, with no task, stays in the executor's)
            [connected] = [e for e in logged_events(worker, "task_host_connected")
                           if e.get("connector") == name]
            assert connected["adopted"] is True, connected
            built = [line for line in (executor_dir / "stderr").read_text(
                "utf-8", errors="replace").splitlines() if BUILT_LINE in line]
            assert len(built) == 1, built
            relayed = [e for e in logged_events(worker, "java_log")
                       if e.get("executor") == executor_id and BUILT_LINE in e.get("message", "")]
            assert relayed == [], relayed

            client.delete_connector(name)
        assert worker.stop() == 0, worker.logs()
    finally:
        worker.stop()
