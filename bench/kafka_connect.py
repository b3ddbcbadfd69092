"""The real Apache Kafka Connect (standalone), started from Maven Central jars: a benchmark anchor.

Library (import as ``bench.kafka_connect`` from the repository root)
--------------------------------------------------------------------
``ensure_connect_libs(version: str = KAFKA_VERSION, cache: Path | None = None) -> Path``
    Fetches ``org.apache.kafka:connect-runtime``, ``connect-json`` and ``connect-file`` of
    ``version`` with their runtime dependencies (plus a log4j2 binding for slf4j) through
    ``mvn`` into ``<cache_root()>/kafka-connect/<version>/libs``, once, the way
    ``connect_grpc.kafka.jars.ensure_kafka_libs`` fetches the broker; returns that dir.
    Where Maven Central does not serve ``connect-file`` of ``version``, the FileStream
    connectors are an older release's, installed as a plugin instead (see
    :data:`CONNECT_FILE_FALLBACK` and :func:`plugin_path`).
``connect_file_version(version: str = KAFKA_VERSION) -> str``
    The ``connect-file`` release used beside Kafka Connect ``version`` (4.3.1 beside 4.4.0).
``plugin_path(libs: Path) -> Path | None``
    The ``plugins`` directory beside ``libs``, when the fetch made one: every worker started
    from ``libs`` gets it as its ``plugin.path``.
``KafkaConnectStandalone(work_dir, bootstrap_servers, *, libs_dir=None, rest_port=0,
heap_opts=DEFAULT_HEAP_OPTS, offset_flush_interval_ms=None, worker_overrides=None,
log_level="INFO", die_with_parent=False)``
    One ``org.apache.kafka.connect.cli.ConnectStandalone`` JVM, started with no connectors
    (``.start()`` waits until ``GET /connectors`` answers 200), in its own process group
    (``.stop()`` sends SIGTERM to the group, SIGKILL after a timeout). Its files live in
    ``work_dir``: ``worker.properties``, ``connect.offsets``, ``log4j2.properties``,
    ``logs/connect.log`` (Connect's log4j2 output) and ``logs/stdout.log``. REST calls
    (urllib only): ``connectors()``, ``create_connector()``, ``delete_connector()``,
    ``connector_status()``. Memory: ``rss_bytes()`` (the JVM and all its descendants, from
    ``/proc``) and ``peak_rss_bytes()`` (the JVM's ``VmHWM``).
``KafkaConnectDistributed(work_dir, bootstrap_servers, group_id, **options)``
    One ``ConnectDistributed`` worker of the cluster ``group_id`` (its config, offsets and
    status topics named after the group), with the same options, files and methods;
    ``launch()`` then ``wait_ready()`` start several at once, ``leader_url()`` reads the
    leader's REST URL from its log and ``request()`` makes any REST call
    (``bench/cluster_anchor.py``).
``file_stream_source_config(file, topic, *, batch_size=None)`` /
``file_stream_sink_config(file, topics)``
    Connector configurations of Kafka Connect's own FileStreamSourceConnector (``file``,
    ``topic``, ``batch.size``: Connect's default of 2000 unless given) and
    FileStreamSinkConnector (``file``, ``topics``).

The benchmark that uses it is ``bench/filestream.py``; ``measure_source`` and
``measure_sink`` drive any worker that has the ``Runner`` methods.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog

from connect_grpc.kafka.jars import (
    KAFKA_VERSION,
    LOG4J_VERSION,
    MAVEN_DEPENDENCY_PLUGIN,
    cache_root,
    fetch_maven_libs,
)
from connect_grpc.kafka.ports import free_port
from connect_grpc.kafka.processes import (
    KafkaBrokerError,
    spawn_process_group,
    stop_process_group,
)
from connect_grpc.kafka.processes import java_executable as _java
from connect_grpc.kafka.processes import output_tail as _tail
from connect_grpc.kafka.processes import read_log as _read
from connect_grpc.runtime.partition_ends import partition_ends

log = structlog.get_logger(__name__)

#: Put on the worker's classpath at the Kafka Connect version itself.
CONNECT_ARTIFACTS = ("connect-runtime", "connect-json")
#: The FileStream connectors' artifact: on the classpath too when served at that version.
CONNECT_FILE_ARTIFACT = "connect-file"
#: Kafka releases whose ``connect-file`` Maven Central refuses, and the newest release of it
#: that it serves. Such an older ``connect-file`` cannot go on a 4.4 classpath: its
#: connectors' ``version()`` calls ``org.apache.kafka.common.utils.AppInfoParser``, which
#: kafka-clients 4.4 moved to ``...common.utils.internals`` (NoClassDefFoundError, HTTP 500 on
#: create). So it is installed the way Kafka Connect runs a plugin built for an older Kafka:
#: in a ``plugin.path`` directory of its own with the kafka-clients jar of its release, whose
#: classes the plugin's loader finds only where the runtime (asked first) has none.
CONNECT_FILE_FALLBACK = {"4.4.0": "4.3.1"}
#: The ``plugin.path`` directory beside ``libs``, and the FileStream plugin's directory in it.
PLUGINS_DIR = "plugins"
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"
CONNECT_DISTRIBUTED_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
#: How a distributed worker logs its assignment after a rebalance (``leaderUrl='...'``).
_LEADER_URL = re.compile(r"leaderUrl='([^']+)'")
FILE_SOURCE_CLASS = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK_CLASS = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: What ``bin/connect-standalone.sh`` sets when ``KAFKA_HEAP_OPTS`` is unset.
DEFAULT_HEAP_OPTS = ("-Xms256M", "-Xmx2G")
#: What ``bin/kafka-run-class.sh`` sets when ``KAFKA_JVM_PERFORMANCE_OPTS`` is unset.
JVM_PERFORMANCE_OPTS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
START_TIMEOUT_S = 120.0
REST_TIMEOUT_S = 10.0

_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by bench/kafka_connect.py: resolves Apache Kafka Connect's runtime jars. Used only
     as: mvn -B -q -f pom.xml {plugin}:copy-dependencies
             -DincludeScope=runtime -DoutputDirectory=<libs> -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.connect-grpc</groupId>
  <artifactId>kafka-connect-libs</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>

  <dependencies>
{kafka_dependencies}
    <!-- As for the broker (connect_grpc/kafka/pom.xml): Kafka logs through slf4j 1.7 and ships
         log4j2 in its binary distribution, but its poms bring no binding between the two. -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j_version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>{log4j_version}</version>
    </dependency>
  </dependencies>
</project>
"""

_PLUGIN_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by bench/kafka_connect.py: resolves the FileStream connectors of an older Kafka
     release as a Kafka Connect plugin. Used only as: mvn -B -q -f pom.xml
     {plugin}:copy-dependencies -DincludeScope=runtime -DoutputDirectory=<libs> -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.connect-grpc</groupId>
  <artifactId>kafka-connect-file-plugin</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>

  <dependencies>
{dependencies}
  </dependencies>
</project>
"""

_LOG4J2 = """\
# log4j2 configuration of a Kafka Connect worker started by bench/kafka_connect.py.
# Everything goes to ${{sys:kafka.logs.dir}}/connect.log, never to the console.
status = warn
name = bench-kafka-connect
shutdownHook = disable

appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = ${{sys:kafka.logs.dir}}/connect.log
appender.file.filePattern = ${{sys:kafka.logs.dir}}/connect.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %X{{connector.context}}%m (%c:%L)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3

rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file

logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


class KafkaConnectError(RuntimeError):
    """Fetching, starting or talking to the Kafka Connect worker failed."""


# --------------------------------------------------------------------------------------------
# jars


def connect_file_version(version: str = KAFKA_VERSION) -> str:
    """The ``connect-file`` release fetched beside Kafka Connect ``version``."""
    return CONNECT_FILE_FALLBACK.get(version, version)


def _classpath_artifacts(version: str) -> tuple[str, ...]:
    if connect_file_version(version) != version:
        return CONNECT_ARTIFACTS
    return (*CONNECT_ARTIFACTS, CONNECT_FILE_ARTIFACT)


def plugin_path(libs: Path) -> Path | None:
    """The ``plugins`` directory beside ``libs`` (the worker's ``plugin.path``), or None."""
    plugins = libs.parent / PLUGINS_DIR
    return plugins if plugins.is_dir() else None


def render_pom(version: str = KAFKA_VERSION, log4j_version: str = LOG4J_VERSION) -> str:
    """The pom that resolves Kafka Connect's runtime jars (runtime, json and, where served
    at ``version``, file)."""
    dependencies = "\n".join(
        "    <dependency>\n"
        "      <groupId>org.apache.kafka</groupId>\n"
        f"      <artifactId>{artifact}</artifactId>\n"
        f"      <version>{version}</version>\n"
        "    </dependency>"
        for artifact in _classpath_artifacts(version)
    )
    return _POM.format(
        plugin=MAVEN_DEPENDENCY_PLUGIN,
        version=version,
        kafka_dependencies=dependencies,
        log4j_version=log4j_version,
    )


def ensure_connect_libs(version: str = KAFKA_VERSION, cache: Path | None = None) -> Path:
    """Downloads Kafka Connect ``version`` and its runtime dependencies once; returns the libs dir.

    Safe to call concurrently from several processes (a file lock serialises the fetch).
    """
    home = (cache or cache_root()) / "kafka-connect" / version
    file_version = connect_file_version(version)
    try:
        libs = fetch_maven_libs(
            home,
            render_pom(version),
            [f"{artifact}-{version}.jar" for artifact in _classpath_artifacts(version)],
            f"Kafka Connect {version}",
        )
        if file_version != version:
            fetch_maven_libs(
                home / PLUGINS_DIR / CONNECT_FILE_ARTIFACT,
                render_file_plugin_pom(file_version),
                [
                    f"{CONNECT_FILE_ARTIFACT}-{file_version}.jar",
                    f"kafka-clients-{file_version}.jar",
                ],
                f"Kafka Connect's FileStream connectors {file_version} (a plugin)",
            )
    except KafkaBrokerError as exc:
        raise KafkaConnectError(str(exc)) from exc
    return libs


def render_file_plugin_pom(file_version: str) -> str:
    """The pom of the FileStream plugin of an older release: its ``connect-file`` and
    ``kafka-clients`` jars alone (the runtime provides everything else)."""
    dependencies = "\n".join(
        "    <dependency>\n"
        "      <groupId>org.apache.kafka</groupId>\n"
        f"      <artifactId>{artifact}</artifactId>\n"
        f"      <version>{file_version}</version>\n"
        "      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>"
        "</exclusions>\n"
        "    </dependency>"
        for artifact in (CONNECT_FILE_ARTIFACT, "kafka-clients")
    )
    return _PLUGIN_POM.format(
        plugin=MAVEN_DEPENDENCY_PLUGIN, version=file_version, dependencies=dependencies
    )


# --------------------------------------------------------------------------------------------
# connector configurations


def file_stream_source_config(
    file: Path | str, topic: str, *, batch_size: int | None = None
) -> dict[str, str]:
    """A FileStreamSourceConnector reading ``file`` line by line into ``topic``.

    Without ``batch_size`` Connect's own default applies (2000 lines per ``poll()``).
    """
    config = {
        "connector.class": FILE_SOURCE_CLASS,
        "tasks.max": "1",
        "file": str(file),
        "topic": topic,
    }
    if batch_size is not None:
        config["batch.size"] = str(batch_size)
    return config


def file_stream_sink_config(file: Path | str, topics: str | Sequence[str]) -> dict[str, str]:
    """A FileStreamSinkConnector appending each record value of ``topics`` as a line to ``file``."""
    names = topics if isinstance(topics, str) else ",".join(topics)
    return {
        "connector.class": FILE_SINK_CLASS,
        "tasks.max": "1",
        "file": str(file),
        "topics": names,
    }


# --------------------------------------------------------------------------------------------
# memory, from /proc


def _page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE")


def _descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text("ascii", errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def process_tree_rss_bytes(root: int) -> int:
    """Resident set size of ``root`` and all its descendants, in bytes (0 if gone)."""
    total = 0
    for pid in _descendants(root):
        try:
            resident = int(Path(f"/proc/{pid}/statm").read_text("ascii").split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += resident * _page_size()
    return total


def process_tree_cpu_seconds(root: int) -> float:
    """CPU time (user + system) that ``root`` and its descendants used so far, in seconds
    (0 if gone): the live processes' own, and that of the children each of them reaped
    (PostgreSQL's backends, once they ended). The difference of two readings is a phase's
    CPU cost, whatever else ran on the machine."""
    ticks = 0
    for pid in _descendants(root):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text("ascii", errors="replace")
            fields = stat.rsplit(")", 1)[-1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        except (OSError, IndexError, ValueError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, key: str) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text("ascii", errors="replace")
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


# --------------------------------------------------------------------------------------------
# the worker process


class KafkaConnectStandalone:
    """One Kafka Connect standalone worker JVM whose files all live in ``work_dir``.

    Started with no connectors; connectors are created and removed through its REST API.
    ``start()`` and ``stop()`` are idempotent; the object is not thread-safe.
    """

    main_class = CONNECT_MAIN

    def __init__(
        self,
        work_dir: Path,
        bootstrap_servers: str,
        *,
        libs_dir: Path | None = None,
        rest_port: int = 0,
        heap_opts: Sequence[str] = DEFAULT_HEAP_OPTS,
        offset_flush_interval_ms: int | None = None,
        worker_overrides: Mapping[str, str] | None = None,
        log_level: str = "INFO",
        die_with_parent: bool = False,
    ) -> None:
        self.work_dir = Path(work_dir).resolve()
        self.bootstrap_servers = bootstrap_servers
        self.libs_dir = libs_dir
        self.rest_port = rest_port or free_port()
        self.heap_opts = tuple(heap_opts)
        self.offset_flush_interval_ms = offset_flush_interval_ms
        self.worker_overrides = dict(worker_overrides or {})
        self.log_level = log_level
        self.die_with_parent = die_with_parent
        self._process: subprocess.Popen[bytes] | None = None

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def logs_dir(self) -> Path:
        return self.work_dir / "logs"

    def worker_properties(self) -> dict[str, str]:
        """The worker's ``worker.properties`` (the overrides applied last)."""
        props = {
            "bootstrap.servers": self.bootstrap_servers,
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "offset.storage.file.filename": str(self.work_dir / "connect.offsets"),
            "listeners": self.rest_url,
        }
        if self.offset_flush_interval_ms is not None:
            props["offset.flush.interval.ms"] = str(self.offset_flush_interval_ms)
        props.update(self.worker_overrides)
        return props

    def start(self, timeout: float = START_TIMEOUT_S) -> str:
        """Starts the JVM and waits until ``GET /connectors`` answers 200; returns the REST URL.

        Raises KafkaConnectError (with the tails of its logs) if the process exits or the REST
        API does not answer within ``timeout`` seconds; the process is stopped then.
        """
        if self.running:
            return self.rest_url
        self.launch()
        self.wait_ready(timeout)
        return self.rest_url

    def launch(self) -> None:
        """Starts the JVM without waiting for it (then :meth:`wait_ready`): several workers
        start at once from one thread, which ``die_with_parent`` needs, since the kernel
        signals a child when the *thread* that started it ends."""
        libs = self.libs_dir or ensure_connect_libs()
        try:
            java = _java()
        except KafkaBrokerError as exc:
            raise KafkaConnectError(str(exc)) from exc
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        worker_properties = self.worker_properties()
        plugins = plugin_path(libs)
        if plugins is not None:
            worker_properties.setdefault("plugin.path", str(plugins))
        properties = self.work_dir / "worker.properties"
        properties.write_text(
            "# written by bench/kafka_connect.py\n"
            + "".join(f"{key}={value}\n" for key, value in worker_properties.items()),
            "utf-8",
        )
        log4j = self.work_dir / "log4j2.properties"
        log4j.write_text(_LOG4J2.format(level=self.log_level), "utf-8")
        command = [
            java,
            *self.heap_opts,
            *JVM_PERFORMANCE_OPTS,
            f"-Dkafka.logs.dir={self.logs_dir}",
            f"-Dlog4j2.configurationFile={log4j.as_uri()}",
            "-cp",
            str(libs / "*"),
            self.main_class,
            str(properties),
        ]
        self._process = spawn_process_group(
            command, self.logs_dir / "stdout.log", self.work_dir,
            die_with_parent=self.die_with_parent,
        )
        log.info("kafka_connect_starting", pid=self._process.pid, rest_url=self.rest_url)

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Waits until the launched JVM's REST API answers; stops it and raises if not."""
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        log.info("kafka_connect_started", pid=self.pid, rest_url=self.rest_url)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: str = "no answer yet"
        while True:
            self.check_alive()
            try:
                code, body = self._request("GET", "/connectors", timeout=2.0)
                if code == 200:
                    return
                last = f"HTTP {code}: {body}"
            except (OSError, http.client.HTTPException) as exc:  # not listening yet
                last = repr(exc)
            if time.monotonic() > deadline:
                raise KafkaConnectError(
                    f"Kafka Connect's REST API at {self.rest_url} did not answer within "
                    f"{timeout:.0f}s (last: {last}); {self.log_tails()}"
                )
            time.sleep(0.2)

    def check_alive(self) -> None:
        """Raises KafkaConnectError (with the log tails) if the JVM has exited."""
        if self._process is None:
            raise KafkaConnectError("Kafka Connect has not been started")
        code = self._process.poll()
        if code is not None:
            raise KafkaConnectError(f"Kafka Connect exited with code {code}; {self.log_tails()}")

    def log_tails(self) -> str:
        return (
            f"stdout.log: {_tail(_read(self.logs_dir / 'stdout.log'))} "
            f"connect.log: {_tail(_read(self.logs_dir / 'connect.log'))}"
        )

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM to the JVM's process group, SIGKILL after ``timeout`` seconds."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, timeout, "kafka_connect")

    # --- memory -----------------------------------------------------------------------------

    def rss_bytes(self) -> int:
        """Resident set size of the JVM and all its descendants now (0 when not running)."""
        pid = self.pid
        return 0 if pid is None else process_tree_rss_bytes(pid)

    def cpu_seconds(self) -> float:
        """CPU time the JVM and its descendants used so far (0 when not running)."""
        pid = self.pid
        return 0.0 if pid is None else process_tree_cpu_seconds(pid)

    def peak_rss_bytes(self) -> int:
        """The JVM's own peak resident set size (``VmHWM``; 0 when not running)."""
        pid = self.pid
        return 0 if pid is None else _status_kib(pid, "VmHWM") * 1024

    # --- REST -------------------------------------------------------------------------------

    def _request(
        self, method: str, path: str, body: Any = None, timeout: float = REST_TIMEOUT_S
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            self.rest_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status: int = response.status
                raw: bytes = response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        if not raw:
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode("utf-8", errors="replace")

    def _call(
        self, method: str, path: str, body: Any = None, expect: Sequence[int] = (200,)
    ) -> Any:
        status, payload = self._request(method, path, body)
        if status not in expect:
            raise KafkaConnectError(f"{method} {path}: HTTP {status}: {payload}")
        return payload

    def connectors(self) -> list[str]:
        """``GET /connectors``."""
        names: list[str] = self._call("GET", "/connectors")
        return names

    def create_connector(self, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """``POST /connectors``; returns Connect's answer (name, config, tasks)."""
        info: dict[str, Any] = self._call(
            "POST", "/connectors", {"name": name, "config": dict(config)}, expect=(200, 201)
        )
        return info

    def delete_connector(self, name: str) -> None:
        """``DELETE /connectors/<name>``."""
        self._call("DELETE", f"/connectors/{name}", expect=(200, 204))

    def failed_trace(self, name: str) -> str | None:
        return failed_trace(self.connector_status(name))

    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/<name>/status``: ``{"connector": {"state": ...}, "tasks": [...]}``."""
        status: dict[str, Any] = self._call("GET", f"/connectors/{name}/status")
        return status


class KafkaConnectDistributed(KafkaConnectStandalone):
    """One worker of a Kafka Connect distributed cluster (``ConnectDistributed``).

    Every worker given the same ``group_id`` joins one cluster, whose config, offsets and
    status topics are named after the group (replication factor 1: a single broker); all
    else is Connect's default (exactly-once source support off). ``leader_url()`` reads the
    leader's REST URL from the worker's log: Connect's REST API does not name it.
    """

    main_class = CONNECT_DISTRIBUTED_MAIN

    def __init__(
        self, work_dir: Path, bootstrap_servers: str, group_id: str, **options: Any
    ) -> None:
        super().__init__(work_dir, bootstrap_servers, **options)
        self.group_id = group_id

    def worker_properties(self) -> dict[str, str]:
        props = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "config.storage.topic": f"{self.group_id}-configs",
            "offset.storage.topic": f"{self.group_id}-offsets",
            "status.storage.topic": f"{self.group_id}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "listeners": self.rest_url,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.rest_port),
        }
        props.update(self.worker_overrides)
        return props

    def leader_url(self) -> str | None:
        """The leader's REST URL of the last rebalance this worker logged, or None."""
        found = _LEADER_URL.findall(_read(self.logs_dir / "connect.log"))
        return found[-1].rstrip("/") if found else None

    def request(
        self, method: str, path: str, body: Any = None, expect: Sequence[int] = (200,)
    ) -> Any:
        """One REST call; raises KafkaConnectError unless its status is in ``expect``."""
        return self._call(method, path, body, expect)


def failed_trace(status: Mapping[str, Any]) -> str | None:
    """The trace of the connector or of its first task that is FAILED, or None."""
    parts = [status.get("connector", {}), *status.get("tasks", [])]
    for part in parts:
        if part.get("state") == "FAILED":
            return str(part.get("trace", "FAILED (no trace)"))
    return None


# --------------------------------------------------------------------------------------------
# the smoke benchmark

POLL_INTERVAL_S = 0.02
RSS_INTERVAL_S = 0.5
STATUS_INTERVAL_S = 1.0
LINE_BYTES = 100  # with its newline


def progress(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def line(i: int) -> str:
    """Line ``i`` of the input: 99 characters and a newline."""
    head = f"line {i:09d} "
    return head + "x" * (LINE_BYTES - 1 - len(head)) + "\n"


def write_input(path: Path, lines: int) -> None:
    with path.open("w", encoding="ascii") as out:
        for start in range(0, lines, 10_000):
            out.write("".join(line(i) for i in range(start, min(start + 10_000, lines))))


class Runner(Protocol):
    """A worker a FileStream measurement drives (Kafka Connect, or connect-grpc)."""

    def create_connector(self, name: str, config: Mapping[str, str]) -> object: ...

    def delete_connector(self, name: str) -> None: ...

    def rss_bytes(self) -> int: ...

    def cpu_seconds(self) -> float: ...

    def check_alive(self) -> None: ...

    def failed_trace(self, name: str) -> str | None: ...


@dataclass(frozen=True)
class Timing:
    """One FileStream measurement, timed from the create call."""

    #: Seconds until all N records were there (the figure the goals compare).
    elapsed_s: float
    #: Seconds until the first record was there: the connector's and task's start, the
    #: consumer's join for a sink, and the first batch.
    first_s: float
    #: Records/s between the samples that first saw 10 % and 90 % of N: the rate once
    #: running, the start left out.
    steady_rate: float
    peak_rss: int
    #: CPU seconds the worker's whole process tree used meanwhile.
    cpu_s: float = 0.0


class _Progress:
    """When a measurement's count (sampled every POLL_INTERVAL_S) first reached 1 record,
    10 % and 90 % of the total."""

    def __init__(self, started: float, total: int) -> None:
        self._started = started
        self._total = total
        self._first: float | None = None
        self._low: tuple[float, int] | None = None
        self._high: tuple[float, int] | None = None

    def saw(self, count: int, now: float) -> None:
        if count > 0 and self._first is None:
            self._first = now
        if count >= self._total * 0.1 and self._low is None:
            self._low = (now, count)
        if count >= self._total * 0.9 and self._high is None:
            self._high = (now, count)

    def timing(self, now: float, peak_rss: int, cpu_s: float = 0.0) -> Timing:
        elapsed = now - self._started
        first = elapsed if self._first is None else self._first - self._started
        low, high = self._low, self._high
        if low is None or high is None or high[0] <= low[0]:  # too few records to tell
            steady = self._total / elapsed
        else:
            steady = (high[1] - low[1]) / (high[0] - low[0])
        return Timing(elapsed, first, steady, peak_rss, cpu_s)


class Phase:
    """Samples RSS and the connector's status while a measurement waits."""

    def __init__(self, connect: Runner, connector: str) -> None:
        self.connect = connect
        self.connector = connector
        self.peak_rss = connect.rss_bytes()
        self._next_rss = 0.0
        self._next_status = time.monotonic() + STATUS_INTERVAL_S

    def tick(self) -> None:
        now = time.monotonic()
        if now >= self._next_rss:
            self._next_rss = now + RSS_INTERVAL_S
            self.connect.check_alive()
            self.peak_rss = max(self.peak_rss, self.connect.rss_bytes())
        if now >= self._next_status:
            self._next_status = now + STATUS_INTERVAL_S
            trace = self.connect.failed_trace(self.connector)
            if trace is not None:
                raise KafkaConnectError(f"connector {self.connector} failed: {_tail(trace)}")


@contextlib.contextmanager
def _consumer(bootstrap: str) -> Iterator[Any]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    try:
        yield consumer
    finally:
        consumer.close()


def create_topic(bootstrap: str, name: str, consumer: Any, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:  # until every partition has a leader
        try:
            partition_ends(consumer, [(name, p) for p in range(partitions)], 5)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def measure_source(
    connect: Runner,
    consumer: Any,
    source_file: Path,
    topic: str,
    lines: int,
    batch_size: int | None,
    timeout: float,
    extra: Mapping[str, str] | None = None,
    partitions: int = 1,
) -> Timing:
    """From the POST until the topic (its ``partitions`` together) holds ``lines`` records;
    peak RSS meanwhile. ``extra`` is added to the connector's config (converters,
    transforms)."""
    name = "bench-file-source"
    keys = [(topic, partition) for partition in range(partitions)]
    config = file_stream_source_config(source_file, topic, batch_size=batch_size)
    config.update(extra or {})
    cpu_before = connect.cpu_seconds()
    started = time.monotonic()
    connect.create_connector(name, config)
    phase = Phase(connect, name)
    marks = _Progress(started, lines)
    while True:
        high = sum(end for _, end in partition_ends(consumer, keys, 5).values())
        now = time.monotonic()
        marks.saw(high, now)
        if high >= lines:
            if high != lines:
                raise RuntimeError(f"{topic}: {high} records, expected {lines}")
            break
        if now - started > timeout:
            raise TimeoutError(f"{topic}: only {high} of {lines} records after {timeout:.0f}s")
        phase.tick()
        time.sleep(POLL_INTERVAL_S)
    phase.peak_rss = max(phase.peak_rss, connect.rss_bytes())
    cpu_s = connect.cpu_seconds() - cpu_before
    connect.delete_connector(name)
    return marks.timing(now, phase.peak_rss, cpu_s)


def measure_sink(
    connect: Runner,
    sink_file: Path,
    topic: str,
    lines: int,
    timeout: float,
    extra: Mapping[str, str] | None = None,
) -> Timing:
    """From the POST until ``sink_file`` has ``lines`` lines; peak RSS meanwhile.
    ``extra`` is added to the connector's config (converters, transforms)."""
    name = "bench-file-sink"
    cpu_before = connect.cpu_seconds()
    started = time.monotonic()
    connect.create_connector(name, {**file_stream_sink_config(sink_file, topic), **(extra or {})})
    phase = Phase(connect, name)
    marks = _Progress(started, lines)
    seen = 0
    with contextlib.ExitStack() as stack:
        handle = None
        while True:
            if handle is None and sink_file.exists():
                handle = stack.enter_context(sink_file.open("rb"))
            if handle is not None:
                seen += handle.read().count(b"\n")
            now = time.monotonic()
            marks.saw(seen, now)
            if seen >= lines:
                break
            if now - started > timeout:
                raise TimeoutError(
                    f"{sink_file}: only {seen} of {lines} lines after {timeout:.0f}s"
                )
            phase.tick()
            time.sleep(POLL_INTERVAL_S)
    phase.peak_rss = max(phase.peak_rss, connect.rss_bytes())
    cpu_s = connect.cpu_seconds() - cpu_before
    connect.delete_connector(name)
    return marks.timing(now, phase.peak_rss, cpu_s)


def sorted_lines_sha256(path: Path) -> str:
    """The SHA-256 of the file's lines sorted (a sink of several partitions writes each
    partition's lines in order, the partitions interleaved as they come)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for line in sorted(handle):
            digest.update(line)
    return digest.hexdigest()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
