"""The distributed worker with Kafka Connect's Java plugins that the modules of
``tests/conftest.py``'s ``SHARED_JAVA_WORKER_MODULES`` share (``tests/integration/conftest.py``'s
``shared_java_worker``), rather than start one each: a start is mostly Spark's and the scan
of ``plugin.path``, tens of seconds on a busy machine.

Its ``plugin.path`` holds the plugins ``make install`` fetched and every plugin those modules
compile (each module's ``build_plugins``, in one directory of plugins): whichever of them a
session runs, the worker is the same. Its properties are the union of what the modules asked
of a worker of their own, none of which changes what another module checks:

- String key and value converters (``test_java_tasks_grpc``, ``test_java_task_reports``; the
  others name their converters in their connectors' configs where records flow);
- ``offset.flush.interval.ms=1000``: Kafka's worker commits offsets every second, not every
  60 s, for the modules that wait for committed offsets;
- ``task.shutdown.graceful.timeout.ms`` (``test_java_plugin_bad_inputs``' stuck task);
- a metrics endpoint (``test_java_task_reports``), read by :func:`metrics_port`.

``test_debezium_validation`` asks for no property of its own: only the fetched plugins
(Debezium's among them).

The modules keep their connectors apart by name (a random suffix each) and delete them; what
one leaves is deleted when it ends (:class:`conftest.SharedWorkers`). Checks that read the
worker's log pick their connector's lines, or lines the worker writes once, as it starts."""

from __future__ import annotations

from pathlib import Path

from connect_grpc.kafka.ports import free_port
from connect_grpc.testing.cluster import WorkerProcess
from tests.integration.java_builds import java_worker

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: The worker's ``task.shutdown.graceful.timeout.ms`` (Kafka's default is 5000).
GRACEFUL_MS = 2000
METRICS_LISTENER = "metrics.listener"


def make_worker(work: Path, bootstrap: str) -> WorkerProcess:
    """The worker (not started), the modules' plugins compiled under ``work``; its plugin
    directories are ``work/plugins/<name>`` and its own files ``work/worker``."""
    # here, not at the top: the test modules import the integration conftest, which
    # imports this module
    from tests.integration import (
        test_java_auto_restart,
        test_java_connectors,
        test_java_plugin_bad_inputs,
        test_java_task_reports,
    )

    plugins = work / "plugins"
    for module in (test_java_connectors, test_java_auto_restart, test_java_plugin_bad_inputs,
                   test_java_task_reports):
        module.build_plugins(work / module.__name__.rsplit(".", 1)[-1], plugins)
    return java_worker(work, bootstrap, "java-shared", [plugins], {
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
        # Kafka's worker commits offsets every offset.flush.interval.ms (60 s by default)
        "offset.flush.interval.ms": "1000",
        "task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS),
        METRICS_LISTENER: f"http://127.0.0.1:{free_port()}",
    })


def metrics_port(process: WorkerProcess) -> int:
    """The port of the worker's metrics endpoint, from its properties file."""
    for line in process.properties_path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key == METRICS_LISTENER:
            return int(value.rsplit(":", 1)[1])
    raise AssertionError(f"{process.properties_path} has no {METRICS_LISTENER}")
