"""The auto-restart policy (``auto.restart.*``) over Java plugins, on a real distributed worker
process with a small Java plugin on ``plugin.path`` (compiled here with ``javac``), over real
gRPC, real Kafka and real Spark: a Java task that fails its first two starts (its starts kept
in a file, so they survive restarts) is restarted by the policy at its back-off, with the
count and the next attempt in the connector's status while it waits, and runs on its third
start; a Java connector whose ``start`` fails once is restarted too; and the worker stays live
and ready throughout. (The policy over Python plugins: test_auto_restart.)"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import FAILED, RUNNING, states
from tests.integration.java_builds import SOURCE_CONNECTOR, build_plugin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: The first call that needs the Java plugins waits for the scan of plugin.path.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120
FLAKY_SOURCE = "flaky.FlakySource"
#: The back-off's step: the second restart waits 2 steps after the second failure is seen.
STEP_MS = 700
SERVING = health_pb2.HealthCheckResponse.SERVING

_HEADER = """
package flaky;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
"""

#: A source whose connector fails its first ``connector.fail.times`` starts and whose task
#: fails its first ``task.fail.times`` starts; each start appends its time (ms) to the file
#: ``connector.starts.file`` or ``task.starts.file`` names, whose lines count the starts.
FLAKY_SOURCES = {
    "flaky/Starts.java": _HEADER + """
final class Starts {
  /** Records a start in {@code file}; fails it while there were at most {@code failing}. */
  static void record(Map<String, String> props, String file, String failing, String what) {
    Path path = Path.of(props.get(file));
    long count;
    try {
      Files.writeString(path, System.currentTimeMillis() + "\\n", StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      count = Files.readAllLines(path, StandardCharsets.UTF_8).size();
    } catch (java.io.IOException e) {
      throw new ConnectException(e);
    }
    if (count <= Long.parseLong(props.getOrDefault(failing, "0"))) {
      throw new ConnectException("the flaky " + what + "'s start " + count + " failed");
    }
  }
}
""",
    "flaky/FlakySource.java": _HEADER + """
public class FlakySource extends SourceConnector {
  private Map<String, String> props;
  public String version() { return "1.0"; }
  public ConfigDef config() {
    return new ConfigDef()
        .define("connector.starts.file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "")
        .define("connector.fail.times", ConfigDef.Type.INT, 0, ConfigDef.Importance.LOW, "")
        .define("task.starts.file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "")
        .define("task.fail.times", ConfigDef.Type.INT, 0, ConfigDef.Importance.LOW, "");
  }
  public void start(Map<String, String> props) {
    this.props = props;
    Starts.record(props, "connector.starts.file", "connector.fail.times", "connector");
  }
  public Class<? extends Task> taskClass() { return FlakyTask.class; }
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    return List.of(new HashMap<>(props));
  }
  public void stop() { }
}
""",
    "flaky/FlakyTask.java": _HEADER + """
public class FlakyTask extends SourceTask {
  public String version() { return "1.0"; }
  public void start(Map<String, String> props) {
    Starts.record(props, "task.starts.file", "task.fail.times", "task");
  }
  public List<SourceRecord> poll() throws InterruptedException {
    Thread.sleep(100);
    return null;
  }
  public void stop() { }
}
""",
}


def build_plugins(work: Path, plugins: Path) -> None:
    """Compiles ``FLAKY_SOURCES`` under ``work`` into the plugin directory ``plugins/flaky``
    (of :mod:`java_worker`'s worker)."""
    build_plugin(work / "flaky-build", plugins / "flaky", FLAKY_SOURCES,
                 {SOURCE_CONNECTOR: [FLAKY_SOURCE]})


@pytest.fixture(scope="module")
def process(shared_java_worker: WorkerProcess) -> WorkerProcess:
    """The session's worker of :mod:`java_worker` (this module's plugin is among its own)."""
    return shared_java_worker


class _HealthSampler:
    """Samples the worker's liveness and readiness checks until stopped, keeping every
    answer that was not SERVING (or no answer)."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._health = health_pb2_grpc.HealthStub(channel)
        self._stop = threading.Event()
        self.samples = 0
        self.bad: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _HealthSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            for service in ("connect.v1.live", "connect.v1.ready"):
                try:
                    reply = self._health.Check(
                        health_pb2.HealthCheckRequest(service=service), timeout=5)
                    if reply.status != SERVING:
                        self.bad.append(f"{service}: {reply.status}")
                except grpc.RpcError as error:
                    self.bad.append(f"{service}: {error.code()}")
            self.samples += 1
            self._stop.wait(0.2)


def _status(process: WorkerProcess, name: str) -> pb.ConnectorStatus:
    status: pb.ConnectorStatus = process.stub.GetConnectorStatus(
        pb.GetConnectorStatusRequest(name=name), timeout=30).status
    return status


def _waiting(process: WorkerProcess, name: str, count: int) -> pb.ConnectorStatus | None:
    """The status once the policy has made ``count`` restarts and waits for the next."""
    status = _status(process, name)
    progress = status.auto_restart
    return status if progress.count == count and progress.HasField("next_attempt_time") \
        else None


def _starts(path: Path) -> list[float]:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [int(line) / 1000 for line in text.splitlines()]


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": FLAKY_SOURCE, "tasks.max": "1",
        "connector.starts.file": str(tmp_path / "connector-starts"),
        "task.starts.file": str(tmp_path / "task-starts"),
        "auto.restart.enabled": "true", "auto.restart.backoff.min.ms": str(STEP_MS),
        "auto.restart.backoff.max.ms": str(2 * STEP_MS),
        # long enough that the count is still shown once the instance runs
        "auto.restart.reset.after.ms": "600000",
        **extra,
    }


def _create(process: WorkerProcess, name: str, config: dict[str, str]) -> None:
    process.stub.CreateConnector(pb.CreateConnectorRequest(name=name, config=config),
                                 timeout=CALL_TIMEOUT_S)


def _wait_running(process: WorkerProcess, name: str) -> None:
    try:
        wait_until(lambda: states(process.stub, name) == (RUNNING, [RUNNING]),
                   timeout=STATE_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name} not running: {_status(process, name)}") from None


def test_a_java_task_failing_its_first_starts_is_restarted_by_the_policy(
    process: WorkerProcess, tmp_path: Path
) -> None:
    name = f"java-flaky-task-{uuid.uuid4().hex[:6]}"
    assert process.channel is not None
    with _HealthSampler(process.channel) as health:
        _create(process, name, _config(tmp_path, **{"task.fail.times": "2"}))
        # the first failure is restarted at once, the second waits two steps: the status
        # shows that wait, with the count so far
        try:
            waiting = wait_until(lambda: _waiting(process, name, 1), timeout=STATE_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"no wait seen: {_status(process, name)}") from None
        assert waiting is not None and not waiting.auto_restart.gave_up
        # what the policy waits to restart: the Java task, failed with its Java cause
        assert waiting.connector.state == RUNNING
        [task] = waiting.tasks
        assert task.state == FAILED
        assert "the flaky task's start 2 failed" in task.trace.partition("\n")[0]
        _wait_running(process, name)
        starts = _starts(tmp_path / "task-starts")
        assert len(starts) == 3  # two failed starts, two automatic restarts
        assert len(_starts(tmp_path / "connector-starts")) == 1  # only the failed task
        # the second restart waited its back-off (2 steps) after the second failure
        assert starts[2] - starts[1] >= 2 * STEP_MS / 1000 * 0.9
        assert abs(waiting.auto_restart.next_attempt_time.ToMilliseconds() / 1000
                   - (starts[1] + 2 * STEP_MS / 1000)) < 2.0
        progress = _status(process, name).auto_restart
        assert progress.count == 2 and not progress.gave_up
        assert progress.HasField("last_restart_time")
        assert not progress.HasField("next_attempt_time")
        assert abs(progress.last_restart_time.ToMilliseconds() / 1000 - starts[-1]) < 5
        process.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)
    assert health.samples > 0 and health.bad == []


def test_a_java_connector_failing_its_first_start_is_restarted_by_the_policy(
    process: WorkerProcess, tmp_path: Path
) -> None:
    name = f"java-flaky-connector-{uuid.uuid4().hex[:6]}"
    assert process.channel is not None
    with _HealthSampler(process.channel) as health:
        _create(process, name, _config(tmp_path, **{"connector.fail.times": "1"}))
        _wait_running(process, name)
        assert len(_starts(tmp_path / "connector-starts")) == 2
        status = _status(process, name)
        assert status.auto_restart.count == 1 and not status.auto_restart.gave_up
        assert not status.auto_restart.HasField("next_attempt_time")
        # the task started once, for the connector that ran
        assert len(_starts(tmp_path / "task-starts")) == 1
        process.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)
    assert health.samples > 0 and health.bad == []
