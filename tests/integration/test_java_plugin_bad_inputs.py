"""Java plugins that cannot load, and plugins whose dependencies conflict, on a real
distributed worker over gRPC, beside the plugins ``make install`` fetched (Kafka's
connect-file and connect-mirror, Debezium PostgreSQL).

``plugin.path`` also holds plugin directories this module builds:

- ``truncated``: a connector's jar cut in half. Kafka's loader reads nothing from it and says
  nothing; the worker says which jar it cannot read, once, as it starts.
- ``needs-helper``: a connector whose class needs a library its plugin does not bundle.
  Kafka's scan logs the plugin's location and the missing class (a ``java_log`` event).
- ``lang-old`` and ``lang-new``: a connector each, bundling two versions of Apache Commons
  Lang (3.8.1 and 3.12.0, from Maven Central; Spark's own 3.20.0 is on the JVM's class path).
  Kafka's class-loader isolation gives each its own, in the connector (the driver's JVM) and
  in its task (a JVM host).

In every case the worker starts, lists its other plugins and runs them, and creating a
connector of a class that did not load is refused on ``connector.class``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.domain import ConnectorType, State
from connect_grpc.kernel.errors import ConnectError, FailedPreconditionError, InvalidArgumentError
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import create_topic, produce, read_all
from tests.integration.java_builds import (
    SINK_CONNECTOR,
    SOURCE_CONNECTOR,
    build_plugin,
    maven_jar,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: The first call that needs the Java plugins waits for the scan of plugin.path.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
LANG_VERSIONS = {"isoold": "3.8.1", "isonew": "3.12.0"}

_HEADER = """
package {package};
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
"""

_IDLE_CONNECTOR = _HEADER + """
public class {name} extends SourceConnector {{
  {body}
  public String version() {{ return "1.0"; }}
  public ConfigDef config() {{ return new ConfigDef(); }}
  public void start(Map<String, String> props) {{ }}
  public Class<? extends Task> taskClass() {{ return null; }}
  public List<Map<String, String>> taskConfigs(int maxTasks) {{ return List.of(); }}
  public void stop() {{ }}
}}
"""

#: Names the jar its Commons Lang classes were loaded from, in the connector (its version
#: and its task config) and in its task (the one record it writes).
_LANG_CONNECTOR = _HEADER + """
public class LangSource extends SourceConnector {{
  private Map<String, String> props;
  static String seen() {{
    java.security.CodeSource source =
        org.apache.commons.lang3.StringUtils.class.getProtectionDomain().getCodeSource();
    String where = source == null ? "nowhere" : source.getLocation().getPath();
    return org.apache.commons.lang3.StringUtils.substringAfterLast(where, "/");
  }}
  public String version() {{ return seen(); }}
  public ConfigDef config() {{
    return new ConfigDef().define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "");
  }}
  public void start(Map<String, String> props) {{ this.props = props; }}
  public Class<? extends Task> taskClass() {{ return LangTask.class; }}
  public List<Map<String, String>> taskConfigs(int maxTasks) {{
    return List.of(Map.of("topic", props.get("topic"), "connector.saw", seen()));
  }}
  public void stop() {{ }}
}}
"""

_LANG_TASK = _HEADER + """
public class LangTask extends SourceTask {{
  private Map<String, String> props;
  private boolean sent;
  public String version() {{ return LangSource.seen(); }}
  public void start(Map<String, String> props) {{ this.props = props; }}
  public List<SourceRecord> poll() throws InterruptedException {{
    if (sent) {{ Thread.sleep(200); return null; }}
    sent = true;
    String value = "connector=" + props.get("connector.saw") + " task=" + LangSource.seen();
    return List.of(new SourceRecord(Map.of("p", "lang"), Map.of("o", 1), props.get("topic"),
        null, Schema.STRING_SCHEMA, value));
  }}
  public void stop() {{ }}
}}
"""


#: A source whose task fails in ``poll`` ("trouble=poll") or blocks there past any stop,
#: deaf to interrupts, for a minute ("trouble=block", writing the file ``marker`` names as it
#: begins); a sink whose task fails in ``put``.
TROUBLE_SOURCES = {
    "failit/TroubleSource.java": _HEADER.format(package="failit") + """
import java.util.HashMap;
public class TroubleSource extends SourceConnector {
  private Map<String, String> props;
  public String version() { return "1.0"; }
  public ConfigDef config() {
    return new ConfigDef()
        .define("trouble", ConfigDef.Type.STRING, "", ConfigDef.Importance.LOW, "")
        .define("marker", ConfigDef.Type.STRING, null, ConfigDef.Importance.LOW, "");
  }
  public void start(Map<String, String> props) { this.props = props; }
  public Class<? extends Task> taskClass() { return TroubleTask.class; }
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    return List.of(new HashMap<>(props));
  }
  public void stop() { }
}
""",
    "failit/TroubleTask.java": _HEADER.format(package="failit") + """
import org.apache.kafka.connect.errors.ConnectException;
public class TroubleTask extends SourceTask {
  private String trouble;
  private String marker;
  public String version() { return "1.0"; }
  public void start(Map<String, String> props) {
    trouble = props.getOrDefault("trouble", "");
    marker = props.get("marker");
  }
  public List<SourceRecord> poll() throws InterruptedException {
    if (trouble.equals("poll")) {
      throw new ConnectException("the tiny source's poll broke",
          new java.io.IOException("tiny pipe burst"));
    }
    if (trouble.equals("block")) {
      try {
        java.nio.file.Files.writeString(java.nio.file.Path.of(marker), "blocking");
      } catch (java.io.IOException e) {
        throw new ConnectException(e);
      }
      long until = System.currentTimeMillis() + 60_000;
      while (System.currentTimeMillis() < until) {
        try {
          Thread.sleep(Math.max(1, until - System.currentTimeMillis()));
        } catch (InterruptedException deaf) {
          // a stuck call that ignores interrupts
        }
      }
    }
    Thread.sleep(100);
    return null;
  }
  public void stop() { }
}
""",
    "failit/TroubleSink.java": """
package failit;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;
public class TroubleSink extends SinkConnector {
  private Map<String, String> props;
  public String version() { return "1.0"; }
  public ConfigDef config() { return new ConfigDef(); }
  public void start(Map<String, String> props) { this.props = props; }
  public Class<? extends Task> taskClass() { return TroubleSinkTask.class; }
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    return List.of(new HashMap<>(props));
  }
  public void stop() { }
}
""",
    "failit/TroubleSinkTask.java": """
package failit;
import java.util.Collection;
import java.util.Map;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
public class TroubleSinkTask extends SinkTask {
  public String version() { return "1.0"; }
  public void start(Map<String, String> props) { }
  public void put(Collection<SinkRecord> records) {
    if (!records.isEmpty()) {
      throw new ConnectException("the tiny sink's put broke on " + records.size() + " record(s)");
    }
  }
  public void stop() { }
}
""",
}


def build_plugins(work: Path, plugins: Path) -> None:
    """Builds this module's plugins under ``work`` into the directory of plugins ``plugins``
    (of :mod:`java_worker`'s worker), the library and the whole jar they leave out beside."""
    build_plugin(work / "trouble-build", plugins / "trouble", TROUBLE_SOURCES, {
        SOURCE_CONNECTOR: ["failit.TroubleSource"], SINK_CONNECTOR: ["failit.TroubleSink"]})
    # a library the needs-helper plugin is compiled against and then not given
    helper = build_plugin(work / "helper-build", work / "not-shipped" / "helper", {
        "needit/Helper.java":
            "package needit; public class Helper { public static String hi() { return \"hi\"; } }",
    }, {})
    build_plugin(work / "needs-helper-build", plugins / "needs-helper", {
        "badit/NeedsHelperSource.java": _IDLE_CONNECTOR.format(
            package="badit", name="NeedsHelperSource",
            body="private static final String GREETING = needit.Helper.hi();"),
    }, {SOURCE_CONNECTOR: ["badit.NeedsHelperSource"]}, [helper / "helper.jar"])
    (plugins / "needs-helper" / "helper.jar").unlink()
    cut = build_plugin(work / "cut-build", work / "whole" / "truncated", {
        "cutit/CutSource.java": _IDLE_CONNECTOR.format(package="cutit", name="CutSource",
                                                       body=""),
    }, {SOURCE_CONNECTOR: ["cutit.CutSource"]})
    whole = (cut / "truncated.jar").read_bytes()
    (plugins / "truncated").mkdir(parents=True)
    (plugins / "truncated" / "truncated.jar").write_bytes(whole[: len(whole) // 2])
    for package, version in LANG_VERSIONS.items():
        lang = maven_jar("org.apache.commons", "commons-lang3", version)
        build_plugin(work / f"{package}-build", plugins / f"lang-{package}", {
            f"{package}/LangSource.java": _LANG_CONNECTOR.format(package=package),
            f"{package}/LangTask.java": _LANG_TASK.format(package=package),
        }, {SOURCE_CONNECTOR: [f"{package}.LangSource"]}, [lang])


@pytest.fixture(scope="module")
def process(shared_java_worker: WorkerProcess) -> WorkerProcess:
    """The session's worker of :mod:`java_worker` (this module's plugins are among its own,
    its task.shutdown.graceful.timeout.ms is :data:`java_worker.GRACEFUL_MS`)."""
    return shared_java_worker


@pytest.fixture(scope="module")
def worker(process: WorkerProcess) -> Iterator[ConnectClient]:
    with ConnectClient(process.address, timeout=CALL_TIMEOUT_S, retry_unavailable=True) as client:
        yield client


@pytest.fixture
def name() -> str:
    return f"bad-{uuid.uuid4().hex[:8]}"


def _events(process: WorkerProcess) -> list[dict[str, Any]]:
    text = process.log_path.read_text(encoding="utf-8", errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _connector_classes(worker: ConnectClient) -> set[str]:
    return {plugin.class_name for plugin in worker.list_plugins()}


def _refused_on_connector_class(worker: ConnectClient, name: str, java_class: str) -> str:
    with pytest.raises((InvalidArgumentError, FailedPreconditionError)) as refused:
        worker.create_connector(name, {"connector.class": java_class, "tasks.max": "1"})
    error = refused.value
    assert isinstance(error, ConnectError)
    fields = [getattr(v, "field", None) or getattr(v, "subject", None)
              for v in getattr(error, "violations", [])]
    assert "config.connector.class" in fields, (error.message, fields)
    assert java_class in error.message
    assert name not in [c.name for c in worker.list_connectors()]
    return error.message


def _others_listed_and_running(worker: ConnectClient, name: str, tmp_path: Path) -> None:
    """The worker's other plugins are listed, and Kafka's FileStream source runs."""
    classes = _connector_classes(worker)
    assert {FILE_SOURCE, "isoold.LangSource", "isonew.LangSource"} <= classes
    assert "io.debezium.connector.postgresql.PostgresConnector" in classes
    (tmp_path / "in.txt").write_text("a line\n", encoding="utf-8")
    worker.create_connector(f"{name}-file", {
        "connector.class": FILE_SOURCE, "file": str(tmp_path / "in.txt"), "tasks.max": "1",
        "topic": f"bad-lines-{uuid.uuid4().hex[:8]}", "value.converter": STRING_CONVERTER})
    try:
        wait_until(lambda: worker.get_connector_status(f"{name}-file").connector.state
                   is State.RUNNING, timeout=STATE_TIMEOUT_S)
    finally:
        worker.delete_connector(f"{name}-file")


def test_a_jar_that_cannot_be_read_is_one_clear_line_and_harms_nothing(
    worker: ConnectClient, process: WorkerProcess, name: str, tmp_path: Path
) -> None:
    _others_listed_and_running(worker, name, tmp_path)
    unreadable = [e for e in _events(process) if e.get("event") == "java_plugin_jar_unreadable"]
    assert [e["jar"] for e in unreadable] == [
        str(process.work_dir.parent / "plugins" / "truncated" / "truncated.jar")], unreadable
    assert unreadable[0]["level"] == "error"
    assert "cutit.CutSource" not in _connector_classes(worker)
    _refused_on_connector_class(worker, name, "cutit.CutSource")


def test_a_plugin_missing_a_dependency_is_logged_with_its_class_and_harms_nothing(
    worker: ConnectClient, process: WorkerProcess, name: str, tmp_path: Path
) -> None:
    _others_listed_and_running(worker, name, tmp_path)

    def scan_errors() -> list[dict[str, Any]]:
        return [e for e in _events(process) if e.get("event") == "java_log"
                and e.get("level") == "error" and "needs-helper" in e.get("message", "")]

    # one line per scan of plugin.path (one per JVM that scans it)
    for line in wait_until(scan_errors, timeout=STATE_TIMEOUT_S):
        assert "dependency which is missing" in line["message"], line
        assert "badit.NeedsHelperSource" in line["exception"], line
        assert "needit/Helper" in line["exception"], line
    assert "badit.NeedsHelperSource" not in _connector_classes(worker)
    _refused_on_connector_class(worker, name, "badit.NeedsHelperSource")


def test_two_plugins_bundling_different_versions_of_a_library_each_see_their_own(
    worker: ConnectClient, kafka_bootstrap: str, name: str
) -> None:
    names = {package: f"{name}-{package}" for package in LANG_VERSIONS}
    topics = {package: f"lang-{package}-{uuid.uuid4().hex[:8]}" for package in LANG_VERSIONS}
    for package in LANG_VERSIONS:
        created = worker.create_connector(names[package], {
            "connector.class": f"{package}.LangSource", "topic": topics[package],
            "tasks.max": "1", "value.converter": STRING_CONVERTER})
        assert created.info.type is ConnectorType.SOURCE
    try:
        for package, version in LANG_VERSIONS.items():
            jar = f"commons-lang3-{version}.jar"

            def running(package: str = package) -> bool:
                status = worker.get_connector_status(names[package])
                return status.connector.state is State.RUNNING and [
                    t.status.state for t in status.tasks] == [State.RUNNING]

            wait_until(running, timeout=STATE_TIMEOUT_S)
            status = worker.get_connector_status(names[package])
            # the connector, in the driver's JVM, and its task, in a JVM host, side by side
            assert status.connector.version == jar
            assert [t.status.version for t in status.tasks] == [jar]

            def values(package: str = package) -> list[str]:
                return [m.value().decode() for m in read_all(kafka_bootstrap, topics[package])]

            # (a task hosted again may write its record again: at least once)
            assert set(wait_until(values, timeout=STATE_TIMEOUT_S)) == {
                f"connector={jar} task={jar}"}
    finally:
        for each in names.values():
            worker.delete_connector(each)


def test_an_unknown_connector_class_is_refused_on_a_worker_with_java_plugins(
    worker: ConnectClient, name: str
) -> None:
    _refused_on_connector_class(worker, name, "com.example.NoSuchConnector")


def _task_status(worker: ConnectClient, name: str, state: State) -> Any:
    def reached() -> Any:
        tasks = worker.get_connector_status(name).tasks
        return tasks[0].status if tasks and tasks[0].status.state is state else None

    return wait_until(reached, timeout=STATE_TIMEOUT_S)


def test_a_java_task_that_throws_in_poll_fails_with_its_root_cause_first(
    worker: ConnectClient, name: str
) -> None:
    worker.create_connector(name, {"connector.class": "failit.TroubleSource", "trouble": "poll",
                                   "tasks.max": "1"})
    try:
        trace = _task_status(worker, name, State.FAILED).trace
        # a Java task's failure, then its root cause; the Java stack trace follows
        assert trace.splitlines()[0] == (
            "the tiny source's poll broke: java.io.IOException: tiny pipe burst"), trace
        assert "org.apache.kafka.connect.errors.ConnectException: the tiny source's poll" in trace
        assert "at failit.TroubleTask.poll(TroubleTask.java" in trace
        # only the task failed
        assert worker.get_connector_status(name).connector.state is State.RUNNING
    finally:
        worker.delete_connector(name)


def test_a_java_task_that_throws_in_put_fails_with_its_root_cause_first(
    worker: ConnectClient, kafka_bootstrap: str, name: str, unique_topic: str
) -> None:
    create_topic(AdminClient({"bootstrap.servers": kafka_bootstrap}), unique_topic)
    produce(kafka_bootstrap, unique_topic, ["a record"])
    worker.create_connector(name, {"connector.class": "failit.TroubleSink", "tasks.max": "1",
                                   "topics": unique_topic})
    try:
        trace = _task_status(worker, name, State.FAILED).trace
        # Kafka's worker's failure, then the task's exception, its root cause
        assert trace.splitlines()[0] == (
            "Exiting WorkerSinkTask due to unrecoverable exception.: "
            "org.apache.kafka.connect.errors.ConnectException: the tiny sink's put broke on "
            "1 record(s)"), trace
        assert "at failit.TroubleSinkTask.put(TroubleSinkTask.java" in trace
        assert worker.get_connector_status(name).connector.state is State.RUNNING
    finally:
        worker.delete_connector(name)


def test_a_java_task_blocked_in_poll_is_given_up_after_the_graceful_timeout(
    worker: ConnectClient, process: WorkerProcess, name: str, tmp_path: Path
) -> None:
    marker = tmp_path / "blocking"
    worker.create_connector(name, {"connector.class": "failit.TroubleSource",
                                   "trouble": "block", "marker": str(marker), "tasks.max": "1"})
    try:
        _task_status(worker, name, State.RUNNING)
        wait_until(marker.exists, timeout=STATE_TIMEOUT_S)  # its poll blocks, deaf to interrupts
        worker.stop_connector(name)
        wait_until(lambda: worker.get_connector_status(name).connector.state is State.STOPPED
                   and not worker.list_tasks(name), timeout=STATE_TIMEOUT_S)
        # Kafka's worker waited task.shutdown.graceful.timeout.ms, then cancelled the task

        def given_up() -> list[dict[str, Any]]:
            return [e for e in _events(process) if e.get("event") == "java_log"
                    and f"Graceful stop of task {name}-0 failed" in e.get("message", "")]

        wait_until(given_up, timeout=STATE_TIMEOUT_S)
        # the stuck thread harms nothing else: the connector runs again, and so do others
        worker.resume_connector(name)
        _task_status(worker, name, State.RUNNING)
        _others_listed_and_running(worker, name, tmp_path)
    finally:
        worker.delete_connector(name)
