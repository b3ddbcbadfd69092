"""The Java plugins of ``plugin.path`` in the worker's Spark driver JVM, through py4j.

``jvm/``'s ``JavaPluginHost`` (Kafka Connect 4.4.0's ``Plugins`` and herder validation) runs in
the JVM PySpark already started for the worker's one SparkSession: the driver is given the
project's jar and its runtime jars through ``spark.jars`` (:func:`java_spark_jars`, which
:func:`~connect_grpc.runtime.spark.spark_conf` adds), and nothing else of the JVM side starts
until a call needs the catalogue. Then one scan of the path runs in the background; calls
wait for it, and for a validation, no longer than the time they are given (UnavailableError
past it: the JVM's work goes on, and its result serves the retry).

Only strings cross the gateway (JSON in and out), so that nothing here depends on Kafka's
classes. The driver's JVM is found through PySpark's active context (the worker's one
SparkSession, ``runtime.spark``), so that the herder, which owns this catalogue, needs no
handle on the worker's Spark runtime.

Public API
----------
``java_spark_jars(config: WorkerConfig) -> tuple[str, ...]``
    The jars the driver needs when ``plugin.path`` holds Java plugins; none otherwise.
``java_spark_archives(config: WorkerConfig) -> tuple[str, ...]``
    The archives that ship those plugins to a cluster's executors (``spark.archives``).
``JvmPluginCatalogue``
    The catalogue (``herder.java_plugins.JavaCatalogue``), opened lazily; also the worker's
    Java config providers (``config_providers.java.JavaConfigLookup``).
``java_catalogue_for(config: WorkerConfig) -> JvmPluginCatalogue | None``
    The worker's catalogue; None when ``plugin.path`` holds no Java plugins.
``preview_converter_properties(config: WorkerConfig) -> dict[str, str]``
    The worker's converter settings a Java connector's preview falls back on.
"""

from __future__ import annotations

import atexit
import functools
import json
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Generic, TypeVar

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.providers import ConfigProviderError, ConfigValues
from connect_grpc.config_providers.specs import ProviderSpec
from connect_grpc.java.jvm_build import JvmNotBuiltError
from connect_grpc.java.plugin_path import (
    driver_jars,
    host_worker_properties,
    java_plugin_entries,
    unreadable_archives,
)
from connect_grpc.java.shipped_plugins import pack_plugin_entries
from connect_grpc.kernel.errors import ConnectError, FailedPreconditionError, UnavailableError

log = structlog.get_logger(__name__)

#: The py4j path of ``jvm/``'s entry point.
HOST_CLASS = "io.connectgrpc.jvm.plugins.JavaPluginHost"
#: How long a caller is told to wait before retrying a call that outlived its deadline.
RETRY_AFTER_S = 2.0
#: How long a thread of the gateway's calls waits for the next one before it ends.
CALL_THREAD_IDLE_S = 60.0

T = TypeVar("T")


def java_spark_jars(config: WorkerConfig) -> tuple[str, ...]:
    """The jars the Spark driver needs to host the plugin catalogue: ``jvm/``'s jar and its
    runtime jars (slf4j's left out), when ``plugin.path`` holds Java plugins; none otherwise
    (a worker without them pays nothing). An unbuilt ``jvm/`` is logged, and the catalogue's
    calls then say so."""
    entries = java_plugin_entries(config.plugin_path)
    if not entries:
        return ()
    try:
        return tuple(str(jar) for jar in driver_jars())
    except JvmNotBuiltError as exc:
        log.warning("java_plugins_unavailable", plugin_path=[str(e) for e in entries],
                    reason=str(exc))
        return ()


def java_spark_archives(config: WorkerConfig) -> tuple[str, ...]:
    """The ``spark.archives`` items that ship the Java plugins of ``plugin.path`` to a
    cluster's executors (``connect_grpc.java.shipped_plugins``): each entry holding Java
    plugins packed into a zip in a directory of this process's own, removed when it exits
    (Spark serves the zips from there for as long as the application runs, to executors that
    join later too). None when ``plugin.path`` holds no Java plugins. For a cluster master
    only: in local mode the executors are the driver's JVM, which reads the path itself."""
    entries = java_plugin_entries(config.plugin_path)
    if not entries:
        return ()
    scanned = host_worker_properties(config.raw, entries)["plugin.path"].split(",")
    into = Path(tempfile.mkdtemp(prefix="connect-grpc-plugins-"))
    atexit.register(shutil.rmtree, into, ignore_errors=True)
    started = time.monotonic()
    items = pack_plugin_entries(scanned, into)
    log.info("java_plugins_shipped", plugin_path=scanned,
             archives=[item.partition("#")[0] for item in items],
             elapsed_s=round(time.monotonic() - started, 2))
    return items


def _driver_jvm() -> Any:
    """The JVM view of the worker's SparkContext; UnavailableError before it has started."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or context._jvm is None:
        raise UnavailableError(
            "the worker's Spark driver, which hosts the Java plugins of plugin.path, is not "
            "started yet: retry once the worker is ready", retry_after_seconds=RETRY_AFTER_S,
        )
    return context._jvm


def driver_class(jvm: Any, path: str) -> Any | None:
    """The class ``path`` in the driver's JVM, or None when it is not on its classpath
    (py4j answers a package for a class it cannot find)."""
    entry = jvm
    for part in path.split("."):
        entry = getattr(entry, part)
    return entry if type(entry).__name__ == "JavaClass" else None


def required_driver_class(
    jvm: Any,
    path: str,
    without_it: str,
    method: str | None = None,
    error: type[ConnectError] = FailedPreconditionError,
) -> Any:
    """The class ``path`` of ``jvm/``'s jar in the driver's JVM (with ``method``, if named);
    else ``error`` saying that jvm/ was not built, and so ``without_it``."""
    entry = driver_class(jvm, path)
    if entry is None or (method is not None and not callable(getattr(entry, method, None))):
        raise error(
            f"{path} is not on the Spark driver's classpath: jvm/ was not built when the "
            f"worker started (`make install` builds it), so {without_it}"
        )
    return entry


class _CallThreads:
    """The threads the gateway's calls run on, kept for the next call.

    Under PySpark's pinned-thread mode a Python thread's first call opens a gateway
    connection of its own (a socket, the gateway's handshake and a JVM thread serving it),
    closed when the thread ends: a thread per call paid that on every call, several times
    over in a connector's create. A call goes to an idle thread, or to a new one when none
    is idle, so that a call that never returns holds only its own thread; a thread idle for
    ``idle_s`` ends. No Spark job runs on these threads, so they need none of the Spark
    local properties PySpark's InheritableThread copies from the caller."""

    def __init__(self, idle_s: float = CALL_THREAD_IDLE_S) -> None:
        self._idle_s = idle_s
        self._lock = threading.Lock()
        #: Threads waiting for a call that no call has claimed yet.
        self._idle = 0
        self._calls: queue.SimpleQueue[_Call[Any]] = queue.SimpleQueue()

    def submit(self, work: Callable[[], T], name: str) -> Future[T]:
        """``work``'s outcome, run on an idle thread or a new one named ``name``."""
        call = _Call(work, Future(), name)
        with self._lock:
            if self._idle > 0:
                self._idle -= 1  # claimed: a waiting thread takes it off the queue
                self._calls.put(call)
                return call.future
        threading.Thread(target=self._serve, args=(call,), name=name, daemon=True).start()
        return call.future

    def _serve(self, call: _Call[Any]) -> None:
        current = threading.current_thread()
        while True:
            current.name = call.name
            outcome = call.run()
            current.name = "java-plugin-call-idle"
            with self._lock:
                self._idle += 1
            # idle before the caller learns the outcome: its next call finds this thread
            outcome()
            while True:
                try:
                    call = self._calls.get(timeout=self._idle_s)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:  # unclaimed: this thread may end
                            self._idle -= 1
                            return
                    # every waiting thread is claimed, this one too: its call is queued


class _Call(Generic[T]):
    """One call of :class:`_CallThreads`: its work, its future and its thread's name."""

    def __init__(self, work: Callable[[], T], future: Future[T], name: str) -> None:
        self.work = work
        self.future = future
        self.name = name

    def run(self) -> Callable[[], None]:
        """Runs the work; returns what hands its outcome to the future."""
        if not self.future.set_running_or_notify_cancel():
            return lambda: None
        try:
            result = self.work()
        except BaseException as exc:
            return functools.partial(self.future.set_exception, exc)
        return functools.partial(self.future.set_result, result)


_CALL_THREADS = _CallThreads()


def _run_in_thread(work: Callable[[], T], name: str) -> Future[T]:
    """``work`` on a thread of the gateway's calls (``_CallThreads``): a py4j call cannot be
    interrupted, so its caller waits on the future for as long as it may and leaves the call
    to finish."""
    return _CALL_THREADS.submit(work, name)


def _wait(future: Future[T], timeout_s: float, what: str) -> T:
    try:
        return future.result(timeout=max(0.0, timeout_s))
    except FutureTimeout:
        raise UnavailableError(
            f"{what} has not finished within the call's deadline; it goes on in the worker's "
            f"JVM: retry in a few seconds", retry_after_seconds=RETRY_AFTER_S,
        ) from None


class JvmPluginCatalogue:
    """Kafka Connect's catalogue of the Java plugins of ``plugin.path``, in the driver's JVM.

    Args:
        host_properties: the worker properties the JVM's host is opened with
            (``java.plugin_path.host_worker_properties``).
        jvm: the JVM view to reach the host through (the driver's by default).
        converter_properties: the worker's converter settings a preview falls back on
            (:func:`preview_converter_properties`), as a Java task's Kafka worker does.
    """

    def __init__(
        self,
        host_properties: Mapping[str, str],
        jvm: Callable[[], Any] = _driver_jvm,
        converter_properties: Mapping[str, str] | None = None,
    ) -> None:
        self._properties = dict(host_properties)
        self._converters = dict(converter_properties or {})
        self._jvm = jvm
        self._lock = threading.Lock()
        self._opened: Future[tuple[Any, Mapping[str, Any]]] | None = None

    def _open(self) -> Future[tuple[Any, Mapping[str, Any]]]:
        """The scan, started by the first call that needs it."""
        with self._lock:
            if self._opened is None:
                jvm = self._jvm()  # not started yet: no scan to remember, the caller retries
                self._opened = _run_in_thread(lambda: self._scan(jvm), "java-plugin-scan")
            return self._opened

    def _scan(self, jvm: Any) -> tuple[Any, Mapping[str, Any]]:
        started = time.monotonic()
        log.info("java_plugins_scanning", plugin_path=self._properties["plugin.path"],
                 plugin_discovery=self._properties.get("plugin.discovery", "hybrid_warn"))
        try:
            entry = required_driver_class(
                jvm, HOST_CLASS, f"the Java plugins of plugin.path "
                f"({self._properties['plugin.path']}) cannot be read", method="shared",
            )
            # the JVM's one scan of this path, which its connector instances share
            host = entry.shared(json.dumps(self._properties))
            listing = json.loads(str(host.listPlugins()))
        except ConnectError as exc:
            log.error("java_plugins_scan_failed", error=exc.message)
            raise
        except Exception as exc:
            message = (
                f"the Java plugins of plugin.path ({self._properties['plugin.path']}) could not "
                f"be read by Kafka Connect's plugin scan: {_java_message(exc)}"
            )
            log.error("java_plugins_scan_failed", error=message)
            raise FailedPreconditionError(message) from exc
        plugins = listing.get("plugins") or []
        log.info("java_plugins_scanned", plugins=len(plugins),
                 seconds=round(time.monotonic() - started, 1))
        return host, listing

    def listing(self, timeout_s: float) -> Mapping[str, Any]:
        return _wait(self._open(), timeout_s, "the scan of plugin.path's Java plugins")[1]

    def listing_if_ready(self) -> Mapping[str, Any] | None:
        future = self._open()
        return future.result()[1] if future.done() else None

    def validate(
        self, config: Mapping[str, str], timeout_s: float, errors_only: bool = False
    ) -> Mapping[str, Any]:
        request = json.dumps(dict(config))
        return self._host_call(
            lambda host: host.validateErrors(request) if errors_only else host.validate(request),
            timeout_s, "java-plugin-validate", "Kafka Connect's validation",
        )

    def preview(self, request: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        sent = json.dumps({**request, "worker": self._converters})
        return self._host_call(
            lambda host: host.preview(sent), timeout_s, "java-plugin-preview",
            "the Java pipeline's preview",
        )

    def _host_call(
        self, call: Callable[[Any], Any], timeout_s: float, thread: str, what: str
    ) -> Mapping[str, Any]:
        """``call`` of the opened host (once the scan ended) on a thread of its own, its
        JSON answer within ``timeout_s`` in all; the host answers its own failures, so an
        exception here is the gateway's."""
        until = time.monotonic() + timeout_s
        host, _ = _wait(self._open(), timeout_s, "the scan of plugin.path's Java plugins")
        answer = _run_in_thread(lambda: str(call(host)), thread)
        try:
            body = _wait(answer, until - time.monotonic(), what)
        except ConnectError:
            raise
        except Exception as exc:
            raise ConnectError(f"{what} in the worker's JVM failed: {_java_message(exc)}") from exc
        parsed: Mapping[str, Any] = json.loads(body)
        return parsed

    def open_config_provider(self, spec: ProviderSpec, timeout_s: float) -> None:
        self._config_provider_call("openConfigProvider", spec, {}, timeout_s)

    def config_data(
        self, spec: ProviderSpec, path: str, keys: Collection[str], timeout_s: float
    ) -> ConfigValues:
        body = self._config_provider_call(
            "configData", spec, {"path": path, "keys": sorted(keys)}, timeout_s)
        data, ttl = body.get("data"), body.get("ttl")
        if not isinstance(data, dict):
            raise ConfigProviderError(
                f"provider {spec.name!r} ({spec.class_name}) answered no data")
        return ConfigValues({str(key): str(value) for key, value in data.items()},
                            int(ttl) if isinstance(ttl, int) and ttl >= 0 else None)

    def _config_provider_call(
        self, method: str, spec: ProviderSpec, more: Mapping[str, Any], timeout_s: float
    ) -> Mapping[str, Any]:
        """A call of the JVM host's ``method`` about the provider ``spec``; its error answer
        a ConfigProviderError naming the provider (never a value: Kafka's messages name
        classes, paths and keys)."""
        until = time.monotonic() + timeout_s
        host, _ = _wait(self._open(), timeout_s, "the scan of plugin.path's Java plugins")
        request = json.dumps({"provider": spec.name, "class": spec.class_name,
                              "params": dict(spec.params), **more})
        answer = _run_in_thread(lambda: str(getattr(host, method)(request)),
                                f"java-config-provider-{spec.name}")
        try:
            body: Mapping[str, Any] = json.loads(
                _wait(answer, until - time.monotonic(), f"config provider {spec.name!r}"))
        except ConnectError:
            raise
        except Exception as exc:  # the gateway's own failure: the host answers its errors
            raise ConfigProviderError(
                f"provider {spec.name!r} ({spec.class_name}): {_java_message(exc)}") from None
        error = body.get("error")
        if isinstance(error, Mapping):
            raise ConfigProviderError(
                f"provider {spec.name!r} ({spec.class_name}): {_error_text(error)}")
        return body


def _error_text(error: Mapping[str, Any]) -> str:
    """The host's error answer: Java's class and message, then its root cause's."""
    text = f"{error.get('class')}: {error.get('message')}"
    cause = error.get("cause")
    return f"{text}: {cause}" if cause else text


def _java_message(exc: BaseException) -> str:
    """A py4j error's Java exception (class and message), else the Python one's text."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return f"{java.getClass().getName()}: {java.getMessage()}"
        except Exception:  # the JVM is going away: the Python text is all there is
            pass
    return f"{type(exc).__name__}: {exc}"


def java_catalogue_for(config: WorkerConfig) -> JvmPluginCatalogue | None:
    """The worker's Java plugin catalogue, or None when ``plugin.path`` holds no Java
    plugins. Builds nothing in the JVM: the first call that needs it does."""
    entries = java_plugin_entries(config.plugin_path)
    if not entries:
        return None
    for archive, reason in unreadable_archives(entries):
        log.error("java_plugin_jar_unreadable", jar=str(archive), error=reason,
                  consequence="Kafka's plugin loader finds no class in it: the plugins it "
                  "holds are neither listed nor loadable")
    return JvmPluginCatalogue(
        host_worker_properties(config.raw, entries),
        converter_properties=preview_converter_properties(config),
    )


#: The worker's converter settings, in Kafka Connect's names (a Java task's Kafka worker is
#: given the same: ``runtime.java_tasks.kafka_worker_properties``).
_CONVERTERS = ("key.converter", "value.converter", "header.converter")
#: A key or value converter the worker leaves unset passes bytes through for Java tasks
#: (``runtime.java_tasks.PASS_THROUGH_CONVERTER``); the header converter is Kafka's default.
_PASS_THROUGH_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"


def preview_converter_properties(config: WorkerConfig) -> dict[str, str]:
    """The worker's converters and their settings, as a Java task's Kafka worker has them:
    what a preview of a Java connector uses where its config names no converter."""
    props = {
        key: value
        for key, value in config.raw.items()
        if key in _CONVERTERS or key.startswith(tuple(f"{name}." for name in _CONVERTERS))
    }
    for name in _CONVERTERS[:2]:
        if config.converter_class(name) is None:
            props[name] = _PASS_THROUGH_CONVERTER
    return props
