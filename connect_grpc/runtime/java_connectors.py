"""Kafka Connect's Java connectors as Python connectors: stand-ins whose instances live in
the worker's Spark driver JVM.

``jvm/``'s ``ConnectorHost`` (package ``io.connectgrpc.jvm.connectors``) makes each Java
connector instance with Kafka's ``Plugins`` (the JVM's one scan of ``plugin.path``, shared
with the catalogue) in its plugin's class loader and drives it as Kafka's worker does. Here,
:class:`JavaSourceConnector` and :class:`JavaSinkConnector` implement the Python Connector
API by calling it through py4j (``runtime.java_connector_link``), so that the worker and
the herder run a Java connector exactly as a Python one (``herder.java_plugins`` routes its
names here). Only strings, ints
and booleans cross the gateway (JSON for structures). Each call runs on a thread of its own
and is waited for no longer than the caller's deadline (``kernel.deadline``): past it the
call is an UnavailableError, and the JVM's work goes on (``runtime.java_plugins``' helpers).

The Java instance of a stand-in lives from its ``start`` to its ``stop`` (a pause, a stop and
a restart each end it, and the next ``start`` makes a new one, initialized with its context
as Kafka's worker does); while it lives, a daemon thread relays its context's
``requestTaskReconfiguration`` and ``raiseError`` to the Python context, and another reads,
once a second, the metrics the instance registered through its context's ``PluginMetrics``
(KIP-877) into the Python context's, which the worker exports as a Python connector's (the
JVM runs the connector's gauges inside that read: one that blocks holds up no event); they
leave the scrape when the instance is released. What Kafka's worker
asks of a fresh instance (``alterOffsets``, ``exactlyOnceSupport``,
``canDefineTransactionBoundaries``, the version) makes one in the JVM for the call. A Java
exception becomes a :class:`JavaConnectorError`, whose message opens on its root cause
(``<java class>: <message>``) and goes on with the Java stack trace: a FAILED status shows
both (``kernel.traces.CarriesTrace``).

A Java connector is validated by Kafka's own validation through the catalogue
(``herder.java_plugins``): ``config_def`` and ``validate`` of a stand-in refuse to be used.

Public API
----------
``JvmConnectors``
    The factory of stand-ins (``herder.java_plugins.JavaConnectorFactory``) of a worker.
``JavaSourceConnector``, ``JavaSinkConnector``
    The stand-ins' classes (one subclass per Java class, named as it).
``JavaConnectorError``, ``JavaOffsetsRefusedError``
    A Java connector's exception; a connector's refusal of offsets (KIP-875).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, cast

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.connectors.api import (
    AlterOffsetsUnsupportedError,
    Connector,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SourceConnector,
    Task,
)
from connect_grpc.java.plugin_path import host_worker_properties, java_plugin_entries
from connect_grpc.kernel.configdef import ConfigDef
from connect_grpc.kernel.domain import ConnectorType, OffsetMap
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.runtime.java_connector_link import (
    ConnectorHostLink,
    JavaConnectorError,
)
from connect_grpc.runtime.java_connector_metrics import JavaConnectorMetrics
from connect_grpc.runtime.java_plugins import _run_in_thread
from connect_grpc.runtime.java_task_classes import JavaSinkTask, JavaSourceTask

__all__ = [
    "ConnectorHostLink",
    "JavaConnectorError",
    "JavaOffsetsRefusedError",
    "JavaSinkConnector",
    "JavaSourceConnector",
    "JvmConnectors",
]

log = structlog.get_logger(__name__)

#: How long one look of the relay waits in the JVM for an event of a connector's context.
EVENT_WAIT_MS = 1000
_UNSUPPORTED = "java.lang.UnsupportedOperationException"
#: Why a stand-in's Python validation refuses to run.
_VALIDATED_IN_JAVA = (
    "a Java connector is validated by Kafka Connect's own validation in the worker's JVM "
    "(ValidateConfig), never by the Python one"
)


class JavaOffsetsRefusedError(ValueError):
    """A Java connector's ``alterOffsets`` refused the offsets (it threw a
    ``ConnectException``, Kafka Connect's way to say they are invalid); the message is
    its exception's ``<java class>: <message>``, and ``error`` keeps its trace."""

    def __init__(self, error: JavaConnectorError) -> None:
        super().__init__(error.summary)
        self.error = error


class JavaConnector(Connector):
    """What both stand-ins share: a Java connector's class, its version range
    (``connector.plugin.version``, KIP-891), its instance in the JVM while started, and the
    relay of its context's events."""

    #: The Java class a subclass stands for (``JvmConnectors.connector_class``).
    java_class: ClassVar[str] = ""
    _factory: ClassVar[JvmConnectors]
    _task_class: ClassVar[type[Task]]

    def __init__(self, version: str | None = None) -> None:
        self._version_range = version
        self._handle: int | None = None
        #: The version the JVM's instance reports (Kafka's status shows it).
        self._version: str | None = None
        self._lock = threading.Lock()
        #: The instance's own metrics (KIP-877), exported through the Python context's.
        self._own_metrics = JavaConnectorMetrics(
            self.java_class,
            lambda handle: self._link.plugin_metrics(handle),
            lambda: self.context.plugin_metrics,
        )

    @property
    def _link(self) -> ConnectorHostLink:
        return self._factory.link

    def version(self) -> str:
        if self._version is not None:
            return self._version
        return str(self._factory.describe(self.java_class, self._version_range)["version"])

    def config_def(self) -> ConfigDef:
        raise TypeError(_VALIDATED_IN_JAVA)

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        raise TypeError(_VALIDATED_IN_JAVA)

    def task_class(self) -> type[Task]:
        return self._task_class

    def start(self, config: Mapping[str, str]) -> None:
        """Makes the Java instance, initializes it with its context and starts it (a failed
        start releases it again), then starts the relay of its events (the JVM keeps them
        meanwhile); starts an instance made already (and still held) again."""
        name = config.get("name") or self.java_class
        with self._lock:
            if self._handle is None:
                # one round trip through the gateway, on the path of every create: the JVM
                # releases an instance whose start failed, and one answered past the
                # caller's deadline is released here once it comes
                body = json.dumps(dict(config))
                created = self._link.call(
                    f"the start of the Java connector {self.java_class}",
                    lambda host: host.createAndStart(
                        name, self.java_class, self._version_range, body
                    ),
                    undo_late=lambda host, made: host.release(int(made["handle"])),
                )
                self._handle = int(created["handle"])
                self._version = str(created["version"])
                self._own_metrics.follow(self._handle)
                _relay(self, self._handle)
                metrics, followed = self._own_metrics, self._handle
                _run_in_thread(lambda: metrics.keep_reading(followed),
                               f"java-connector-metrics-{followed}")
                return
            handle = self._handle
        try:
            self._link.call(
                f"the start of the Java connector {self.java_class}",
                lambda host: host.start(handle, json.dumps(dict(config))),
            )
        except BaseException:
            self._release()
            raise

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        handle = self._started_handle()
        configs: list[dict[str, str]] = self._link.call(
            f"the task configs of the Java connector {self.java_class}",
            lambda host: host.taskConfigs(handle, max_tasks),
        )
        return configs

    def stop(self, connector_deleted: bool = False) -> None:
        """Stops the Java instance (Kafka's ``stop()`` has no ``connector_deleted``) and
        releases it: the next start makes a new one."""
        with self._lock:
            handle = self._handle
        if handle is None:
            return
        try:
            self._link.call(
                f"the stop of the Java connector {self.java_class}",
                lambda host: host.stop(handle),
            )
        finally:
            self._release()

    def _started_handle(self) -> int:
        with self._lock:
            handle = self._handle
        if handle is None:
            raise ConnectError(f"the Java connector {self.java_class} is not started")
        return handle

    def _release(self) -> None:
        """Forgets the Java instance (the JVM stops it first if it is still started); its
        relay ends once the JVM answers that it is released."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return
        self._own_metrics.release(handle)
        try:
            self._link.call(
                f"the release of the Java connector {self.java_class}",
                lambda host: host.release(handle),
            )
        except Exception as exc:  # the JVM goes on with it; nothing else to undo here
            log.warning("java_connector_not_released", java_class=self.java_class,
                        error=str(exc).splitlines()[0])

    def _fresh(
        self, what: str, invoke: Callable[[Any, str], str], config: Mapping[str, str]
    ) -> Any:
        """A call on a fresh Java instance, made for it, with ``config`` (JSON) given."""
        body = json.dumps(dict(config))
        return self._link.call(
            f"{what} of the Java connector {self.java_class}", lambda host: invoke(host, body)
        )

    def _alter_offsets(self, method: str, config: Mapping[str, str], offsets: Any) -> bool:
        """KIP-875's hook on a fresh instance; its exceptions as ``_vet`` takes them."""
        body = json.dumps(offsets)
        try:
            answer = self._fresh(
                "alterOffsets",
                lambda host, cfg: getattr(host, method)(
                    self.java_class, self._version_range, cfg, body
                ),
                config,
            )
        except JavaConnectorError as exc:
            log.warning("alter_offsets_refused", connector=config.get("name"),
                        java_class=self.java_class, error=SECRETS.redact(exc.summary),
                        trace=SECRETS.redact(exc.java_trace))
            if exc.java_class == _UNSUPPORTED:
                raise AlterOffsetsUnsupportedError(exc.summary) from exc
            if exc.connect_exception:
                raise JavaOffsetsRefusedError(exc) from exc
            raise
        return bool(answer)


def _relay(connector: JavaConnector, handle: int) -> None:
    """Starts the daemon thread that hands the Java context's events of ``handle`` to the
    Python context, until the JVM says the instance is released."""

    def run() -> None:
        metrics = connector._own_metrics
        failures = 0
        while True:
            try:
                event = connector._link.next_event(handle, EVENT_WAIT_MS)
                failures = 0
            except Exception as exc:
                failures += 1
                if failures >= 3:  # the JVM is gone (the worker stops): nothing left to relay
                    log.warning("java_connector_events_lost", java_class=connector.java_class,
                                error=str(exc).splitlines()[0] if str(exc) else repr(exc))
                    metrics.release(handle)
                    return
                time.sleep(1.0)
                continue
            if event is not None and event.get("event") == "released":
                metrics.release(handle)
                return
            if event is None:
                continue
            kind = event.get("event")
            try:
                if kind == "reconfigure":
                    connector.context.request_task_reconfiguration()
                elif kind == "error":
                    connector.context.raise_error(JavaConnectorError(event.get("error") or {}))
            except Exception:
                log.warning("java_connector_event_not_handled", java_class=connector.java_class,
                            event=kind, exc_info=True)

    _run_in_thread(run, f"java-connector-events-{handle}")


class JavaSourceConnector(JavaConnector, SourceConnector):
    """Stands for a Java source connector."""

    _task_class = JavaSourceTask

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        answer = self._fresh(
            "exactlyOnceSupport",
            lambda host, cfg: host.exactlyOnceSupport(self.java_class, self._version_range, cfg),
            config,
        )
        return None if answer is None else ExactlyOnceSupport[str(answer)]

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        answer = self._fresh(
            "canDefineTransactionBoundaries",
            lambda host, cfg: host.canDefineTransactionBoundaries(
                self.java_class, self._version_range, cfg
            ),
            config,
        )
        # Kafka's herder takes anything but SUPPORTED (null included) as unsupported
        return (ConnectorTransactionBoundaries.SUPPORTED if answer == "SUPPORTED"
                else ConnectorTransactionBoundaries.UNSUPPORTED)

    def alter_offsets(
        self,
        config: Mapping[str, str],
        offsets: Sequence[tuple[OffsetMap, OffsetMap | None]],
    ) -> bool:
        entries = [
            {"partition": dict(partition), "offset": None if offset is None else dict(offset)}
            for partition, offset in offsets
        ]
        return self._alter_offsets("alterSourceOffsets", config, entries)


class JavaSinkConnector(JavaConnector, SinkConnector):
    """Stands for a Java sink connector."""

    _task_class = JavaSinkTask

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[tuple[str, int], int | None]
    ) -> bool:
        entries = [
            {"topic": topic, "partition": partition, "offset": offset}
            for (topic, partition), offset in offsets.items()
        ]
        return self._alter_offsets("alterSinkOffsets", config, entries)


class JvmConnectors:
    """The stand-ins of a worker's Java connectors (``herder.java_plugins``'
    ``JavaConnectorFactory``): one subclass of :class:`JavaSourceConnector` or
    :class:`JavaSinkConnector` per Java class, named as the Java class (its module the
    class's package), so that logs, metrics and the worker name it as Kafka Connect does.

    Args:
        link: the worker's connector host in the JVM.
    """

    def __init__(self, link: ConnectorHostLink) -> None:
        self.link = link
        self._lock = threading.Lock()
        self._classes: dict[str, type[JavaConnector]] = {}
        self._described: dict[tuple[str, str | None], Mapping[str, Any]] = {}

    def connector_class(self, java_class: str, kind: ConnectorType) -> type[Connector]:
        """The stand-in class of ``java_class`` (made once; ``kind`` chooses its base)."""
        with self._lock:
            cls = self._classes.get(java_class)
            if cls is None:
                base: type[JavaConnector] = (
                    JavaSinkConnector if kind is ConnectorType.SINK else JavaSourceConnector
                )
                package, _, simple = java_class.rpartition(".")
                cls = cast(type[JavaConnector], type(simple, (base,), {
                    "__module__": package or base.__module__,
                    "__qualname__": simple,
                    "__doc__": f"Stands for the Java connector {java_class}.",
                    "java_class": java_class,
                    "_factory": self,
                }))
                self._classes[java_class] = cls
        return cls

    def new_connector(
        self, java_class: str, kind: ConnectorType, version: str | None
    ) -> Connector:
        cls = cast(type[JavaConnector], self.connector_class(java_class, kind))
        return cls(version)

    def describe(self, java_class: str, version: str | None) -> Mapping[str, Any]:
        """``{"class", "kind", "version", "task_class"}`` of the Java class in that version,
        asked of a fresh instance once (the plugins are fixed once scanned)."""
        key = (java_class, version)
        with self._lock:
            described = self._described.get(key)
        if described is None:
            described = self.link.call(
                f"the description of the Java connector {java_class}",
                lambda host: host.describe(java_class, version),
            )
            with self._lock:
                self._described[key] = described
        return described

    def close(self) -> None:
        self.link.close()

    @classmethod
    def for_worker(
        cls, config: WorkerConfig, offsets: Mapping[str, str]
    ) -> JvmConnectors | None:
        """The worker's Java connectors; None when ``plugin.path`` holds no Java plugins.
        ``offsets``: the worker's offsets topic settings (``offset.storage.topic``,
        ``offset.storage.partitions``, ``offset.storage.replication.factor``,
        ``group.id``). Nothing starts in the JVM until a Java connector is made."""
        entries = java_plugin_entries(config.plugin_path)
        if not entries:
            return None
        settings: dict[str, Any] = {
            "bootstrap.servers": config.bootstrap_servers,
            "worker.id": config.worker_id,
            "exactly.once.source.support": config.exactly_once_source,
            "client": config.prefixed("admin."),
            **offsets,
        }
        return cls(ConnectorHostLink(host_worker_properties(config.raw, entries), settings))

