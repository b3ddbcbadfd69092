"""The worker's ``ConnectorHost`` in the Spark driver's JVM, reached through py4j, and the
Java connector's exception its error answers become (``runtime.java_connectors`` builds the
stand-ins on them).

Each call runs on a thread of the gateway's calls and is waited for no longer than the
caller's deadline (``kernel.deadline``): past it the call is an UnavailableError and the
JVM's work goes on; an answer that made something (an instance) after its caller stopped
waiting is undone once it comes, when the caller says how.

Public API
----------
``ConnectorHostLink``
    The host, opened by the first call.
``JavaConnectorError``
    A Java connector's exception, its root cause first.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import structlog

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import ConnectError, FailedPreconditionError, UnavailableError
from connect_grpc.kernel.traces import CarriesTrace
from connect_grpc.runtime.java_plugins import (
    _driver_jvm,
    _java_message,
    _run_in_thread,
    _wait,
    required_driver_class,
)

__all__ = ["CONNECTOR_HOST_CLASS", "ConnectorHostLink", "JavaConnectorError"]

log = structlog.get_logger(__name__)

#: The py4j path of ``jvm/``'s connector host.
CONNECTOR_HOST_CLASS = "io.connectgrpc.jvm.connectors.ConnectorHost"


class JavaConnectorError(CarriesTrace, Exception):
    """A Java connector's exception (or the JVM host's, for it). Its message's first line
    is the root cause, ``<java class>: <message>``; the Java stack trace follows.

    Args:
        error: the host's error answer (``class``, ``message``, ``root_class``,
            ``root_message``, ``trace``).
    """

    def __init__(self, error: Mapping[str, Any]) -> None:
        self.java_class = str(error.get("class") or "")
        self.java_message = error.get("message")
        self.root_class = str(error.get("root_class") or self.java_class)
        self.root_message = error.get("root_message")
        self.connect_exception = bool(error.get("connect_exception"))
        self.java_trace = str(error.get("trace") or "").rstrip("\n")
        root = self.root_class if self.root_message is None else (
            f"{self.root_class}: {self.root_message}"
        )
        self.headline = root.splitlines()[0] if root else "a Java exception"
        super().__init__(f"{self.headline}\n{self.java_trace}" if self.java_trace else root)

    @property
    def summary(self) -> str:
        """``<java class>: <message>`` of the exception itself (not its root cause)."""
        if self.java_message is None:
            return self.java_class
        return f"{self.java_class}: {self.java_message}"


class ConnectorHostLink:
    """A worker's ``ConnectorHost`` in the Spark driver's JVM, opened by the first call.

    Args:
        host_properties: the worker properties the JVM's plugin scan is opened with (the
            catalogue's: ``java.plugin_path.host_worker_properties``).
        worker_settings: what the source connectors' offsets reader needs of the worker
            (``bootstrap.servers``, ``offset.storage.topic``, ...; see the Java side's
            ``OffsetReaders``).
        jvm: the JVM view to reach the host through (the driver's by default).
    """

    def __init__(
        self,
        host_properties: Mapping[str, str],
        worker_settings: Mapping[str, Any],
        jvm: Callable[[], Any] = _driver_jvm,
    ) -> None:
        self._properties = dict(host_properties)
        self._settings = dict(worker_settings)
        self._jvm = jvm
        self._lock = threading.Lock()
        self._opened: Any = None

    def _host(self) -> Any:
        """The host, opened once (it shares the JVM's scan of plugin.path, so the first
        open may wait for it: within the caller's deadline)."""
        with self._lock:
            opened = self._opened
            if opened is None:
                jvm = self._jvm()
                opened = self._opened = _run_in_thread(
                    lambda: self._open(jvm), "java-connector-host-open"
                )
        host = _wait(opened, deadline.remaining(), "the scan of plugin.path's Java plugins")
        return host

    def _open(self, jvm: Any) -> Any:
        entry = required_driver_class(
            jvm, CONNECTOR_HOST_CLASS, "the Java connectors of plugin.path cannot run",
            method="open",
        )
        try:
            return entry.open(json.dumps(self._properties), json.dumps(self._settings))
        except Exception as exc:
            with self._lock:
                self._opened = None  # a retry opens it again
            raise FailedPreconditionError(
                f"the Java connectors of plugin.path ({self._properties.get('plugin.path')}) "
                f"cannot run: {_java_message(exc)}"
            ) from exc

    def call(
        self,
        what: str,
        invoke: Callable[[Any], str],
        undo_late: Callable[[Any, Any], object] | None = None,
    ) -> Any:
        """``invoke(host)``'s answer (its ``ok`` value), waited for within the caller's
        deadline. Raises JavaConnectorError for the host's error answer, UnavailableError
        past the deadline (the JVM's work goes on), ConnectError if the gateway fails.
        ``undo_late(host, value)``: what undoes an answer that came after the caller stopped
        waiting, once it comes (an error answer made nothing to undo)."""
        host = self._host()
        answer = _run_in_thread(lambda: str(invoke(host)), "java-connector-call")
        try:
            body = _wait(answer, deadline.remaining(), what)
        except UnavailableError:
            if undo_late is not None:
                answer.add_done_callback(functools.partial(_undo_late, host, undo_late, what))
            raise
        except ConnectError:
            raise
        except Exception as exc:
            raise ConnectError(f"{what} failed in the worker's JVM: {_java_message(exc)}") from exc
        return _ok(body)

    def next_event(self, handle: int, wait_ms: int) -> Mapping[str, Any] | None:
        """The next event of a connector instance's context, waiting in the JVM at most
        ``wait_ms`` (the relay's own thread calls it: it is bounded by that wait)."""
        host = self._host()
        event: Mapping[str, Any] | None = _ok(str(host.nextEvent(handle, wait_ms)))
        return event

    def plugin_metrics(self, handle: int) -> list[Mapping[str, Any]]:
        """The metrics a connector instance registered (KIP-877) that have a number for a
        value, ``{"name", "description", "tags", "value"}`` each (the relay's thread calls
        it: the JVM reads its registry, not under the instance's lock, so a call in
        progress on the connector does not hold it up)."""
        host = self._host()
        metrics: list[Mapping[str, Any]] = _ok(str(host.pluginMetrics(handle))) or []
        return metrics

    def close(self) -> None:
        """Releases every instance and stops the offsets readers (once Spark's driver has
        gone, there is nothing left to close)."""
        with self._lock:
            opened, self._opened = self._opened, None
        if opened is None or not opened.done() or opened.exception() is not None:
            return
        try:
            self._jvm()
        except ConnectError:
            return  # Spark's driver stopped: its JVM took the host with it
        try:
            opened.result().close()
        except Exception as exc:
            log.warning("java_connector_host_not_closed", error=_java_message(exc))


def _undo_late(
    host: Any, undo: Callable[[Any, Any], object], what: str, done: Future[str]
) -> None:
    """Undoes, on a call thread, what the late answer of ``what`` made (its caller had
    stopped waiting for it, and so never learnt of it)."""
    if done.exception() is not None:
        return
    try:
        value = _ok(done.result())
    except (JavaConnectorError, ValueError):
        return

    def run() -> None:
        try:
            undo(host, value)
        except Exception as exc:  # the JVM goes on with it; nothing else to undo here
            log.warning("java_connector_late_answer_not_undone", what=what,
                        error=str(exc).splitlines()[0] if str(exc) else repr(exc))

    _run_in_thread(run, "java-connector-undo")


def _ok(body: str) -> Any:
    parsed = json.loads(body)
    if "error" in parsed:
        raise JavaConnectorError(parsed["error"])
    return parsed.get("ok")
