"""A real Spark standalone cluster for tests: one master and one worker, started as
subprocesses from the Spark distribution that pyspark ships (``<pyspark>/bin/spark-class``).

Workers of connect-grpc join it with ``spark.master=<cluster.master_url>``; each worker is its
own Spark application and its tasks' jobs run on executors the Spark worker launches (under
``<work_dir>/spark-worker/<app id>/<executor id>``).

Everything binds to 127.0.0.1 on free ports. The JVMs run in process groups of their own
(the worker's executors are in the worker's group); ``stop`` ends both groups.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import structlog

from connect_grpc.kafka.ports import free_port
from connect_grpc.kafka.processes import die_with_parent_signal, signal_group

log = structlog.get_logger(__name__)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_LOG_TAIL = 4000


class SparkClusterError(RuntimeError):
    """The master or the worker exited, or did not come up in time."""


def spark_home() -> Path:
    """The Spark distribution of the installed pyspark (it has ``bin/spark-class`` and
    ``jars``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkClusterError("pyspark is not installed")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").exists():
        raise SparkClusterError(f"{home} has no bin/spark-class")
    return home


def _tail(path: Path) -> str:
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_LOG_TAIL:]


class SparkStandaloneCluster:
    """A Spark standalone master and one worker (``cores`` cores, ``memory`` for executors).

    Layout under ``work_dir``: ``master.log`` and ``worker.log`` (the daemons' stdout and
    log4j output), ``logs/`` (``SPARK_LOG_DIR``), ``conf/`` (an empty ``SPARK_CONF_DIR``, so
    nothing from the distribution's ``conf`` applies) and ``spark-worker/`` (the worker's
    ``--work-dir``: one ``<app id>/<executor id>/{stdout,stderr}`` per executor it ran).
    """

    def __init__(
        self,
        work_dir: Path,
        cores: int = 2,
        memory: str = "1g",
        die_with_parent: bool = True,
    ) -> None:
        self.work_dir = work_dir
        self.cores = cores
        self.memory = memory
        self.die_with_parent = die_with_parent
        self.home = spark_home()
        self.master_port = free_port()
        self.master_ui_port = free_port()
        self.worker_ui_port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.master_port}"
        self.master_ui_url = f"http://127.0.0.1:{self.master_ui_port}"
        self.worker_ui_url = f"http://127.0.0.1:{self.worker_ui_port}"
        self.worker_dir = work_dir / "spark-worker"
        self.master_log = work_dir / "master.log"
        self.worker_log = work_dir / "worker.log"
        self._master: subprocess.Popen[bytes] | None = None
        self._worker: subprocess.Popen[bytes] | None = None

    def _environment(self) -> dict[str, str]:
        log_dir = self.work_dir / "logs"
        conf_dir = self.work_dir / "conf"
        for directory in (log_dir, conf_dir, self.worker_dir):
            directory.mkdir(parents=True, exist_ok=True)
        return {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(log_dir),
            "SPARK_WORKER_DIR": str(self.worker_dir),
            # the executors' Python: this interpreter (a driver's spark.pyspark.python wins)
            "PYSPARK_PYTHON": sys.executable,
        }

    def _spawn(self, args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        with log_path.open("ab") as log_file:
            return subprocess.Popen(
                [str(self.home / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.work_dir,
                env=self._environment(),
                start_new_session=True,
                preexec_fn=die_with_parent_signal if self.die_with_parent else None,
            )

    def start(self, timeout: float = 120.0) -> SparkStandaloneCluster:
        """Starts the master, then the worker; returns once the worker is registered (the
        master reports one alive worker). Raises SparkClusterError (after stopping what
        started) if either exits or the deadline passes."""
        if self._master is not None:
            return self
        self.work_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        try:
            self._master = self._spawn(
                [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.master_port),
                 "--webui-port", str(self.master_ui_port)],
                self.master_log,
            )
            log.info("spark_master_starting", pid=self._master.pid, url=self.master_url)
            self._wait(lambda state: state.get("status") == "ALIVE", deadline, "master alive")
            self._worker = self._spawn(
                [WORKER_CLASS, self.master_url, "--host", "127.0.0.1",
                 "--cores", str(self.cores), "--memory", self.memory,
                 "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.worker_dir)],
                self.worker_log,
            )
            log.info("spark_worker_starting", pid=self._worker.pid, master=self.master_url)
            self._wait(
                lambda state: int(state.get("aliveworkers", 0)) >= 1, deadline, "worker registered"
            )
        except BaseException:
            self.stop()
            raise
        log.info("spark_cluster_started", master=self.master_url, ui=self.master_ui_url)
        return self

    def _wait(
        self, ready: Callable[[dict[str, Any]], bool], deadline: float, what: str
    ) -> None:
        last_error: Exception | None = None
        while True:
            self._check_alive()
            try:
                if ready(self.master_state()):
                    return
            except (OSError, ValueError) as exc:  # not listening yet / partial answer
                last_error = exc
            if time.monotonic() > deadline:
                raise SparkClusterError(
                    f"spark {what}: not reached in time (last error: {last_error!r})\n"
                    f"master.log: {_tail(self.master_log)}\nworker.log: {_tail(self.worker_log)}"
                )
            time.sleep(0.3)

    def _check_alive(self) -> None:
        for name, process, path in (
            ("master", self._master, self.master_log),
            ("worker", self._worker, self.worker_log),
        ):
            if process is not None and process.poll() is not None:
                raise SparkClusterError(
                    f"spark {name} exited with {process.returncode}:\n{_tail(path)}"
                )

    @staticmethod
    def _json(url: str) -> dict[str, Any]:
        with urllib.request.urlopen(url, timeout=5) as response:
            state: dict[str, Any] = json.loads(response.read())
            return state

    def master_state(self) -> dict[str, Any]:
        """The master web UI's JSON: ``status``, ``aliveworkers``, ``cores``, ``coresused``,
        ``activeapps`` (each with ``id``, ``name``, ``cores`` granted, ``state``), …"""
        return self._json(f"{self.master_ui_url}/json/")

    def worker_state(self) -> dict[str, Any]:
        """The worker web UI's JSON: ``cores``, ``coresused``, ``executors`` (each with
        ``id``, ``appid``, ``memory``, ``appdesc``), ``finishedexecutors``, …"""
        return self._json(f"{self.worker_ui_url}/json/")

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The work directories of the executors the worker launched for ``app_id``."""
        app_dir = self.worker_dir / app_id
        if not app_dir.is_dir():
            return []
        return sorted(path for path in app_dir.iterdir() if path.is_dir())

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to the worker's process group (its executors too), then the master's;
        SIGKILL to a group still alive after ``timeout`` seconds."""
        for name in ("worker", "master"):
            process: subprocess.Popen[bytes] | None = getattr(self, f"_{name}")
            if process is None:
                continue
            setattr(self, f"_{name}", None)
            signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("spark_stop_timeout", process=name, pid=process.pid)
            # executors and Python workers of the group that outlived their parent
            signal_group(process.pid, signal.SIGKILL)
            if process.poll() is None:
                process.wait(10)
            log.info("spark_process_stopped", process=name, exit_code=process.returncode)

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
