"""The worker's one SparkContext, and job tagging so a task's running job can be cancelled.

The worker runs RDD jobs only: it starts a SparkContext, not a SparkSession, whose SQL state
cost the driver's JVM about 1.7 s of CPU at every start and served nothing.

PySpark runs in pinned-thread mode (its default): each Python thread has its own JVM
thread, so the job group, job tag and scheduler pool set in a task's loop thread apply to
that task's jobs only.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.start_phases import start_phase
from connect_grpc.runtime.class_archive import default_archive, driver_archive_conf
from connect_grpc.runtime.java_plugins import driver_class, java_spark_archives, java_spark_jars

log = structlog.get_logger(__name__)

#: Applied unless the worker properties set them: modest settings for a small machine.
SPARK_DEFAULTS: Mapping[str, str] = {
    "spark.master": "local[*]",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.python.worker.reuse": "true",
    # a crashed executor Python worker (segfault, librdkafka assertion) shows its traceback
    "spark.python.worker.faulthandler.enabled": "true",
    "spark.log.level": "WARN",
}


#: The driver's heap when ``plugin.path`` holds Java plugins and the worker's properties set
#: none: Kafka Connect's own scripts give its worker ``-Xmx2G``, and this JVM hosts the Java
#: connectors and, in local mode, every Java task too (beside Spark).
JAVA_HOST_DRIVER_MEMORY = "2g"

#: Kafka Connect's collector, G1 (also where the JVM would pick another: fewer than 2 CPUs or
#: less than 1792 MiB), with an explicit ``System.gc()`` (Spark's context cleaner calls it
#: periodically) a concurrent cycle instead of a full pause, as its scripts set
#: (``KAFKA_JVM_PERFORMANCE_OPTS``); not their 20 ms pause target, which keeps G1's young
#: generation small: the JVM's own (200 ms) moved records at Kafka Connect's CPU cost.
#: Given to the JVMs that host Java plugins through ``spark.{driver,executor}.defaultJavaOptions``
#: unless the worker's properties set those, or name a collector of their own in
#: ``spark.{driver,executor}.extraJavaOptions`` (two collectors stop a JVM from starting).
#: Spark puts the extra options after the default ones, and the JVM takes the last of a
#: repeated option: any of these the properties repeat there is theirs.
JAVA_HOST_GC_OPTIONS = "-XX:+UseG1GC -XX:+ExplicitGCInvokesConcurrent"

#: A JVM option that selects a garbage collector (``-XX:+UseParallelGC``, ``-XX:+UseZGC``…).
_COLLECTOR_OPTION = re.compile(r"(?:^|[\s='\"])-XX:\+Use\w*GC(?=[\s'\"]|$)")


#: The daemon that forks a local master's Python workers, unless the properties name one:
#: PySpark's, with the task runtime imported once before the forks and PySpark imported
#: from its installed, compiled modules (see ``runtime.python_daemon``).
PYTHON_DAEMON_CONF = "spark.python.daemon.module"
PYTHON_DAEMON_MODULE = "connect_grpc.runtime.python_daemon"


def spark_conf(config: WorkerConfig) -> dict[str, str]:
    """Every ``spark.*`` worker property over the defaults; FAIR scheduling always; with a
    local master, this package's daemon for the Python workers (``PYTHON_DAEMON_MODULE``)
    unless the properties name one; and,
    when ``plugin.path`` holds Java plugins, the jars that host them (``spark.jars``), the
    JVM settings of Kafka Connect's worker where the properties set none
    (:func:`java_host_jvm_conf`) and, on a cluster master, the plugins packed for the
    executors (``spark.archives``); and the driver's class-data archive
    (:func:`~connect_grpc.runtime.class_archive.driver_archive_conf`)."""
    conf = dict(SPARK_DEFAULTS)
    conf["spark.app.name"] = f"connect-grpc-{config.worker_id}"
    conf["spark.pyspark.python"] = sys.executable
    conf["spark.pyspark.driver.python"] = sys.executable
    conf.update(config.spark_conf)
    conf["spark.scheduler.mode"] = "FAIR"
    if _LOCAL_MASTER.fullmatch(conf["spark.master"].strip()):
        # Its executors are this process's own: their daemon can be this package's.
        conf.setdefault(PYTHON_DAEMON_CONF, PYTHON_DAEMON_MODULE)
    java_jars = java_spark_jars(config)
    if java_jars:
        # The Java plugins' host joins the jars the worker's properties name, if any.
        conf["spark.jars"] = ",".join(j for j in (conf.get("spark.jars", ""), *java_jars) if j)
        conf.update(java_host_jvm_conf(config.spark_conf, os.environ))
        if not _LOCAL_MASTER.fullmatch(conf["spark.master"].strip()):
            # A cluster's executors are JVMs of their own, maybe on other machines: the
            # plugins themselves are shipped (decision 0083), each entry a directory there.
            shipped = java_spark_archives(config)
            conf["spark.archives"] = ",".join(
                a for a in (conf.get("spark.archives", ""), *shipped) if a
            )
    # The driver's JVM (this process's, on any master) maps the class-data archive of
    # Spark's classes when the cache has one; executors are left alone.
    conf.update(driver_archive_conf(conf, os.environ, default_archive()))
    return conf


def java_host_jvm_conf(
    spark_properties: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """What a worker hosting Java plugins adds to Spark's settings so that its JVMs run them
    as Kafka Connect's does, for what ``spark_properties`` (the worker's ``spark.*``
    properties) leave unset: the driver's heap (``JAVA_HOST_DRIVER_MEMORY``; Spark reads it
    as it starts the driver's JVM, in local mode too) and the collector settings of the
    driver and of the executors (``JAVA_HOST_GC_OPTIONS``). The driver's are left out too
    when ``SPARK_SUBMIT_OPTS`` or ``PYSPARK_SUBMIT_ARGS`` (in ``environ``), which also reach
    the driver's JVM, name a collector. An executor's heap is left to
    ``spark.executor.memory``: a cluster's machines are sized by their owner, and executors
    asking for more than a cluster offers would never start."""
    conf: dict[str, str] = {}
    if "spark.driver.memory" not in spark_properties:
        conf["spark.driver.memory"] = JAVA_HOST_DRIVER_MEMORY
    for side in ("driver", "executor"):
        if f"spark.{side}.defaultJavaOptions" in spark_properties:
            continue
        theirs = spark_properties.get(f"spark.{side}.extraJavaOptions", "")
        if side == "driver":
            theirs = " ".join((environ.get("SPARK_SUBMIT_OPTS", ""),
                               environ.get("PYSPARK_SUBMIT_ARGS", ""), theirs))
        if _COLLECTOR_OPTION.search(theirs):
            continue
        conf[f"spark.{side}.defaultJavaOptions"] = JAVA_HOST_GC_OPTIONS
    return conf


def job_tag(connector: str, task: int) -> str:
    """The job group and tag of a task's jobs."""
    return f"connect:{connector}:{task}"


def host_job_tag(connector: str, task: int) -> str:
    """The job group of the long-running jobs launched to host a task (a parked host that
    another task adopts stays in the group of the task it was launched for)."""
    return f"connect-host:{connector}:{task}"


def host_job_cancel_tag(serial: int) -> str:
    """The tag of one hosting job, by which it is cancelled whatever task it serves."""
    return f"connect-host-job:{serial}"


#: How Spark's PythonRunner describes an executor Python worker that died (os._exit, a
#: segfault, a librdkafka assertion) instead of raising; the job fails, the worker lives.
PYTHON_WORKER_CRASHED = "Python worker exited unexpectedly"
#: How deep to follow a Java exception's causes.
_MAX_CAUSES = 16


def is_python_worker_crash(exc: BaseException) -> bool:
    """Whether a failed Spark job failed because an executor's Python worker crashed.

    Spark reports it as a ``SparkException`` (no error class) among the causes of the
    ``Py4JJavaError`` the driver gets; its message is the only thing that tells it apart.
    """
    cause = getattr(exc, "java_exception", None)
    for _ in range(_MAX_CAUSES):
        if cause is None:
            return False
        try:
            message = str(cause.getMessage() or "")
            if PYTHON_WORKER_CRASHED in message.partition("\n")[0]:
                return True
            cause = cause.getCause()
        except Exception:  # the JVM is gone (stopping): not a crash to retry
            return False
    return False


#: How long a SparkContext usually takes to start (its Python workers warm after it)
#: here; the JVM's first start after boot is slower, and a busy machine much slower (2.5 min
#: seen with a load average of 30 on 2 cores).
SPARK_START_USUAL_S = 10

#: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``, ``local[*,F]``: group 1 is N or *.
_LOCAL_MASTER = re.compile(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?")

#: Tells executor Python workers the worker's log format (they inherit its environment).
LOG_FORMAT_ENV = "CONNECT_LOG_FORMAT"


def _export_python_exec(conf: Mapping[str, str]) -> None:
    """PySpark's SparkContext picks the executors' interpreter from ``PYSPARK_PYTHON`` (the
    ``spark.pyspark.python`` conf only reaches spark-submit), so export the configured one."""
    os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", conf["spark.pyspark.driver.python"])


def _export_local_ip(conf: Mapping[str, str]) -> None:
    """With a local master, the whole application lives on ``spark.driver.bindAddress``:
    tell Spark so through ``SPARK_LOCAL_IP`` (unless set). Otherwise Spark looks up the
    host's own address first and warns on every start that the hostname resolves to a
    loopback address (as ``/etc/hosts`` often maps it)."""
    if local_slots(conf["spark.master"], 1) is not None:
        os.environ.setdefault("SPARK_LOCAL_IP", conf["spark.driver.bindAddress"])


#: Spark's logger that warns once per scheduler pool it creates on the fly.
_FAIR_SCHEDULER_LOGGER = "org.apache.spark.scheduler.FairSchedulableBuilder"


def _quiet_fair_scheduler_pools(context: Any) -> None:
    """Every connector's jobs run in a FAIR pool of its own, named after it and created on
    its first job with the default settings, as intended; Spark warns about each such pool
    ("…which has not been configured…") since no allocation file can name pools ahead of
    time. Only that logger goes to ERROR; everything else of Spark's stays at WARN."""
    jvm = context._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        _FAIR_SCHEDULER_LOGGER, jvm.org.apache.logging.log4j.Level.ERROR
    )


#: The class of ``jvm/`` that turns Nagle's algorithm off on the driver JVM's py4j
#: connections (on the driver's classpath when ``plugin.path`` holds Java plugins).
NO_DELAY_CLASS = "io.connectgrpc.jvm.gateway.NoDelayConnections"


def _py4j_answers_without_delay(context: Any) -> None:
    """Has the driver JVM send its py4j answers at once: py4j writes an answer through an
    8 KiB buffer, and the second write of a larger one (a Java connector's validation, a
    plugin listing) otherwise waits for Python's delayed acknowledgement of the first, ~40 ms
    (measured: 44 ms for any answer over 8 KiB, a fraction of a millisecond under it). The
    connections opened from now on get ``TCP_NODELAY``: the Java plugins' calls run on
    threads of their own, each with its own connection. Nothing without ``jvm/``'s jar on
    the driver's classpath (a worker without Java plugins makes no such calls)."""
    entry = driver_class(context._jvm, NO_DELAY_CLASS)
    if entry is None:
        return
    try:
        # py4j's own server object, which the Python side's gateway names
        installed = bool(entry.install(context._gateway.java_gateway_server))
    except Exception as exc:  # answers are only slower: the worker goes on
        log.warning("py4j_no_delay_not_installed", error=repr(exc))
        return
    log.info("py4j_no_delay_installed", installed=installed)


def local_slots(master: str, cpus: int) -> int | None:
    """The task slots of a local master (``local``: 1, ``local[N]``: N, ``local[*]``:
    ``cpus``), or None for any other master."""
    local = _LOCAL_MASTER.fullmatch(master.strip())
    if local is None:
        return None
    threads = local.group(1)
    if threads is None:
        return 1
    return cpus if threads == "*" else int(threads)


class SparkRuntime:
    """Owns the SparkContext: start once, tag and cancel jobs, stop."""

    def __init__(self, config: WorkerConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._context: Any = None
        self._on_start: list[Callable[[Any], None]] = []

    def on_start(self, callback: Callable[[Any], None]) -> None:
        """Has ``callback(context)`` called once the context is up, before the warm-up (what
        the JVM should do before any job: the Java plugins' log bridge). A callback that raises
        is logged, and the start goes on."""
        self._on_start.append(callback)

    def start(self) -> None:
        """Creates the context (≈ 5 s). Idempotent. Its Python workers are warmed by a
        separate call, :meth:`warm_up`."""
        with self._lock:
            if self._context is not None:
                return
            from pyspark import SparkConf, SparkContext
            from pyspark.errors.exceptions.captured import install_exception_handler

            conf = spark_conf(self._config)
            _export_python_exec(conf)
            _export_local_ip(conf)
            os.environ[LOG_FORMAT_ENV] = self._config.log_format
            log.info("spark_starting", master=conf["spark.master"],
                     usual_seconds=SPARK_START_USUAL_S,
                     note="slower on a busy machine or the JVM's first start after boot")
            started = time.monotonic()
            # the phase keeps the name worker_ready has logged it under (spark_session_s)
            with start_phase("spark_session"):
                settings = SparkConf()
                for key, value in conf.items():
                    settings.set(key, value)
                context = SparkContext.getOrCreate(settings)
                # What a SparkSession installs as it starts: the JVM's errors reach Python
                # as PySpark's exception classes, as they did when the worker made one.
                install_exception_handler()
                self._context = context
                _quiet_fair_scheduler_pools(context)
                _py4j_answers_without_delay(context)
                for callback in self._on_start:
                    try:
                        callback(context)
                    except Exception:
                        log.warning("spark_start_callback_failed", exc_info=True)
            log.info(
                "spark_started",
                master=context.master,
                parallelism=context.defaultParallelism,
                spark_version=context.version,
                seconds=round(time.monotonic() - started, 1),
            )

    def warm_up(self, warm: Callable[[Any, int], None]) -> None:
        """Runs ``warm(context, slots)`` when Spark offers task slots (a cluster whose
        executors are not there yet offers none: nothing to warm); logs
        ``python_workers_warmed``.
        The worker passes :func:`~connect_grpc.runtime.warm_up.warm_python_workers`: the
        task modules build on this one, so this one is told what to warm rather than
        importing them. Raises what the jobs raise (Spark stopped meanwhile, say)."""
        slots = self.task_slots()
        if slots <= 0:
            return
        started = time.monotonic()
        warm(self.context, slots)
        log.info("python_workers_warmed", slots=slots,
                 seconds=round(time.monotonic() - started, 1))

    @property
    def started(self) -> bool:
        return self._context is not None

    @property
    def context(self) -> Any:
        """The SparkContext. Raises RuntimeError before ``start``."""
        context = self._context
        if context is None:
            raise RuntimeError("Spark is not started")
        return context

    def parallelism(self) -> int:
        return int(self.context.defaultParallelism)

    def task_slots(self) -> int:
        """How many Spark tasks can run at once: N for ``local[N]`` (the cores for
        ``local[*]``, 1 for ``local``), else what the cluster's executors offer now."""
        context = self.context
        local = local_slots(str(context.master), os.cpu_count() or 1)
        if local is not None:
            return local
        scala = context._jsc.sc()
        profile = scala.resourceProfileManager().defaultResourceProfile()
        return int(scala.maxNumConcurrentTasks(profile))

    def driver_host(self) -> str:
        """The address executors reach the driver at (``spark.driver.host``)."""
        return str(self.context.getConf().get("spark.driver.host", "127.0.0.1"))

    def bind_thread(self, connector: str, task: int) -> None:
        """Tags every job the calling thread launches as the task's, in the connector's pool."""
        self.bind_thread_tag(job_tag(connector, task), connector)

    def bind_thread_tag(
        self, tag: str, pool: str, group: str | None = None, *, only: bool = False
    ) -> None:
        """Tags every job the calling thread launches with ``tag``, in scheduler pool ``pool``
        and job group ``group`` (by default ``tag``). With ``only``, ``tag`` alone: not the
        tags the thread inherited (an InheritableThread copies its starter's)."""
        context = self.context
        group = tag if group is None else group
        context.setJobGroup(group, f"connect {group}", interruptOnCancel=True)
        if only:
            context.clearJobTags()
        context.addJobTag(tag)
        context.setLocalProperty("spark.scheduler.pool", pool)

    def cancel(self, connector: str, task: int) -> None:
        """Cancels the task's running jobs, if any. Safe to call from any thread."""
        self.cancel_tag(job_tag(connector, task))

    def cancel_tag(self, tag: str) -> None:
        """Cancels the running jobs tagged ``tag``, if any. Safe to call from any thread."""
        if self._context is None:
            return
        try:
            self.context.cancelJobsWithTag(tag)
        except Exception:
            log.warning("spark_cancel_failed", tag=tag, exc_info=True)

    def new_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        """A thread whose JVM side is released when it ends (pinned-thread mode)."""
        from pyspark import InheritableThread

        thread: threading.Thread = InheritableThread(target)
        thread.name = name
        thread.daemon = True
        return thread

    def stop(self) -> None:
        with self._lock:
            context, self._context = self._context, None
        if context is not None:
            context.stop()
            log.info("spark_stopped")
