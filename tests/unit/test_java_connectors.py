"""Kafka Connect's Java connectors as Python connectors, without a JVM: which names the worker's
plugins route to a Java stand-in, the stand-in's lifecycle and calls as the JVM's connector
host answers them (a stand-in for the gateway), the relay of the Java context's events, Java
exceptions as statuses and KIP-875 refusals, bounded waits, and the refusals of a worker that
does not run Java connectors, and which configs PreviewPipeline sends to Kafka's Java
pipeline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from connect_grpc.connectors.api import AlterOffsetsUnsupportedError
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.instance_rules import ask_task_configs, tasks_max_enforced
from connect_grpc.herder.java_plugins import JavaPlugins, config_validator
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import ConnectorType, InstanceStatus, State, TargetState, TaskId
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    UnavailableError,
)
from connect_grpc.runtime.connector import ConnectorInstance
from connect_grpc.runtime.java_connectors import (
    ConnectorHostLink,
    JavaConnectorError,
    JavaOffsetsRefusedError,
    JavaSinkConnector,
    JavaSourceConnector,
    JvmConnectors,
)
from connect_grpc.runtime.java_task_classes import JavaSinkTask, JavaSourceTask
from tests.unit.test_java_plugins import FILE_SOURCE, LISTING, POSTGRES, FakeCatalogue

SINK = "io.example.JdbcSinkConnector"
SINK_LISTING: dict[str, Any] = {
    **LISTING,
    "plugins": [*LISTING["plugins"], {"class": SINK, "type": "sink", "version": "1.0",
                                       "location": "/cache/plugins/jdbc/", "config": []}],
}


def _error(cls: str, message: str, root: tuple[str, str] | None = None,
           connect_exception: bool = False) -> str:
    root_class, root_message = root or (cls, message)
    return json.dumps({"error": {
        "class": cls, "message": message, "root_class": root_class,
        "root_message": root_message, "connect_exception": connect_exception,
        "trace": f"{cls}: {message}\n\tat io.example.Thing.start(Thing.java:42)\n"
                 f"Caused by: {root_class}: {root_message}\n"
                 f"\tat io.example.Deep.call(Deep.java:7)\n",
    }})


def _ok(value: Any) -> str:
    return json.dumps({"ok": value})


class FakeHost:
    """The JVM's ConnectorHost, its methods named as Java's; ``answers`` overrides one."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.events: list[Any] = []
        self.released: set[int] = set()
        self.answers: dict[str, str] = {}
        self.block = threading.Event()
        self.blocked: set[str] = set()
        self._handles = 0

    def _call(self, name: str, *args: Any) -> str | None:
        self.calls.append((name, *args))
        if name in self.blocked:
            self.block.wait(10)
        return self.answers.get(name)

    def describe(self, java_class: str, version: str | None) -> str:
        return self._call("describe", java_class, version) or _ok(
            {"class": java_class, "kind": "source", "version": "4.3.1", "task_class": "T"})

    def create(self, name: str, java_class: str, version: str | None) -> str:
        self._handles += 1
        return self._call("create", name, java_class, version) or _ok(
            {"handle": self._handles, "class": java_class, "kind": "source", "version": "4.3.1"})

    def start(self, handle: int, config: str) -> str:
        return self._call("start", handle, json.loads(config)) or _ok(True)

    def createAndStart(
        self, name: str, java_class: str, version: str | None, config: str
    ) -> str:
        self._handles += 1
        handle = self._handles
        answer = self._call("createAndStart", name, java_class, version, json.loads(config))
        if answer is not None and "error" in json.loads(answer):
            self.released.add(handle)  # as the JVM releases an instance whose start failed
        return answer or _ok(
            {"handle": handle, "class": java_class, "kind": "source", "version": "4.3.1"})

    def taskConfigs(self, handle: int, max_tasks: int) -> str:
        return self._call("taskConfigs", handle, max_tasks) or _ok(
            [{"file": "/f", "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask"}])

    def stop(self, handle: int) -> str:
        return self._call("stop", handle) or _ok(True)

    def release(self, handle: int) -> str:
        self.released.add(handle)
        return self._call("release", handle) or _ok(True)

    def nextEvent(self, handle: int, wait_ms: int) -> str:
        if handle in self.released:
            return _ok({"event": "released"})
        if self.events:
            return _ok(self.events.pop(0))
        time.sleep(0.01)
        return _ok(None)

    def exactlyOnceSupport(
        self, java_class: str, version: str | None, config: str
    ) -> str:
        return self._call("exactlyOnceSupport", java_class, version) or _ok("SUPPORTED")

    def canDefineTransactionBoundaries(
        self, java_class: str, version: str | None, config: str
    ) -> str:
        return self._call("canDefineTransactionBoundaries", java_class, version) or _ok(None)

    def alterSourceOffsets(
        self, java_class: str, version: str | None, config: str, offsets: str
    ) -> str:
        return self._call("alterSourceOffsets", java_class, json.loads(offsets)) or _ok(True)

    def alterSinkOffsets(
        self, java_class: str, version: str | None, config: str, offsets: str
    ) -> str:
        return self._call("alterSinkOffsets", java_class, json.loads(offsets)) or _ok(False)

    def close(self) -> None:
        self.calls.append(("close",))


class JavaClass:
    """Named as py4j's class of a class found in the JVM."""

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.opened: list[tuple[dict[str, str], dict[str, Any]]] = []

    def open(self, properties: str, worker: str) -> FakeHost:
        self.opened.append((json.loads(properties), json.loads(worker)))
        return self.host


class FakeJvm:
    def __init__(self, entry: JavaClass) -> None:
        self.entry = entry

    def __getattr__(self, name: str) -> Any:
        return self.entry if name == "ConnectorHost" else self


@pytest.fixture
def host() -> FakeHost:
    return FakeHost()


@pytest.fixture
def entry(host: FakeHost) -> JavaClass:
    return JavaClass(host)


@pytest.fixture
def factory(entry: JavaClass) -> JvmConnectors:
    return JvmConnectors(ConnectorHostLink(
        {"plugin.path": "/cache/plugins"}, {"offset.storage.topic": "offsets"},
        lambda: FakeJvm(entry),
    ))


@pytest.fixture
def routed(factory: JvmConnectors) -> tuple[Plugins, JavaPlugins]:
    plugins = Plugins()
    catalogue = FakeCatalogue()
    catalogue.listing = lambda timeout_s: SINK_LISTING  # type: ignore[method-assign]
    catalogue.listing_if_ready = lambda: SINK_LISTING  # type: ignore[method-assign]
    return plugins, JavaPlugins(catalogue, plugins, factory)


class Listener:
    def __init__(self) -> None:
        self.statuses: list[InstanceStatus] = []
        self.reconfigurations = 0

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        self.statuses.append(status)

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        pass

    def on_reconfiguration_requested(self, connector: str) -> None:
        self.reconfigurations += 1


def _wait_for(condition: Any, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


# which names are Java's


def test_java_names_make_stand_ins_and_python_names_stay_python(
    routed: tuple[Plugins, JavaPlugins], entry: JavaClass
) -> None:
    plugins, java = routed
    assert java.runs_connectors
    postgres = plugins.new_connector("Postgres", "[3.6,4)")
    assert isinstance(postgres, JavaSourceConnector)
    assert f"{type(postgres).__module__}.{type(postgres).__qualname__}" == POSTGRES
    assert postgres.task_class() is JavaSourceTask
    # Kafka's FileStream class names are the Java classes now that their jar is there...
    assert type(plugins.new_connector(FILE_SOURCE)).java_class == FILE_SOURCE  # type: ignore[attr-defined]
    # ...and the Python built-ins keep their own names
    python = plugins.new_connector("FileStreamSource")
    assert type(python).__module__ == "connect_grpc.connectors.file"
    sink = plugins.new_connector(SINK)
    assert isinstance(sink, JavaSinkConnector) and sink.task_class() is JavaSinkTask
    assert Plugins.connector_type(plugins.connector_class(SINK)) is ConnectorType.SINK
    assert plugins.connector_class(SINK) is type(sink)  # one class per Java class
    assert entry.opened == []  # nothing of the JVM until a call needs it


def test_a_scan_under_way_leaves_reads_to_the_python_registry_and_makes_instances_wait(
    factory: JvmConnectors,
) -> None:
    plugins = Plugins()
    JavaPlugins(FakeCatalogue(ready=False), plugins, factory)
    # a read of a stored connector's type does not wait for the scan
    assert plugins.connector_class(FILE_SOURCE).__module__ == "connect_grpc.connectors.file"
    with pytest.raises(UnavailableError, match="still scanning"):
        plugins.new_connector(POSTGRES)


def test_a_java_connector_is_validated_by_kafka_only(
    routed: tuple[Plugins, JavaPlugins],
) -> None:
    plugins, _ = routed
    connector = plugins.new_connector(POSTGRES)
    with pytest.raises(TypeError, match="Kafka Connect's own validation"):
        connector.config_def()
    with pytest.raises(TypeError, match="Kafka Connect's own validation"):
        connector.validate({})
    # on a worker that runs them, creating one is validated (by Kafka) and not refused
    catalogue = FakeCatalogue()
    validator = config_validator(JavaPlugins(catalogue, Plugins(), JvmConnectors(
        ConnectorHostLink({}, {}, lambda: None))), plugins, 10)
    infos = validator.validate({"name": "f", "connector.class": FILE_SOURCE, "topic": "t"})
    assert infos.name == FILE_SOURCE and catalogue.calls.count("validate") == 1
    # a create asks Kafka's validation for the errors alone, and is refused as ValidateConfig
    # reports them
    with pytest.raises(InvalidArgumentError) as refused:
        validator.ensure_valid({"name": "f", "connector.class": FILE_SOURCE, "file": "/in"})
    assert catalogue.calls.count("validate_errors") == 1
    assert [(v.field, v.description) for v in refused.value.violations] == [
        ("config.topic", 'Missing required configuration "topic" which has no default value.')]


def test_a_config_designates_a_java_connector_by_its_class_or_alias_and_not_by_reference(
    routed: tuple[Plugins, JavaPlugins],
) -> None:
    # what PreviewPipeline asks to send a config to Kafka's Java pipeline, or Python's
    _, java = routed
    assert java.java_class_of({"connector.class": " PostgresConnector "}, wait=True) == POSTGRES
    assert java.java_class_of({"connector.class": FILE_SOURCE}, wait=True) == FILE_SOURCE
    assert java.java_class_of({"connector.class": "FileStreamSource"}, wait=True) is None
    assert java.java_class_of({"connector.class": "${file:/c:cls}"}, wait=True) is None


# the stand-in's lifecycle


def _instance(connector: Any, listener: Listener, **config: str) -> ConnectorInstance:
    return ConnectorInstance("pg", connector, {"name": "pg", **config}, "w1", listener)


def test_the_java_instance_lives_from_start_to_stop(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost, entry: JavaClass
) -> None:
    plugins, _ = routed
    listener = Listener()
    instance = _instance(plugins.new_connector(POSTGRES, "[3.6,4)"), listener, topic="t")
    assert host.calls == []  # initialized in Python only: nothing made in the JVM yet
    assert instance.transition(TargetState.STARTED)
    # made and started in one call
    assert host.calls == [
        ("createAndStart", "pg", POSTGRES, "[3.6,4)", {"name": "pg", "topic": "t"})]
    assert listener.statuses[-1].state is State.RUNNING
    assert listener.statuses[-1].version == "4.3.1"
    assert instance.plugin.task_configs(2) == [
        {"file": "/f", "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask"}]
    assert instance.transition(TargetState.PAUSED)
    assert ("stop", 1) in host.calls and 1 in host.released
    assert instance.transition(TargetState.STARTED)  # a new Java instance
    assert host.calls[-1][:4] == ("createAndStart", "pg", POSTGRES, "[3.6,4)")
    assert ("stop", 2) not in host.calls
    instance.shutdown(connector_deleted=True)
    assert 2 in host.released
    # the worker's properties reach the JVM: its plugin scan's and the offsets reader's
    assert entry.opened == [
        ({"plugin.path": "/cache/plugins"}, {"offset.storage.topic": "offsets"})]


def test_the_java_contexts_events_reach_the_python_context(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    plugins, _ = routed
    listener = Listener()
    instance = _instance(plugins.new_connector(POSTGRES), listener)
    host.events = [{"event": "reconfigure"}, {"event": "error", "error": json.loads(_error(
        "org.apache.kafka.connect.errors.ConnectException", "lost the slot",
        root=("org.postgresql.util.PSQLException", "FATAL: database is gone"),
    ))["error"]}]
    instance.transition(TargetState.STARTED)
    _wait_for(lambda: listener.reconfigurations == 1 and instance.state is State.FAILED)
    trace = listener.statuses[-1].trace
    assert trace.splitlines()[0] == "org.postgresql.util.PSQLException: FATAL: database is gone"
    assert "\tat io.example.Thing.start(Thing.java:42)" in trace
    assert "Caused by: org.postgresql.util.PSQLException" in trace
    instance.shutdown(connector_deleted=False)


def test_a_start_that_fails_in_java_is_failed_with_the_java_root_cause_first(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    plugins, _ = routed
    host.answers["createAndStart"] = _error("java.lang.IllegalStateException", "start refused",
                                            root=("java.io.IOException", "disk gone"))
    listener = Listener()
    instance = _instance(plugins.new_connector(POSTGRES), listener)
    assert not instance.transition(TargetState.STARTED)
    status = listener.statuses[-1]
    assert status.state is State.FAILED
    assert status.trace.splitlines()[0] == "java.io.IOException: disk gone"
    assert "java.lang.IllegalStateException: start refused" in status.trace
    assert host.released == {1}  # a failed start leaves nothing in the JVM


def test_too_many_task_configs_are_kafkas_refusal(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    plugins, _ = routed
    connector = plugins.new_connector(POSTGRES)
    with pytest.raises(ConnectError, match="not started"):
        connector.task_configs(1)
    connector.start({"name": "pg"})
    host.answers["taskConfigs"] = _error(
        "org.apache.kafka.connect.runtime.TooManyTasksException",
        "The connector pg has generated 3 tasks, which is greater than 2", connect_exception=True)
    with pytest.raises(JavaConnectorError) as raised:
        connector.task_configs(2)
    assert str(raised.value).splitlines()[0] == (
        "org.apache.kafka.connect.runtime.TooManyTasksException: The connector pg has "
        "generated 3 tasks, which is greater than 2")


def test_a_call_that_outlives_its_deadline_is_unavailable_and_goes_on(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    plugins, _ = routed
    connector = plugins.new_connector(POSTGRES)
    host.blocked.add("createAndStart")
    with deadline.scope(0.5), pytest.raises(UnavailableError, match="goes on in the worker's JVM"):
        connector.start({"name": "pg"})
    assert host.released == set()
    host.block.set()
    _wait_for(lambda: 1 in host.released)  # released once the JVM's start ended
    assert ("release", 1) in host.calls


def test_a_start_that_fails_past_its_deadline_has_nothing_to_release(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    plugins, _ = routed
    connector = plugins.new_connector(POSTGRES)
    host.blocked.add("createAndStart")
    host.answers["createAndStart"] = _error("java.lang.IllegalStateException", "start refused")
    with deadline.scope(0.5), pytest.raises(UnavailableError):
        connector.start({"name": "pg"})
    host.block.set()
    _wait_for(lambda: 1 in host.released)  # the JVM released it itself
    time.sleep(0.2)
    assert [call for call in host.calls if call[0] == "release"] == []


# KIP-875 and exactly-once declarations on fresh instances


def _vet(connector: Any, change: Any) -> bool:
    return OffsetManager._vet(connector, {"name": "pg"}, change)


def test_alter_offsets_answers_and_refusals_are_the_hooks(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    plugins, _ = routed
    source = plugins.new_connector(POSTGRES)
    assert isinstance(source, JavaSourceConnector)
    offsets = [({"server": "pg"}, {"lsn": 42}), ({"server": "old"}, None)]
    assert source.alter_offsets({"name": "pg"}, offsets) is True
    assert host.calls[-1] == ("alterSourceOffsets", POSTGRES, [
        {"partition": {"server": "pg"}, "offset": {"lsn": 42}},
        {"partition": {"server": "old"}, "offset": None}])
    host.answers["alterSourceOffsets"] = _error(
        "java.lang.UnsupportedOperationException", "no external offsets")
    with pytest.raises(AlterOffsetsUnsupportedError, match="no external offsets"):
        source.alter_offsets({"name": "pg"}, offsets)
    host.answers["alterSourceOffsets"] = _error(
        "org.apache.kafka.connect.errors.ConnectException",
        "Offset objects should either be null or contain the key 'position'",
        connect_exception=True)
    with pytest.raises(JavaOffsetsRefusedError) as refused:
        source.alter_offsets({"name": "pg"}, offsets)
    assert str(refused.value) == ("org.apache.kafka.connect.errors.ConnectException: Offset "
                                  "objects should either be null or contain the key 'position'")
    sink = plugins.new_connector(SINK)
    assert isinstance(sink, JavaSinkConnector)
    assert sink.alter_offsets({"name": "jdbc"}, {("t", 0): 5, ("t", 1): None}) is False
    assert host.calls[-1] == ("alterSinkOffsets", SINK, [
        {"topic": "t", "partition": 0, "offset": 5},
        {"topic": "t", "partition": 1, "offset": None}])


def test_the_offset_managers_vet_maps_java_refusals_to_the_apis_errors(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    from connect_grpc.herder.offset_manager import _Change

    plugins, _ = routed
    source = plugins.new_connector(POSTGRES)
    change = _Change(source=[({"server": "pg"}, {"lsn": 1})])
    host.answers["alterSourceOffsets"] = _error(
        "org.apache.kafka.connect.errors.ConnectException", "bad lsn", connect_exception=True)
    with pytest.raises(InvalidArgumentError, match="ConnectException: bad lsn"):
        _vet(source, change)
    host.answers["alterSourceOffsets"] = _error("java.lang.UnsupportedOperationException", "no")
    with pytest.raises(FailedPreconditionError, match="does not support external modification"):
        _vet(source, change)
    host.answers["alterSourceOffsets"] = _error("java.lang.NullPointerException", "oops")
    with pytest.raises(ConnectError) as failed:
        _vet(source, change)
    assert failed.value.message == (
        "The connector's alter_offsets failed: java.lang.NullPointerException: oops")


def test_exactly_once_declarations_come_from_a_fresh_java_instance(
    routed: tuple[Plugins, JavaPlugins], host: FakeHost
) -> None:
    from connect_grpc.connectors.api import ConnectorTransactionBoundaries, ExactlyOnceSupport

    plugins, _ = routed
    source = plugins.new_connector(POSTGRES)
    assert isinstance(source, JavaSourceConnector)
    assert source.exactly_once_support({"name": "pg"}) is ExactlyOnceSupport.SUPPORTED
    host.answers["exactlyOnceSupport"] = _ok(None)
    assert source.exactly_once_support({"name": "pg"}) is None
    assert (source.can_define_transaction_boundaries({"name": "pg"})
            is ConnectorTransactionBoundaries.UNSUPPORTED)


def _eos_key(name: str, value: str | None, errors: list[str] | None = None) -> dict[str, Any]:
    return {"definition": {"name": name, "type": "STRING", "required": False,
                           "default_value": None, "importance": "MEDIUM", "documentation": "",
                           "group": "Exactly Once Support", "order_in_group": 1,
                           "width": "NONE", "display_name": name, "dependents": []},
            "value": {"name": name, "value": value, "recommended_values": [],
                      "errors": errors or [], "visible": True}}


def test_a_java_sources_exactly_once_settings_are_checked_with_its_declarations(
    factory: JvmConnectors, host: FakeHost
) -> None:
    """Kafka's distributed herder's checks, which the catalogue's validation (a standalone
    herder's) lacks: ``required`` against ``exactlyOnceSupport`` and ``connector`` against
    ``canDefineTransactionBoundaries``, each asked of a fresh instance, errors on the key."""
    plugins = Plugins()
    catalogue = FakeCatalogue(answer={"name": POSTGRES, "error_count": 0, "groups": [],
                                      "configs": [_eos_key("exactly.once.support", "required"),
                                                  _eos_key("transaction.boundary", "connector")]})
    catalogue.listing = lambda timeout_s: SINK_LISTING  # type: ignore[method-assign]
    catalogue.listing_if_ready = lambda: SINK_LISTING  # type: ignore[method-assign]
    java = JavaPlugins(catalogue, plugins, factory)
    validator = config_validator(java, plugins, 10, "enabled")
    config = {"name": "pg", "connector.class": POSTGRES, "exactly.once.support": "required",
              "transaction.boundary": "connector"}

    def errors(given: Mapping[str, str] = config) -> dict[str, list[str]]:
        infos = validator.validate(given)
        return {c.value.name: list(c.value.errors) for c in infos.configs if c.value.errors}

    boundary_error = ("The connector does not support connector-defined transaction boundaries "
                      "with the given configuration. Please reconfigure it to use a different "
                      "transaction boundary definition.")
    # SUPPORTED, and a null answer of canDefineTransactionBoundaries (not SUPPORTED)
    assert errors() == {"transaction.boundary": [boundary_error]}
    asked = [c[0] for c in host.calls if c[0] != "describe"]
    assert asked == ["exactlyOnceSupport", "canDefineTransactionBoundaries"]
    host.answers["canDefineTransactionBoundaries"] = _ok("SUPPORTED")
    assert errors() == {}
    host.answers["exactlyOnceSupport"] = _ok("UNSUPPORTED")
    assert errors() == {"exactly.once.support": [
        "The connector does not support exactly-once semantics with the provided "
        "configuration."]}
    host.answers["exactlyOnceSupport"] = _ok(None)
    [undeclared] = errors()["exactly.once.support"]
    assert "does not declare whether it supports exactly-once" in undeclared
    assert "exactly.once.support=requested" in undeclared
    host.answers["exactlyOnceSupport"] = _error(
        "org.apache.kafka.common.config.ConfigException", "no slot name")
    assert errors() == {"exactly.once.support": [
        "An unexpected error occurred during validation: "
        "org.apache.kafka.common.config.ConfigException: no slot name"]}
    # a create or an update is refused on the key, as a Python source's is (its validation
    # asked for the errors alone: the keys are there to check)
    with pytest.raises(InvalidArgumentError) as refused:
        validator.ensure_valid(config)
    assert [v.field for v in refused.value.violations] == ["config.exactly.once.support"]
    assert catalogue.calls[-1] == "validate_errors"
    # what Kafka's own validation already refused is not asked again
    catalogue.answer = {**catalogue.answer, "configs": [
        _eos_key("exactly.once.support", "always", ["Invalid value always"]),
        _eos_key("transaction.boundary", "poll")]}
    calls = len(host.calls)
    assert errors({**config, "exactly.once.support": "always",
                   "transaction.boundary": "poll"}) == {
        "exactly.once.support": ["Invalid value always"]}
    assert len(host.calls) == calls


def test_a_workers_exactly_once_support_decides_before_a_java_source_is_asked(
    factory: JvmConnectors, host: FakeHost
) -> None:
    plugins = Plugins()
    catalogue = FakeCatalogue(answer={"name": POSTGRES, "error_count": 0, "groups": [],
                                      "configs": [_eos_key("exactly.once.support", "required"),
                                                  _eos_key("transaction.boundary", "interval")]})
    catalogue.listing = lambda timeout_s: SINK_LISTING  # type: ignore[method-assign]
    catalogue.listing_if_ready = lambda: SINK_LISTING  # type: ignore[method-assign]
    validator = config_validator(JavaPlugins(catalogue, plugins, factory), plugins, 10)
    infos = validator.validate({"name": "pg", "connector.class": POSTGRES,
                                "exactly.once.support": "required",
                                "transaction.boundary": "interval"})
    found = dict(infos.all_errors())
    assert "does not have exactly-once source support enabled" in found["exactly.once.support"]
    assert "transaction.boundary=interval has nothing to bound" in found["transaction.boundary"]


# KIP-1004's escape hatch


class _TaskConfigsWorker:
    def __init__(self, configs: list[dict[str, str]]) -> None:
        self.configs = configs

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        return self.configs


class _Board:
    worker_id = "w1"

    def __init__(self) -> None:
        self.statuses: list[InstanceStatus] = []

    def on_connector_status(self, name: str, status: InstanceStatus) -> None:
        self.statuses.append(status)


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, Mapping[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    error = warning


def test_tasks_max_enforce_false_lets_extra_task_configs_run() -> None:
    assert tasks_max_enforced({}) and tasks_max_enforced({"tasks.max.enforce": "true"})
    assert not tasks_max_enforced({"tasks.max.enforce": " FALSE "})
    configs = [{"n": "0"}, {"n": "1"}, {"n": "2"}]
    worker, board, log = _TaskConfigsWorker(configs), _Board(), _Log()
    assert ask_task_configs(worker, board, "c", 2, log) is None  # type: ignore[arg-type]
    assert board.statuses[-1].state is State.FAILED
    assert ask_task_configs(worker, _Board(), "c", 2, log, enforce=False) == configs  # type: ignore[arg-type]
    assert log.events[-1][0] == "task_configs_beyond_tasks_max"
