"""The distributed worker with Kafka Connect's Java plugins and exactly-once source support
(``exactly.once.source.support=enabled``) that ``test_java_exactly_once_validation`` and
``test_mirror_maker`` share (``tests/integration/conftest.py``'s ``java_eos_worker``), rather
than start one each (a start is mostly Spark's): the fetched plugins (connect-file,
connect-mirror) and a small plugin compiled here for what they do not show: a connector
that declares nothing about exactly-once (Kafka's default: null), one that defines its own
transaction boundaries, and one whose declaration throws."""

from __future__ import annotations

from pathlib import Path

from connect_grpc.testing.cluster import WorkerProcess
from tests.integration.java_builds import SOURCE_CONNECTOR, build_plugin, java_worker

_TASK = """
package eosit;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
public class IdleTask extends SourceTask {
  public String version() { return "1.0"; }
  public void start(Map<String, String> props) { }
  public List<SourceRecord> poll() throws InterruptedException { Thread.sleep(100); return null; }
  public void stop() { }
}
"""


def _connector(name: str, body: str) -> str:
    return f"""
package eosit;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
public class {name} extends SourceConnector {{
  public String version() {{ return "1.0"; }}
  public ConfigDef config() {{
    return new ConfigDef()
        .define("explode", ConfigDef.Type.STRING, null, ConfigDef.Importance.LOW, "");
  }}
  public void start(Map<String, String> props) {{ }}
  public Class<? extends Task> taskClass() {{ return IdleTask.class; }}
  public List<Map<String, String>> taskConfigs(int maxTasks) {{ return List.of(Map.of()); }}
  public void stop() {{ }}
{body}
}}
"""


SOURCES = {
    "eosit/IdleTask.java": _TASK,
    # declares nothing: SourceConnector.exactlyOnceSupport answers null
    "eosit/UndeclaredSource.java": _connector("UndeclaredSource", ""),
    "eosit/BoundingSource.java": _connector("BoundingSource", """
  public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
    if (props.containsKey("explode")) {
      throw new ConnectException("cannot tell without " + props.get("explode"));
    }
    return ExactlyOnceSupport.SUPPORTED;
  }
  public ConnectorTransactionBoundaries canDefineTransactionBoundaries(Map<String, String> props) {
    return ConnectorTransactionBoundaries.SUPPORTED;
  }
"""),
}


def make_worker(work: Path, bootstrap: str) -> WorkerProcess:
    """The worker (not started), its plugin compiled under ``work``."""
    plugins = work / "plugins"
    build_plugin(work / "build", plugins / "eos-it", SOURCES,
                 {SOURCE_CONNECTOR: ["eosit.UndeclaredSource", "eosit.BoundingSource"]})
    return java_worker(work, bootstrap, "java-eos", [plugins], {
        "exactly.once.source.support": "enabled",
        "offset.flush.interval.ms": "1000",  # test_mirror_maker's, 60 s by default
    })
