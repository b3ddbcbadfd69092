"""A Java connector's own metrics are read off the relay of its context's events, without a
JVM (a stand-in for the gateway): the JVM runs the connector's gauges inside that read, so a
gauge that blocks holds up no ``requestTaskReconfiguration`` or ``raiseError``, and an answer
the read cannot take is logged once and ends neither the relay nor the reads."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.java_plugins import JavaPlugins
from connect_grpc.kernel.domain import State, TargetState
from connect_grpc.runtime import java_connector_metrics
from connect_grpc.runtime.java_connectors import ConnectorHostLink, JvmConnectors
from tests.unit.test_java_connectors import (
    SINK_LISTING,
    FakeHost,
    FakeJvm,
    JavaClass,
    Listener,
    _error,
    _instance,
    _ok,
    _wait_for,
)
from tests.unit.test_java_plugins import POSTGRES, FakeCatalogue


class MeteredHost(FakeHost):
    """A connector host whose instances registered metrics: ``answer`` is what a read of
    them gives; while ``holding``, a read waits for ``hold`` (a gauge that blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.answer: list[dict[str, Any]] = []
        self.metric_reads = 0
        self.holding = False
        self.hold = threading.Event()

    def pluginMetrics(self, handle: int) -> str:
        self.metric_reads += 1
        if self.holding:
            self.hold.wait(30)
        return _ok(self.answer)


@pytest.fixture
def metered() -> Iterator[MeteredHost]:
    host = MeteredHost()
    yield host
    host.hold.set()  # a read still held ends with the test


def _plugins(host: MeteredHost) -> Plugins:
    factory = JvmConnectors(ConnectorHostLink(
        {"plugin.path": "/cache/plugins"}, {"offset.storage.topic": "offsets"},
        lambda: FakeJvm(JavaClass(host)),
    ))
    plugins = Plugins()
    catalogue = FakeCatalogue()
    catalogue.listing = lambda timeout_s: SINK_LISTING  # type: ignore[method-assign]
    catalogue.listing_if_ready = lambda: SINK_LISTING  # type: ignore[method-assign]
    JavaPlugins(catalogue, plugins, factory)
    return plugins


def test_a_gauge_that_blocks_holds_up_no_event_of_the_connector(metered: MeteredHost) -> None:
    metered.holding = True
    metered.events = [{"event": "reconfigure"}, {"event": "error", "error": json.loads(_error(
        "org.apache.kafka.connect.errors.ConnectException", "lost the slot"))["error"]}]
    listener = Listener()
    instance = _instance(_plugins(metered).new_connector(POSTGRES), listener)
    instance.transition(TargetState.STARTED)
    _wait_for(lambda: listener.reconfigurations == 1 and instance.state is State.FAILED)
    assert metered.metric_reads == 1 and not metered.hold.is_set()  # still held
    metered.hold.set()
    instance.shutdown(connector_deleted=False)


def test_an_answer_the_read_cannot_take_is_logged_once_and_nothing_ends(
    metered: MeteredHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(java_connector_metrics, "METRICS_INTERVAL_S", 0.01)
    metered.answer = [{"name": "polls", "description": "", "tags": {}, "value": "many"}]
    listener = Listener()
    instance = _instance(_plugins(metered).new_connector(POSTGRES), listener)
    with capture_logs() as logs:
        instance.transition(TargetState.STARTED)
        _wait_for(lambda: metered.metric_reads >= 3)  # the reads go on
        metered.events = [{"event": "reconfigure"}]
        _wait_for(lambda: listener.reconfigurations == 1)  # so does the relay
        instance.shutdown(connector_deleted=False)
    failed = [entry for entry in logs if entry["event"] == "java_connector_metrics_not_exported"]
    assert failed == [{"event": "java_connector_metrics_not_exported", "log_level": "warning",
                       "java_class": POSTGRES, "error": "ValueError"}]
