"""Local single-node Apache Kafka broker (KRaft, broker + controller in one JVM) for dev and tests.

Jars come from Maven Central through ``mvn`` into a cache outside the repository::

    ${CONNECT_GRPC_CACHE:-~/.cache/connect-grpc}/kafka/<version>/libs

Public API
----------
``KAFKA_VERSION: str``
    The Kafka release used (``"4.1.1"``).
``cache_root() -> Path``
    ``$CONNECT_GRPC_CACHE`` or ``~/.cache/connect-grpc``.
``default_state_dir() -> Path``
    ``cache_root() / "run" / "kafka"``: where the CLI keeps its broker.
``ensure_kafka_libs(version: str = KAFKA_VERSION, cache: Path | None = None) -> Path``
    Fetches the broker jars (idempotent: skipped when the completion marker exists) and
    returns the ``libs`` directory.
``BrokerConfig`` (frozen dataclass: ``data_dir``, ``broker_port``, ``controller_port``,
``host="127.0.0.1"``, ``node_id=1``, ``overrides={}``)
    ``.properties() -> dict[str, str]``, ``.render() -> str`` (``server.properties`` text),
    ``.bootstrap_servers -> str``, ``.log_dirs -> Path``, ``.logs_dir -> Path``.
``LocalKafka(data_dir: Path, *, broker_port: int = 0, controller_port: int = 0,
heap: str = "512m", libs_dir: Path | None = None, overrides: Mapping[str, str] | None = None,
die_with_parent: bool = False)``
    ``.start(timeout: float = 60.0) -> str`` (bootstrap servers), ``.stop(timeout: float = 30.0)
    -> None``, ``.bootstrap_servers -> str``, ``.pid -> int | None``, ``.running -> bool``;
    also a context manager. Ports of 0 are replaced by free loopback ports. The JVM runs in its
    own session/process group; its stdout/stderr go to ``<data_dir>/logs/stdout.log`` and its
    log4j2 output to ``<data_dir>/logs/server.log``.
``free_port(host: str = "127.0.0.1") -> int``
    A port unused now, below the kernel's ephemeral range where it can (no socket bound to
    port 0 elsewhere takes it before it is used).
``DEFAULT_BROKER_PORT: int``
    ``9092``: the port ``connect-grpc kafka start`` and ``dev`` use unless told otherwise.
``start_background(state_dir: Path | None = None, timeout: float = 60.0,
port: int = DEFAULT_BROKER_PORT) -> str``
    Starts a detached broker on ``127.0.0.1:<port>`` whose data lives in ``<state_dir>/data``
    and records pid/ports in ``<state_dir>/state.json``; when one is already running there,
    returns its bootstrap servers. A port in use is a KafkaBrokerError.
``stop(state_dir: Path | None = None, timeout: float = 30.0) -> bool``
    Stops the broker recorded in the state dir (SIGTERM to its process group, SIGKILL after
    ``timeout``); returns whether one was running.
``status(state_dir: Path | None = None) -> str | None``
    Bootstrap servers of the running broker recorded in the state dir, or ``None``.
``KafkaBrokerError``
    Raised when fetching, formatting or starting the broker fails.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

import structlog

log = structlog.get_logger(__name__)

KAFKA_VERSION = "4.1.1"
#: How long the first fetch of the broker's jars (about 45 MB) usually takes.
KAFKA_FETCH_USUAL_S = 60
LOG4J_VERSION = "2.24.3"  # the log4j-core version kafka-server 4.1.1 depends on
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
LIBS_MARKER = ".complete"
STATE_FILE = "state.json"
DEFAULT_BROKER_PORT = 9092
#: Starts tried, each on ports chosen again, when another process took a chosen port.
PORT_ATTEMPTS = 3
_PR_SET_PDEATHSIG = 1


class KafkaBrokerError(RuntimeError):
    """Fetching, formatting, starting or stopping the local broker failed."""


def cache_root() -> Path:
    """``$CONNECT_GRPC_CACHE`` or ``~/.cache/connect-grpc``."""
    env = os.environ.get("CONNECT_GRPC_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "connect-grpc"


def default_state_dir() -> Path:
    """Where ``connect-grpc kafka start|stop|status`` keeps the broker's state and data."""
    return cache_root() / "run" / "kafka"


# --------------------------------------------------------------------------------------------
# jars


def render_pom(version: str = KAFKA_VERSION, log4j_version: str = LOG4J_VERSION) -> str:
    """The pom that resolves the broker's runtime jars."""
    template = resources.files("connect_grpc.kafka").joinpath("pom.xml").read_text("utf-8")
    return template.replace("@KAFKA_VERSION@", version).replace("@LOG4J_VERSION@", log4j_version)


def log4j2_config_text() -> str:
    """The broker's log4j2 configuration (logs to ``${sys:kafka.logs.dir}/server.log``)."""
    return resources.files("connect_grpc.kafka").joinpath("log4j2.properties").read_text("utf-8")


def ensure_kafka_libs(version: str = KAFKA_VERSION, cache: Path | None = None) -> Path:
    """Downloads Kafka ``version`` and its runtime dependencies once; returns the libs dir.

    Safe to call concurrently from several processes (a file lock serialises the fetch).
    """
    return fetch_maven_libs(
        (cache or cache_root()) / "kafka" / version,
        render_pom(version),
        [f"kafka_2.13-{version}.jar"],
        f"Kafka {version}",
        usual_seconds=KAFKA_FETCH_USUAL_S,
    )


def fetch_maven_libs(
    home: Path,
    pom_text: str,
    expected_jars: Sequence[str],
    what: str,
    usual_seconds: float | None = None,
) -> Path:
    """The runtime jars of the pom ``pom_text``, fetched by ``mvn`` into ``home/libs`` once
    (a marker file says they are complete; a file lock serialises concurrent fetches).
    ``mvn -q`` prints nothing while it downloads, so the log says before it starts what is
    fetched and how long that usually takes (``usual_seconds``).

    Raises:
        KafkaBrokerError: mvn is missing or failed, or did not produce ``expected_jars``.
    """
    libs = home / "libs"
    if (home / LIBS_MARKER).exists():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with _file_lock(home / ".lock"):
        if (home / LIBS_MARKER).exists():
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise KafkaBrokerError(f"mvn not found on PATH; it is needed to fetch {what}")
        pom = home / "pom.xml"
        pom.write_text(pom_text, "utf-8")
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(libs, ignore_errors=True)
        log.info("maven_libs_fetching", what=what, directory=str(libs),
                 usual_seconds=usual_seconds, note="first time only; mvn prints nothing")
        started = time.monotonic()
        result = subprocess.run(
            [
                mvn, "-B", "-q", "-f", str(pom),
                f"{MAVEN_DEPENDENCY_PLUGIN}:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging}",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise KafkaBrokerError(
                f"mvn failed to fetch {what} (exit {result.returncode}): "
                f"{_tail(result.stdout + result.stderr)}"
            )
        missing = [jar for jar in expected_jars if not (staging / jar).exists()]
        if missing:
            raise KafkaBrokerError(f"mvn did not produce {', '.join(missing)} in {staging}")
        staging.rename(libs)
        (home / LIBS_MARKER).write_text(f"{what}\n", "utf-8")
        log.info(
            "maven_libs_fetched",
            what=what,
            jars=sum(1 for _ in libs.glob("*.jar")),
            seconds=round(time.monotonic() - started, 1),
        )
    return libs


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# configuration


#: The kernel's ephemeral ports (Linux): those it gives a socket bound to port 0 and an
#: outgoing connection's local end.
_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The lowest port ``free_port`` picks below the ephemeral range.
_LOWEST_PICKED_PORT = 10_000
#: Ports ``free_port`` tries below the ephemeral range before it asks the kernel for one.
_PORT_TRIES = 50
#: Not the ``random`` module's generator: pytest-randomly seeds it alike in every test
#: process, which would have them try the same ports in the same order.
_PORT_RANDOM = random.SystemRandom()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` unused now, for a process started later to listen on.

    Picked at random below the kernel's ephemeral range where there is one: a port the
    kernel gives out (to a server bound to port 0, or as an outgoing connection's local end)
    could be taken by another process between its choice here and its use, as a gRPC server
    of a test running alongside once took a broker's port. Else one the kernel gives."""
    low = _ephemeral_range_start()
    if low is not None and low > _LOWEST_PICKED_PORT:
        for _ in range(_PORT_TRIES):
            port = _PORT_RANDOM.randrange(_LOWEST_PICKED_PORT, low)
            if port_is_free(port, host):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        given: int = sock.getsockname()[1]
        return given


def _ephemeral_range_start() -> int | None:
    try:
        return int(_EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` string (URL-safe base64 of 16 random bytes, no padding)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka's Uuid.randomUuid() avoids these too
            return text


@dataclass(frozen=True)
class BrokerConfig:
    """``server.properties`` of a single-node combined broker + controller on loopback."""

    data_dir: Path
    broker_port: int
    controller_port: int
    host: str = "127.0.0.1"
    node_id: int = 1
    overrides: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.broker_port}"

    @property
    def log_dirs(self) -> Path:
        """Where Kafka keeps partitions and the KRaft metadata log."""
        return self.data_dir / "kraft"

    @property
    def logs_dir(self) -> Path:
        """Where the JVM's log4j2 output and stdout/stderr go."""
        return self.data_dir / "logs"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            # a static quorum: the controller's address may change between restarts
            "controller.quorum.voters": f"{self.node_id}@{self.host}:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://{self.host}:{self.broker_port},"
                f"CONTROLLER://{self.host}:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.broker_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dirs),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "3",
            "num.io.threads": "4",
            "num.recovery.threads.per.data.dir": "1",
            "log.retention.hours": "168",
            "log.segment.bytes": str(64 * 1024 * 1024),
            "log.retention.check.interval.ms": "30000",
            "log.cleaner.enable": "true",
            "log.cleaner.backoff.ms": "1000",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        }
        props.update(self.overrides)
        return props

    def render(self) -> str:
        lines = ["# written by connect_grpc.kafka.broker; rewritten on every start"]
        lines += [f"{key}={_escape_property(value)}" for key, value in self.properties().items()]
        return "\n".join(lines) + "\n"


def _escape_property(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


# --------------------------------------------------------------------------------------------
# the broker process


class LocalKafka:
    """One Kafka JVM (broker + controller) whose files all live in ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        broker_port: int = 0,
        controller_port: int = 0,
        heap: str = "512m",
        libs_dir: Path | None = None,
        overrides: Mapping[str, str] | None = None,
        die_with_parent: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._requested_ports = (broker_port, controller_port)
        #: Where server.log ended before the last start (what that start logged follows).
        self._log_start = 0
        self.heap = heap
        self.libs_dir = libs_dir
        self.overrides = dict(overrides or {})
        self.die_with_parent = die_with_parent
        self.config: BrokerConfig | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.config is None:
            raise KafkaBrokerError("the broker has not been started")
        return self.config.bootstrap_servers

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> LocalKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> str:
        """Formats storage if needed, starts the JVM and waits until it answers metadata.

        Ports this broker chose itself are chosen again when another process took one
        between the choice and the JVM's bind (a free port is only free until someone
        binds it: an outgoing connection's local port, another test's server)."""
        if self.running:
            return self.bootstrap_servers
        libs = self.libs_dir or ensure_kafka_libs()
        java = _java()
        requested = self._requested_ports
        for attempt in range(1, PORT_ATTEMPTS + 1):
            broker_port = requested[0] or free_port()
            controller_port = requested[1] or _free_port_except(broker_port)
            try:
                return self._start_on(libs, java, broker_port, controller_port, timeout)
            except KafkaBrokerError:
                if any(requested) or attempt == PORT_ATTEMPTS or not self._port_taken():
                    raise
                log.warning("kafka_port_taken", attempt=attempt, broker_port=broker_port,
                            controller_port=controller_port)
        raise AssertionError("unreachable")

    def _start_on(
        self, libs: Path, java: str, broker_port: int, controller_port: int, timeout: float
    ) -> str:
        config = BrokerConfig(
            self.data_dir, broker_port, controller_port, overrides=self.overrides
        )
        self.config = config
        config.logs_dir.mkdir(parents=True, exist_ok=True)
        config.log_dirs.mkdir(parents=True, exist_ok=True)
        properties = self.data_dir / "server.properties"
        properties.write_text(config.render(), "utf-8")
        log4j = self.data_dir / "log4j2.properties"
        log4j.write_text(log4j2_config_text(), "utf-8")
        jvm = [
            java,
            "-Xms128m",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={config.logs_dir}",
            f"-Dlog4j2.configurationFile={log4j.as_uri()}",
            "-cp",
            str(libs / "*"),
        ]
        if not (config.log_dirs / "meta.properties").exists():
            self._format(jvm, properties)
        self._log_start = _size(config.logs_dir / "server.log")
        self._process = spawn_process_group(
            [*jvm, "kafka.Kafka", str(properties)],
            config.logs_dir / "stdout.log",
            self.data_dir,
            die_with_parent=self.die_with_parent,
        )
        log.info(
            "kafka_starting",
            pid=self._process.pid,
            bootstrap_servers=config.bootstrap_servers,
            controller_port=controller_port,
            data_dir=str(self.data_dir),
        )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        log.info("kafka_started", pid=self._process.pid, bootstrap_servers=config.bootstrap_servers)
        return config.bootstrap_servers

    def _port_taken(self) -> bool:
        """Whether the last start failed because another process had bound one of its
        ports (what this start logged says so)."""
        assert self.config is not None
        server_log = self.config.logs_dir / "server.log"
        with contextlib.suppress(OSError), server_log.open("rb") as stream:
            stream.seek(self._log_start)
            return b"Address already in use" in stream.read()
        return False

    def _format(self, jvm: list[str], properties: Path) -> None:
        cluster_id = random_cluster_id()
        result = subprocess.run(
            [
                *jvm, "kafka.tools.StorageTool", "format",
                "--cluster-id", cluster_id,
                "--config", str(properties),
                "--ignore-formatted",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=self.data_dir,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise KafkaBrokerError(
                f"kafka storage format failed (exit {result.returncode}): "
                f"{_tail(result.stdout + result.stderr)}"
            )
        log.info("kafka_storage_formatted", cluster_id=cluster_id, data_dir=str(self.data_dir))

    def _wait_ready(self, timeout: float) -> None:
        assert self._process is not None and self.config is not None
        deadline = time.monotonic() + timeout
        host, port = self.config.host, self.config.broker_port
        # wait for the port first so librdkafka does not log connection-refused noise
        while True:
            self._check_alive()
            with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
                break
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"broker port {port} not open after {timeout:.0f}s")
            time.sleep(0.2)
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                metadata = _admin(self.config.bootstrap_servers).list_topics(timeout=2.0)
                if metadata.brokers:
                    return
            except Exception as exc:  # KafkaException: not ready yet
                last_error = exc
            time.sleep(0.2)
        raise KafkaBrokerError(
            f"broker at {self.config.bootstrap_servers} did not answer a metadata request "
            f"within {timeout:.0f}s: {last_error}"
        )

    def _check_alive(self) -> None:
        assert self._process is not None and self.config is not None
        code = self._process.poll()
        if code is not None:
            raise KafkaBrokerError(
                f"kafka exited with code {code} while starting; "
                f"stdout: {_tail(_read(self.config.logs_dir / 'stdout.log'))} "
                f"server.log: {_tail(_read(self.config.logs_dir / 'server.log'))}"
            )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the JVM's process group, SIGKILL after ``timeout`` seconds."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, timeout, "kafka")


def spawn_process_group(
    command: Sequence[str], output: Path, cwd: Path, *, die_with_parent: bool
) -> subprocess.Popen[bytes]:
    """Starts ``command`` in a process group of its own, stdout and stderr appended to
    ``output``; with ``die_with_parent``, it gets SIGTERM when this process dies."""
    with output.open("ab") as stdout:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=die_with_parent_signal if die_with_parent else None,
        )


def stop_process_group(process: subprocess.Popen[Any], timeout: float, what: str) -> None:
    """SIGTERM to ``process``'s group, SIGKILL after ``timeout`` seconds; logs
    ``<what>_stopped`` (and ``<what>_stop_timeout``)."""
    if process.poll() is not None:
        return
    signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning(f"{what}_stop_timeout", pid=process.pid, timeout=timeout)
        signal_group(process.pid, signal.SIGKILL)
        process.wait(10)
    log.info(f"{what}_stopped", pid=process.pid, exit_code=process.returncode)


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise KafkaBrokerError("java not found (set JAVA_HOME or put java on PATH)")
    return java


def _admin(bootstrap_servers: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap_servers, "socket.timeout.ms": 2000})


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _free_port_except(taken: int) -> int:
    while True:
        port = free_port()
        if port != taken:
            return port


def die_with_parent_signal() -> None:
    """Runs in the forked child: the kernel sends SIGTERM when the parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Signals the process group led by ``pid`` (the JVM's own session), or just ``pid``."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    except PermissionError:
        os.kill(pid, sig)


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""


def _tail(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


# --------------------------------------------------------------------------------------------
# a detached broker managed through a state dir (the CLI)


@dataclass(frozen=True)
class BrokerState:
    """What ``state.json`` records about a detached broker."""

    pid: int
    broker_port: int
    controller_port: int
    bootstrap_servers: str
    data_dir: str

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> BrokerState:
        raw = json.loads(text)
        return BrokerState(
            pid=int(raw["pid"]),
            broker_port=int(raw["broker_port"]),
            controller_port=int(raw["controller_port"]),
            bootstrap_servers=str(raw["bootstrap_servers"]),
            data_dir=str(raw["data_dir"]),
        )


def read_state(state_dir: Path) -> BrokerState | None:
    try:
        return BrokerState.from_json((state_dir / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_state(state_dir: Path, state: BrokerState) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(state.to_json(), "utf-8")
    tmp.replace(state_dir / STATE_FILE)


def is_kafka_process(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) Kafka broker JVM."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False  # it was our child and has just been reaped
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text("ascii", errors="replace")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[:1]
    return state != ["Z"] and b"kafka.Kafka" in cmdline


def status(state_dir: Path | None = None) -> str | None:
    """Bootstrap servers of the broker recorded in ``state_dir`` if it is running, else None."""
    state = read_state(state_dir or default_state_dir())
    if state is None or not is_kafka_process(state.pid):
        return None
    return state.bootstrap_servers


def start_background(
    state_dir: Path | None = None, timeout: float = 60.0, port: int = DEFAULT_BROKER_PORT
) -> str:
    """Starts a detached broker listening on ``127.0.0.1:<port>`` (or finds the one running
    in ``state_dir``) and returns its bootstrap servers.

    Data lives in ``<state_dir>/data`` and survives restarts. A port another process holds is
    a KafkaBrokerError naming it and the ``--port`` option.
    """
    state_dir = (state_dir or default_state_dir()).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(state_dir / ".lock"):
        previous = read_state(state_dir)
        if previous is not None and is_kafka_process(previous.pid):
            log.info("kafka_already_running", pid=previous.pid,
                     bootstrap_servers=previous.bootstrap_servers)
            return previous.bootstrap_servers
        if not port_is_free(port):
            raise KafkaBrokerError(
                f"port {port} is already in use (another Kafka broker?): stop what holds it, "
                "or choose another port with --port"
            )
        controller_port = 0
        if previous is not None and previous.controller_port != port and port_is_free(
            previous.controller_port
        ):
            controller_port = previous.controller_port
        kafka = LocalKafka(state_dir / "data", broker_port=port, controller_port=controller_port)
        bootstrap = kafka.start(timeout)
        assert kafka.pid is not None and kafka.config is not None
        _write_state(
            state_dir,
            BrokerState(
                pid=kafka.pid,
                broker_port=kafka.config.broker_port,
                controller_port=kafka.config.controller_port,
                bootstrap_servers=bootstrap,
                data_dir=str(kafka.data_dir),
            ),
        )
        return bootstrap


def stop(state_dir: Path | None = None, timeout: float = 30.0) -> bool:
    """Stops the broker recorded in ``state_dir``; returns whether one was running."""
    state_dir = (state_dir or default_state_dir()).resolve()
    state = read_state(state_dir)
    if state is None or not is_kafka_process(state.pid):
        log.info("kafka_not_running", state_dir=str(state_dir))
        return False
    signal_group(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while is_kafka_process(state.pid):
        if time.monotonic() > deadline:
            log.warning("kafka_stop_timeout", pid=state.pid, timeout=timeout)
            signal_group(state.pid, signal.SIGKILL)
            kill_deadline = time.monotonic() + 10
            while is_kafka_process(state.pid) and time.monotonic() < kill_deadline:
                time.sleep(0.1)
            break
        time.sleep(0.2)
    log.info("kafka_stopped", pid=state.pid, bootstrap_servers=state.bootstrap_servers)
    return True
