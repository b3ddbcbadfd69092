"""Kafka Connect's Java connectors on a real distributed worker, over gRPC: the connector
instance lives in the worker's Spark driver JVM (Kafka's ``Plugins`` makes it, in its plugin's
class loader) and every connector-level RPC drives it as it drives a Python one.

``plugin.path`` holds the plugin directories ``make install`` fetched (Kafka's connect-file
4.3.1 and Debezium PostgreSQL) and a small plugin this module compiles (``tinyit.*``), for what
Kafka's FileStream connector cannot show: a connector that fails in ``start``, one that reads
its offsets through its context's ``offsetStorageReader()``, raises an error and asks for a
reconfiguration from a thread of its own, and one that generates more task configs than
``tasks.max`` (KIP-1004). Java tasks run in JVM hosts (their own tests are
``test_java_tasks``): here only the FileStream source's lines are checked to reach Kafka.
The worker is the one the Java modules share (:mod:`java_worker`), with their plugins too."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.jvm_build import jvm_target
from connect_grpc.java.plugin_jars import CONNECT_FILE
from connect_grpc.kernel.domain import (
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    State,
    TargetState,
)
from connect_grpc.kernel.errors import ConnectError, InvalidArgumentError
from connect_grpc.pipeline.preview_model import Outcome, SampleRecord
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import read_all

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SOURCE_TASK = "org.apache.kafka.connect.file.FileStreamSourceTask"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: The first call that needs the Java plugins waits for the scan of plugin.path in the
#: driver's JVM; the client retries the UNAVAILABLE of a call outliving its deadline.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 90

TINY_SOURCES = {
    "tinyit/FailingSource.java": """
package tinyit;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceConnector;
public class FailingSource extends SourceConnector {
  public String version() { return "0.0.1"; }
  public ConfigDef config() { return new ConfigDef(); }
  public void start(Map<String, String> props) {
    throw new ConnectException("cannot open the tiny source", new IOException("tiny disk gone"));
  }
  public Class<? extends Task> taskClass() { return WatchingTask.class; }
  public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
  public void stop() { }
}
""",
    "tinyit/WatchingSource.java": """
package tinyit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceConnector;
/** Reads its offset in start; "generate" task configs; "raise" or "reconfigure" later. */
public class WatchingSource extends SourceConnector {
  private volatile Map<String, String> props;
  private volatile String seen = "none";
  private volatile int generation = 1;
  private volatile Thread later;
  public String version() { return "0.0.2"; }
  public ConfigDef config() {
    return new ConfigDef().define("watch", ConfigDef.Type.STRING, "w", ConfigDef.Importance.LOW, "")
        .define("generate", ConfigDef.Type.INT, 1, ConfigDef.Importance.LOW, "")
        .define("raise", ConfigDef.Type.STRING, null, ConfigDef.Importance.LOW, "")
        .define("reconfigure", ConfigDef.Type.BOOLEAN, false, ConfigDef.Importance.LOW, "");
  }
  public void start(Map<String, String> props) {
    this.props = new HashMap<>(props);
    Map<String, Object> offset = context().offsetStorageReader()
        .offset(Map.of("file", props.getOrDefault("watch", "w")));
    seen = String.valueOf(offset);
    if (props.containsKey("raise") || props.containsKey("reconfigure")) {
      later = new Thread(() -> {
        try { Thread.sleep(500); } catch (InterruptedException e) { return; }
        if (props.containsKey("raise")) {
          context().raiseError(new ConnectException(props.get("raise")));
        } else {
          generation = 2;
          context().requestTaskReconfiguration();
        }
      });
      later.setDaemon(true);
      later.start();
    }
  }
  public Class<? extends Task> taskClass() { return WatchingTask.class; }
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    List<Map<String, String>> configs = new ArrayList<>();
    int count = Integer.parseInt(props.getOrDefault("generate", "1"));
    for (int i = 0; i < count; i++) {
      configs.add(Map.of("seen", seen, "generation", String.valueOf(generation)));
    }
    return configs;
  }
  public void stop() { if (later != null) { later.interrupt(); } }
}
""",
    "tinyit/WatchingTask.java": """
package tinyit;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
public class WatchingTask extends SourceTask {
  public String version() { return "0.0.2"; }
  public void start(Map<String, String> props) { }
  public List<SourceRecord> poll() throws InterruptedException { Thread.sleep(100); return null; }
  public void stop() { }
}
""",
}


def build_plugins(work: Path, plugins: Path) -> None:
    """Compiles ``TINY_SOURCES`` against Kafka's Connect API under ``work`` and lays them out
    as a plugin directory (a jar with its ServiceLoader manifest) in the directory of plugins
    ``plugins`` (of :mod:`java_worker`'s worker)."""
    sources, classes = work / "src", work / "classes"
    for name, text in TINY_SOURCES.items():
        (sources / name).parent.mkdir(parents=True, exist_ok=True)
        (sources / name).write_text(text, encoding="utf-8")
    lib = jvm_target() / "lib"
    classpath = ":".join(str(next(lib.glob(f"{prefix}-*.jar")))
                         for prefix in ("connect-api", "kafka-clients"))
    subprocess.run(
        ["javac", "--release", "17", "-nowarn", "-cp", classpath, "-d", str(classes),
         *(str(sources / name) for name in TINY_SOURCES)],
        check=True, capture_output=True, timeout=120,
    )
    services = classes / "META-INF" / "services"
    services.mkdir(parents=True)
    (services / "org.apache.kafka.connect.source.SourceConnector").write_text(
        "tinyit.FailingSource\ntinyit.WatchingSource\n", encoding="utf-8"
    )
    (plugins / "tiny-it").mkdir(parents=True)
    subprocess.run(["jar", "cf", str(plugins / "tiny-it" / "tiny-it.jar"), "-C", str(classes), "."],
                   check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def process(shared_java_worker: WorkerProcess) -> WorkerProcess:
    """The session's worker of :mod:`java_worker` (this module's plugin is among its own)."""
    return shared_java_worker


@pytest.fixture(scope="module")
def worker(process: WorkerProcess) -> Iterator[ConnectClient]:
    with ConnectClient(process.address, timeout=CALL_TIMEOUT_S, retry_unavailable=True) as client:
        yield client


@pytest.fixture
def name() -> str:
    return f"java-{uuid.uuid4().hex[:8]}"


def _file_source(path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "file": str(path),
            "topic": f"java-lines-{uuid.uuid4().hex[:8]}", "tasks.max": "1", **extra}


def _connector_state(
    client: ConnectClient, name: str, state: State, timeout: float = STATE_TIMEOUT_S
) -> ConnectorStatus:
    def reached() -> ConnectorStatus | None:
        status = client.get_connector_status(name)
        return status if status.connector.state is state else None

    try:
        return wait_until(reached, timeout=timeout)
    except TimeoutError:
        raise AssertionError(
            f"{name} not {state.name}: {client.get_connector_status(name)}"
        ) from None


def _task_configs(client: ConnectClient, name: str, count: int) -> list[dict[str, str]]:
    def stored() -> list[dict[str, str]] | None:
        tasks = client.list_tasks(name)
        return [dict(t.config) for t in tasks] if len(tasks) == count else None

    return wait_until(stored, timeout=STATE_TIMEOUT_S)


def test_kafkas_filestream_source_runs_and_follows_every_connector_rpc(
    worker: ConnectClient, kafka_bootstrap: str, name: str, tmp_path: Path
) -> None:
    lines = [f"line {i}" for i in range(5)]
    (tmp_path / "in.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    config = _file_source(tmp_path / "in.txt", **{"value.converter": STRING_CONVERTER,
                                                  "key.converter": STRING_CONVERTER})
    created = worker.create_connector(name, config)
    assert created.info.type is ConnectorType.SOURCE
    status = _connector_state(worker, name, State.RUNNING)
    assert status.type is ConnectorType.SOURCE
    assert status.connector.version == CONNECT_FILE.version == "4.3.1"
    [task_config] = _task_configs(worker, name, 1)
    # Kafka's worker's task configs: the connector's own, with the task class added
    assert task_config == {**worker.get_connector_config(name), "task.class": FILE_SOURCE_TASK}
    assert len(worker.get_connector(name).tasks) == 1
    # its task (a Java task in a JVM host) moves the file's lines into the topic
    wait_until(lambda: [m.value().decode() for m in read_all(kafka_bootstrap, config["topic"])]
               == lines, timeout=STATE_TIMEOUT_S)

    worker.pause_connector(name)
    _connector_state(worker, name, State.PAUSED)
    worker.resume_connector(name)
    _connector_state(worker, name, State.RUNNING)
    worker.restart_connector(name)
    assert _connector_state(worker, name, State.RUNNING).connector.version == "4.3.1"
    worker.stop_connector(name)
    _connector_state(worker, name, State.STOPPED)
    wait_until(lambda: worker.list_tasks(name) == [], timeout=STATE_TIMEOUT_S)
    worker.resume_connector(name)
    _connector_state(worker, name, State.RUNNING)
    _task_configs(worker, name, 1)
    worker.delete_connector(name)
    assert name not in [c.name for c in worker.list_connectors()]


def test_a_java_connector_created_stopped_or_paused_waits_in_that_state(
    worker: ConnectClient, name: str, tmp_path: Path
) -> None:
    stopped, paused = f"{name}-stopped", f"{name}-paused"
    worker.create_connector(stopped, _file_source(tmp_path / "a.txt"), TargetState.STOPPED)
    worker.create_connector(paused, _file_source(tmp_path / "b.txt"), TargetState.PAUSED)
    assert _connector_state(worker, stopped, State.STOPPED).connector.version == "4.3.1"
    assert worker.list_tasks(stopped) == []
    _connector_state(worker, paused, State.PAUSED)
    worker.resume_connector(paused)
    _connector_state(worker, paused, State.RUNNING)
    _task_configs(worker, paused, 1)
    for each in (stopped, paused):
        worker.delete_connector(each)


def test_offsets_of_a_stopped_java_connector_go_through_its_alter_offsets(
    worker: ConnectClient, name: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "offsets.txt")
    partition = {"filename": path}
    worker.create_connector(name, _file_source(tmp_path / "offsets.txt"), TargetState.STOPPED,
                            initial_offsets=[ConnectorOffset(partition, {"position": 3})])
    _connector_state(worker, name, State.STOPPED)
    assert worker.get_offsets(name) == [ConnectorOffset(partition, {"position": 3})]
    # FileStreamSourceConnector.alterOffsets accepts a position and answers true
    altered = worker.alter_offsets(name, [ConnectorOffset(partition, {"position": 7})])
    assert altered.message == "The offsets for this connector have been altered successfully"
    assert worker.get_offsets(name) == [ConnectorOffset(partition, {"position": 7})]
    # ...and refuses an offset without one, or a negative one, with its own message
    with pytest.raises(InvalidArgumentError, match="contain the key 'position'"):
        worker.alter_offsets(name, [ConnectorOffset(partition, {"pos": 1})])
    with pytest.raises(InvalidArgumentError, match="should be a non-negative value"):
        worker.alter_offsets(name, [ConnectorOffset(partition, {"position": -1})])
    assert worker.get_offsets(name) == [ConnectorOffset(partition, {"position": 7})]
    reset = worker.reset_offsets(name)
    assert reset == "The offsets for this connector have been reset successfully"
    assert worker.get_offsets(name) == []
    # initial offsets it refuses create nothing
    with pytest.raises(InvalidArgumentError, match="contain the key 'position'"):
        worker.create_connector(f"{name}-bad", _file_source(tmp_path / "x.txt"),
                                TargetState.STOPPED,
                                initial_offsets=[ConnectorOffset(partition, {"pos": 1})])
    assert f"{name}-bad" not in [c.name for c in worker.list_connectors()]
    worker.delete_connector(name)


def test_a_java_connector_that_fails_in_start_shows_the_java_root_cause_first(
    worker: ConnectClient, name: str
) -> None:
    worker.create_connector(name, {"connector.class": "tinyit.FailingSource"})
    status = _connector_state(worker, name, State.FAILED)
    trace = status.connector.trace
    assert trace.splitlines()[0] == "java.io.IOException: tiny disk gone", trace
    assert "org.apache.kafka.connect.errors.ConnectException: cannot open the tiny source" in trace
    assert "at tinyit.FailingSource.start(FailingSource.java" in trace
    with pytest.raises(ConnectError, match="Failed to start connector"):
        worker.restart_connector(name)  # a plain restart waits for the start, which fails
    assert _connector_state(worker, name, State.FAILED).connector.trace.startswith(
        "java.io.IOException: tiny disk gone")
    worker.delete_connector(name)


def test_a_java_connector_reads_its_offsets_and_its_context_reaches_the_worker(
    worker: ConnectClient, name: str
) -> None:
    partition = {"file": "w"}
    change = worker.create_connector(
        name, {"connector.class": "WatchingSource", "watch": "w"}, TargetState.STOPPED,
        initial_offsets=[ConnectorOffset(partition, {"n": 5})],
    )
    assert change.info.name == name
    # the connector does not override alterOffsets: Kafka's framework-only answer
    worker.resume_connector(name)
    _connector_state(worker, name, State.RUNNING)
    # its offsetStorageReader() read the worker's offsets topic (Kafka's reader, in the JVM)
    assert _task_configs(worker, name, 1)[0]["seen"] == "{n=5}"
    # ...and a connector's own offsets.storage.topic before the worker's
    own = f"{name}-own"
    worker.create_connector(
        own, {"connector.class": "WatchingSource", "watch": "w",
              "offsets.storage.topic": f"{own}-offsets"},
        TargetState.STOPPED, initial_offsets=[ConnectorOffset(partition, {"n": 6})],
    )
    worker.resume_connector(own)
    _connector_state(worker, own, State.RUNNING)
    assert _task_configs(worker, own, 1)[0]["seen"] == "{n=6}"

    reconfigured = f"{name}-reconf"
    worker.create_connector(reconfigured, {"connector.class": "tinyit.WatchingSource",
                                           "reconfigure": "true"})
    wait_until(lambda: [t.config.get("generation") for t in worker.list_tasks(reconfigured)]
               == ["2"], timeout=STATE_TIMEOUT_S)

    raising = f"{name}-raise"
    worker.create_connector(raising, {"connector.class": "tinyit.WatchingSource",
                                      "raise": "the watched thing is gone"})
    trace = _connector_state(worker, raising, State.FAILED).connector.trace
    assert trace.splitlines()[0] == (
        "org.apache.kafka.connect.errors.ConnectException: the watched thing is gone")
    for each in (name, own, reconfigured, raising):
        worker.delete_connector(each)


def _java_warnings(process: WorkerProcess, connector: str, text: str) -> set[int]:
    """The tasks of ``connector`` whose Java lines in the worker's log hold ``text``."""
    tasks: set[int] = set()
    for line in process.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{") or text not in line:
            continue
        event = json.loads(line)
        if (event.get("event") == "java_log" and event.get("connector") == connector
                and text in event.get("message", "") and "task" in event):
            tasks.add(int(event["task"]))
    return tasks


def test_task_configs_beyond_tasks_max_are_refused_as_kafka_refuses_them(
    worker: ConnectClient, process: WorkerProcess, name: str
) -> None:
    config = {"connector.class": "tinyit.WatchingSource", "generate": "3", "tasks.max": "2"}
    worker.create_connector(name, config)
    trace = _connector_state(worker, name, State.FAILED).connector.trace
    assert trace.splitlines()[0].startswith(
        f"org.apache.kafka.connect.runtime.TooManyTasksException: The connector {name} has "
        f"generated 3 tasks, which is greater than 2"), trace
    assert worker.list_tasks(name) == []
    lenient = f"{name}-lenient"
    worker.create_connector(lenient, {**config, "tasks.max.enforce": "false"})
    _connector_state(worker, lenient, State.RUNNING)
    assert len(_task_configs(worker, lenient, 3)) == 3
    # Kafka's worker checks each task's start against the connector's generation, all 3
    # tasks of it: each warns (not only those whose number is past tasks.max)
    too_many = f"The connector {lenient} has generated 3 tasks, which is greater than 2"
    wait_until(lambda: _java_warnings(process, lenient, too_many) == {0, 1, 2},
               timeout=STATE_TIMEOUT_S)
    for each in (name, lenient):
        worker.delete_connector(each)


def test_preview_pipeline_of_a_java_connector_runs_kafkas_pipeline(
    worker: ConnectClient, tmp_path: Path
) -> None:
    # test_java_preview has the stages; here, that the worker that runs the connector's
    # tasks previews it (with its StringConverters, as its tasks have them)
    config = {"name": "previewed", **_file_source(tmp_path / "p.txt")}
    preview = worker.preview_pipeline(config=config, samples=[SampleRecord(value='"a line"')])
    (record,) = preview.records
    assert record.outcome is Outcome.DELIVERED
    assert record.output is not None and record.output.value == b"a line"
