"""Kafka Connect's Java plugins of plugin.path beside the Python ones, without a JVM: which
plugin.path entries hold Java plugins and what the driver is given, which connector names
designate a Java plugin, Kafka's REST JSON as ListPlugins and ValidateConfig show it, the
refusal of a Java connector where a config is to run on a worker without Java connectors (a
standalone one), and the JVM catalogue's waits (a stand-in for the gateway)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.redaction import HIDDEN
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.java_listing import config_infos_from_kafka
from connect_grpc.herder.java_plugins import JavaPlugins, config_validator
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.java.jvm_build import (
    JVM_TARGET_ENV,
    JvmNotBuiltError,
    jvm_classpath,
    jvm_target,
)
from connect_grpc.java.plugin_path import (
    driver_jars,
    host_worker_properties,
    java_plugin_entries,
    unreadable_archives,
)
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.kernel.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    UnavailableError,
)
from connect_grpc.runtime import java_plugins as runtime_java
from connect_grpc.runtime.java_plugins import JvmPluginCatalogue
from connect_grpc.runtime.spark import spark_conf
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.unit.fake_worker import FakeWorker

POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
LOCATION = "/cache/plugins/p/"


def _key(name: str, type_: str = "STRING", group: str | None = "Common") -> dict[str, Any]:
    return {"name": name, "type": type_, "required": False, "default_value": None,
            "importance": "HIGH", "documentation": f"{name}.", "group": group,
            "order_in_group": 1, "width": "NONE", "display_name": name, "dependents": []}


LISTING: dict[str, Any] = {
    "plugin_path": "/cache/plugins",
    "plugin_discovery": "service_load",
    "plugins": [
        {"class": POSTGRES, "type": "source", "version": "3.6.1.Final", "location": LOCATION,
         "config": [_key("database.hostname"), _key("database.password", "PASSWORD")]},
        {"class": FILE_SOURCE, "type": "source", "version": "4.3.1", "location": LOCATION,
         "config": [_key("file"), _key("topic")]},
        {"class": "io.debezium.transforms.ExtractNewRecordState", "type": "transformation",
         "version": "3.6.1.Final", "location": LOCATION, "config": []},
        {"class": "io.debezium.converters.BinaryDataConverter", "type": "converter",
         "version": "3.6.1.Final", "location": LOCATION, "config": []},
        {"class": "org.apache.kafka.common.config.provider.FileConfigProvider",
         "type": "configprovider", "version": "4.3.1", "location": LOCATION, "config": None},
        {"class": "org.apache.kafka.common.config.provider.FileConfigProvider",
         "type": "configprovider", "version": "4.3.1", "location": "/cache/plugins/q/",
         "config": None},
        # The JVM host's own classpath: Kafka's runtime, not the user's plugin.path.
        {"class": "org.apache.kafka.connect.json.JsonConverter", "type": "converter",
         "version": "4.4.0", "location": "classpath", "config": []},
    ],
}

FILE_SOURCE_INFOS: dict[str, Any] = {
    "name": FILE_SOURCE,
    "error_count": 1,
    "groups": ["Common"],
    "configs": [
        {"definition": _key("topic"),
         "value": {"name": "topic", "value": None, "recommended_values": [],
                   "errors": ["Missing required configuration \"topic\" which has no default "
                              "value."], "visible": True}},
        {"definition": _key("file"),
         "value": {"name": "file", "value": "/tmp/in.txt", "recommended_values": ["a", "b"],
                   "errors": [], "visible": True}},
        {"definition": _key("secret", "PASSWORD"),
         "value": {"name": "secret", "value": "[hidden]", "recommended_values": [],
                   "errors": [], "visible": True}},
        # Debezium's validation leaves a password it was given null...
        {"definition": _key("database.password", "PASSWORD"),
         "value": {"name": "database.password", "value": None, "recommended_values": [],
                   "errors": [], "visible": True}},
        # ...and Kafka answers a key its validation gave no value for with a null value.
        {"definition": _key("internal.flag", "BOOLEAN"), "value": None},
    ],
}


class FakeCatalogue:
    """The JVM catalogue's answers, counted; ``ready`` says whether its scan is done."""

    def __init__(self, ready: bool = True, answer: Mapping[str, Any] | None = None) -> None:
        self.ready = ready
        self.answer = answer or FILE_SOURCE_INFOS
        self.calls: list[str] = []
        self.validated: list[dict[str, str]] = []
        #: What ``preview`` answers, and the requests it was sent.
        self.preview_answer: Mapping[str, Any] = {"type": "sink", "records": []}
        self.previews: list[Mapping[str, Any]] = []

    def listing(self, timeout_s: float) -> Mapping[str, Any]:
        self.calls.append("listing")
        if not self.ready:
            raise UnavailableError("still scanning")
        return LISTING

    def listing_if_ready(self) -> Mapping[str, Any] | None:
        self.calls.append("listing_if_ready")
        return LISTING if self.ready else None

    def validate(
        self, config: Mapping[str, str], timeout_s: float, errors_only: bool = False
    ) -> Mapping[str, Any]:
        self.calls.append("validate_errors" if errors_only else "validate")
        self.validated.append(dict(config))
        return errors_of(self.answer) if errors_only else self.answer

    def preview(self, request: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        self.calls.append("preview")
        self.previews.append(request)
        return self.preview_answer


def errors_of(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    """Kafka's answer as the JVM's ``validateErrors`` reduces it: each key's name and errors."""
    if "error" in answer:
        return answer
    configs = [
        {"value": {"name": (entry.get("value") or entry["definition"])["name"],
                   "errors": (entry.get("value") or {}).get("errors") or []}}
        for entry in answer.get("configs") or ()
    ]
    return {"name": answer.get("name"), "error_count": answer.get("error_count"),
            "groups": answer.get("groups"), "configs": configs}


@pytest.fixture
def catalogue() -> FakeCatalogue:
    return FakeCatalogue()


@pytest.fixture
def java(catalogue: FakeCatalogue, plugins: Plugins) -> JavaPlugins:
    return JavaPlugins(catalogue, plugins)


# plugin.path: which entries hold Java plugins, what the JVM host and the driver are given


def test_entries_holding_jars_or_classes_are_javas_and_python_trees_are_not(
    tmp_path: Path,
) -> None:
    plugin_dirs = tmp_path / "plugins"
    (plugin_dirs / "debezium").mkdir(parents=True)
    (plugin_dirs / "debezium" / "debezium-connector-postgres.jar").write_bytes(b"")
    uber = tmp_path / "uber"
    uber.mkdir()
    (uber / "connector-all.jar").write_bytes(b"")
    classes = tmp_path / "classes"
    (classes / "plugin" / "com" / "example").mkdir(parents=True)
    (classes / "plugin" / "com" / "example" / "MyConnector.class").write_bytes(b"")
    python = tmp_path / "python"
    (python / "mypkg").mkdir(parents=True)
    (python / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (python / "mypkg" / "stray.jar").write_bytes(b"")  # inside a Python package: not Java's
    (python / "lib.dist-info").mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    path = (plugin_dirs, uber, classes, python, empty, tmp_path / "missing")
    assert java_plugin_entries(path) == (plugin_dirs, uber, classes)
    assert java_plugin_entries((python, empty)) == ()


def test_jars_that_cannot_be_read_are_found_with_why(tmp_path: Path) -> None:
    import zipfile

    good = tmp_path / "plugins" / "good" / "good.jar"
    good.parent.mkdir(parents=True)
    with zipfile.ZipFile(good, "w") as jar:
        jar.writestr("a/B.class", b"\xca\xfe\xba\xbe" * 64)
    truncated = tmp_path / "plugins" / "cut" / "lib" / "cut.jar"
    truncated.parent.mkdir(parents=True)
    truncated.write_bytes(good.read_bytes()[:40])
    uber = tmp_path / "plugins" / "uber.zip"
    uber.write_bytes(b"not a zip at all")
    (tmp_path / "plugins" / "good" / "README.txt").write_text("not an archive")
    found = unreadable_archives([tmp_path / "plugins"])
    assert sorted(path for path, _ in found) == [truncated, uber]
    assert all(reason for _, reason in found)
    assert unreadable_archives([good]) == []


def test_the_jvm_host_gets_the_java_entries_and_the_discovery_and_policy_keys() -> None:
    props = {"plugin.path": "/a,/py", "plugin.discovery": "service_load",
             "connector.client.config.override.policy": "None",
             "key.converter": "mypkg.MyConverter", "bootstrap.servers": "b:9092"}
    assert host_worker_properties(props, (Path("/a"),)) == {
        "plugin.path": "/a",
        "plugin.discovery": "service_load",
        "connector.client.config.override.policy": "None",
    }


def test_the_driver_jars_leave_slf4j_out(tmp_path: Path) -> None:
    with pytest.raises(JvmNotBuiltError, match="make install"):
        driver_jars(tmp_path)
    target = tmp_path / "jvm" / "target"
    (target / "lib").mkdir(parents=True)
    for name in ("connect-grpc-jvm.jar", "lib/connect-runtime-4.4.0.jar",
                 "lib/slf4j-api-1.7.36.jar", "lib/slf4j-simple-1.7.36.jar",
                 "lib/kafka-clients-4.4.0.jar"):
        (target / name).write_bytes(b"")
    assert [jar.name for jar in driver_jars(tmp_path)] == [
        "connect-grpc-jvm.jar", "connect-runtime-4.4.0.jar", "kafka-clients-4.4.0.jar"
    ]


def test_an_install_from_a_wheel_finds_the_built_jvm_side_where_its_variable_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the Docker image's install: the package in site-packages, jvm/target copied elsewhere
    built = tmp_path / "opt" / "connect-grpc-jvm"
    monkeypatch.setenv(JVM_TARGET_ENV, str(built))
    with pytest.raises(JvmNotBuiltError, match=JVM_TARGET_ENV):
        driver_jars()
    (built / "lib").mkdir(parents=True)
    (built / "connect-grpc-jvm.jar").write_bytes(b"")
    (built / "lib" / "connect-runtime-4.4.0.jar").write_bytes(b"")
    assert driver_jars() == (built / "connect-grpc-jvm.jar",
                             built / "lib" / "connect-runtime-4.4.0.jar")
    assert jvm_classpath().split(":") == [str(built / "connect-grpc-jvm.jar"),
                                          str(built / "lib" / "*")]
    # a checkout named by the caller is that checkout's, whatever the variable says
    with pytest.raises(JvmNotBuiltError, match="make install"):
        driver_jars(tmp_path)
    monkeypatch.setenv(JVM_TARGET_ENV, " ")
    assert jvm_target() == Path(__file__).resolve().parents[2] / "jvm" / "target"


def _config(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "b:9092", "worker.id": "w", **props})


def test_spark_is_given_the_jars_only_when_plugin_path_holds_java_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime_java, "driver_jars", lambda: (Path("/j/host.jar"),))
    python = tmp_path / "python"
    (python / "mypkg").mkdir(parents=True)
    (python / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    assert "spark.jars" not in spark_conf(_config())
    assert "spark.jars" not in spark_conf(_config(**{"plugin.path": str(python)}))
    assert runtime_java.java_catalogue_for(_config(**{"plugin.path": str(python)})) is None
    java_dir = tmp_path / "java"
    (java_dir / "p").mkdir(parents=True)
    (java_dir / "p" / "p.jar").write_bytes(b"")
    both = _config(**{"plugin.path": f"{python},{java_dir}", "spark.jars": "/mine.jar"})
    assert spark_conf(both)["spark.jars"] == "/mine.jar,/j/host.jar"
    assert runtime_java.java_catalogue_for(both) is not None


# which plugin a connector.class designates


def test_python_names_never_ask_the_jvm(java: JavaPlugins, catalogue: FakeCatalogue) -> None:
    for name in ("FileStreamSource", "connect_grpc.connectors.file.FileStreamSourceConnector",
                 "SequenceSource"):
        assert java.java_connector(name, wait=True) is None
    assert catalogue.calls == []


def test_java_class_names_and_their_aliases_designate_the_java_connector(
    java: JavaPlugins,
) -> None:
    assert java.java_connector(POSTGRES, wait=True) == POSTGRES
    assert java.java_connector("PostgresConnector", wait=False) == POSTGRES
    assert java.java_connector("Postgres", wait=True) == POSTGRES
    # Kafka's class name of a Python built-in is the Java class once its jar is there...
    assert java.java_connector(FILE_SOURCE, wait=True) == FILE_SOURCE
    # ...while the Python built-in keeps its own aliases.
    assert java.java_connector("FileStreamSource", wait=True) is None
    assert java.java_connector("no.such.Connector", wait=True) is None


def test_kafkas_filestream_names_stay_python_without_the_jar(plugins: Plugins) -> None:
    listing = {**LISTING, "plugins": [p for p in LISTING["plugins"] if p["class"] != FILE_SOURCE]}
    catalogue = FakeCatalogue()
    catalogue.listing = lambda timeout_s: listing  # type: ignore[method-assign]
    assert JavaPlugins(catalogue, plugins).java_connector(FILE_SOURCE, wait=True) is None


def test_a_scan_under_way_makes_a_possible_java_name_unavailable_without_waiting(
    plugins: Plugins,
) -> None:
    java = JavaPlugins(FakeCatalogue(ready=False), plugins)
    with pytest.raises(UnavailableError, match="scan is still under way"):
        java.refuse_to_run({"connector.class": POSTGRES})
    java.refuse_to_run({"connector.class": "FileStreamSource"})  # Python's: no JVM needed
    java.refuse_to_run({"connector.class": "${file:/s:class}"})  # the Python validator's error


def test_running_a_java_connector_is_refused_on_connector_class(java: JavaPlugins) -> None:
    with pytest.raises(FailedPreconditionError) as raised:
        java.refuse_to_run({"connector.class": "Postgres"})
    error = raised.value
    assert "connector.class Postgres (the Java class " + POSTGRES + ")" in error.message
    assert "this worker runs no Java connectors" in error.message
    assert "nothing was created" in error.message
    [violation] = error.violations
    assert violation.subject == "config.connector.class"


# listing


def test_the_listing_maps_kafkas_json_and_leaves_the_runtimes_classpath_out(
    java: JavaPlugins,
) -> None:
    connectors, others = java.describe(include_config_definitions=True, all_plugin_types=True)
    postgres = next(p for p in connectors if p.class_name == POSTGRES)
    assert (postgres.type, postgres.plugin_type, postgres.version) == (
        ConnectorType.SOURCE, "source", "3.6.1.Final"
    )
    assert postgres.aliases == ("Postgres", "PostgresConnector")
    assert [k.name for k in postgres.config_definitions] == [
        "database.hostname", "database.password"
    ]
    assert postgres.config_definitions[1].type == "PASSWORD"
    assert [(p.class_name, p.plugin_type) for p in others] == [
        ("io.debezium.transforms.ExtractNewRecordState", "transformation"),
        ("io.debezium.converters.BinaryDataConverter", "converter"),
        ("org.apache.kafka.common.config.provider.FileConfigProvider", "configprovider"),
    ]
    bare, none = java.describe(include_config_definitions=False, all_plugin_types=False)
    assert none == [] and all(p.config_definitions == () for p in bare)


def _java_herder(tmp_path: Path, plugins: Plugins, catalogue: FakeCatalogue) -> StandaloneHerder:
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "listeners": "grpc://127.0.0.1:0", "worker.id": "w1"}
    )
    return StandaloneHerder(
        config, plugins, FileOffsetStore(tmp_path / "offsets.json"),
        lambda board: FakeWorker(board, plugins),
        java_plugins=JavaPlugins(catalogue, plugins),
    )


def test_list_plugins_merges_java_and_python_in_kafkas_order(
    tmp_path: Path, plugins: Plugins, catalogue: FakeCatalogue
) -> None:
    herder = _java_herder(tmp_path, plugins, catalogue)
    listed = herder.plugins(all_plugin_types=True)
    names = [(p.class_name, p.plugin_type) for p in listed]
    assert (POSTGRES, "source") in names and (FILE_SOURCE, "source") in names
    types = [p.plugin_type for p in listed]
    order = ["sink", "source", "transformation", "predicate", "converter", "header_converter",
             "configprovider"]
    assert types == sorted(types, key=order.index)
    sources = [p.class_name for p in listed if p.plugin_type == "source"]
    assert sources == sorted(sources)
    # Kafka's class name is the Java class's now, no longer the Python built-in's alias.
    builtin = next(p for p in listed if p.class_name.endswith("file.FileStreamSourceConnector")
                   and p.class_name.startswith("connect_grpc"))
    assert FILE_SOURCE not in builtin.aliases and "FileStreamSource" in builtin.aliases
    # GetPluginConfig: the Java class by its name (not the Python built-in's alias), as Kafka
    # describes it.
    described = herder.plugin_config(FILE_SOURCE)
    assert (described.class_name, described.version) == (FILE_SOURCE, "4.3.1")
    assert [k.name for k in described.config_definitions] == ["file", "topic"]


# validation


def test_kafkas_config_infos_become_the_apis_with_values_as_given() -> None:
    infos = config_infos_from_kafka(
        FILE_SOURCE_INFOS, {"file": "${file:/s:path}", "database.password": "p4ss"}
    )
    assert infos.name == FILE_SOURCE
    assert infos.error_count == 1
    topic, file_, secret, password, flag = infos.configs
    assert password.value.value == HIDDEN
    assert (flag.value.name, flag.value.value, flag.value.errors) == ("internal.flag", None, ())
    assert topic.value.errors == (
        'Missing required configuration "topic" which has no default value.',
    )
    assert topic.definition is not None and topic.definition.group == "Common"
    assert file_.value.value == "${file:/s:path}"  # the reference, not what it resolved to
    assert file_.value.recommended_values == ("a", "b")
    assert secret.value.value == HIDDEN


def test_validate_config_of_a_java_connector_is_kafkas_and_creating_it_is_refused(
    plugins: Plugins, catalogue: FakeCatalogue
) -> None:
    validator = config_validator(JavaPlugins(catalogue, plugins), plugins, 10)
    config = {"name": "f", "connector.class": FILE_SOURCE, "file": "/tmp/in.txt"}
    infos = validator.validate(config)
    assert infos.name == FILE_SOURCE
    assert infos.all_errors() == [
        ("topic", 'Missing required configuration "topic" which has no default value.')
    ]
    assert catalogue.validated == [config]
    # ValidateConfig's plugin field names the class the config is validated against.
    validator.validate({"file": "/tmp/in.txt"}, plugin="FileStreamSourceConnector")
    assert catalogue.validated[-1]["connector.class"] == FILE_SOURCE
    with pytest.raises(FailedPreconditionError, match="runs no Java connectors"):
        validator.ensure_valid(config)
    assert "validate_errors" not in catalogue.calls  # refused before Kafka's validation
    # A Python connector beside them validates as before, without the JVM.
    calls = len(catalogue.calls)
    python = validator.validate({"name": "p", "connector.class": "FileStreamSource",
                                 "file": "/tmp/in.txt", "topic": "t"})
    assert python.error_count == 0 and len(catalogue.calls) == calls


def test_kafkas_outright_failure_is_a_bad_request_or_an_error_of_the_plugin(
    plugins: Plugins,
) -> None:
    bad = FakeCatalogue(answer={"error": {
        "class": "org.apache.kafka.connect.runtime.rest.errors.BadRequestException",
        "message": "Connector config {} contains no connector type"}})
    validator = config_validator(JavaPlugins(bad, plugins), plugins, 10)
    with pytest.raises(InvalidArgumentError, match="contains no connector type"):
        validator.validate({"connector.class": POSTGRES})


# the JVM catalogue's waits, with a stand-in for the gateway


class FakeHost:
    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def listPlugins(self) -> str:  # the Java method's name
        return '{"plugins": []}'

    def validate(self, config: str) -> str:
        self.release.wait(10)
        return '{"name": "x", "error_count": 0, "groups": [], "configs": []}'

    def preview(self, request: str) -> str:
        self.release.wait(10)
        return json.dumps({"records": [], "asked": json.loads(request)})


class JavaClass:
    """Named as py4j's class of a class found in the JVM."""

    def __init__(self, host: FakeHost, opened: threading.Event) -> None:
        self.host, self.opened = host, opened

    def shared(self, properties: str) -> FakeHost:
        self.opened.wait(10)
        return self.host


class FakeJvm:
    def __init__(self, entry: object) -> None:
        self.entry = entry

    def __getattr__(self, name: str) -> Any:
        return self.entry if name == "JavaPluginHost" else self


def test_the_catalogue_opens_lazily_and_a_call_never_outlives_its_deadline() -> None:
    opened, release = threading.Event(), threading.Event()
    asked: list[int] = []

    def jvm() -> FakeJvm:
        asked.append(1)
        return FakeJvm(JavaClass(FakeHost(release), opened))

    catalogue = JvmPluginCatalogue({"plugin.path": "/p"}, jvm)
    assert asked == []  # nothing until a call needs it
    with pytest.raises(UnavailableError, match="has not finished within the call's deadline"):
        catalogue.listing(0.05)
    assert catalogue.listing_if_ready() is None
    opened.set()
    assert catalogue.listing(5) == {"plugins": []}
    with pytest.raises(UnavailableError, match="Kafka Connect's validation"):
        catalogue.validate({"connector.class": "x"}, 0.05)
    release.set()
    assert catalogue.validate({"connector.class": "x"}, 5)["error_count"] == 0
    assert asked == [1]  # one scan


def test_a_preview_in_the_jvm_is_given_the_workers_converters_and_never_outlives_its_deadline(
) -> None:
    opened, release = threading.Event(), threading.Event()
    opened.set()
    host = FakeHost(release)
    converters = {"key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    catalogue = JvmPluginCatalogue(
        {"plugin.path": "/p"}, lambda: FakeJvm(JavaClass(host, opened)),
        converter_properties=converters,
    )
    request = {"type": "sink", "config": {"connector.class": "x"}, "records": []}
    with pytest.raises(UnavailableError, match="the Java pipeline's preview"):
        catalogue.preview(request, 0.05)
    release.set()
    assert catalogue.preview(request, 5)["asked"] == {**request, "worker": converters}


def test_a_host_missing_from_the_driver_is_a_precise_failed_precondition() -> None:
    catalogue = JvmPluginCatalogue({"plugin.path": "/p"}, lambda: FakeJvm(object()))
    with pytest.raises(FailedPreconditionError, match="make install"):
        catalogue.listing(5)


def test_gateway_calls_reuse_their_threads_and_a_stuck_call_holds_only_its_own() -> None:
    threads = runtime_java._CallThreads(idle_s=0.3)

    def on_thread(work: Any) -> Any:
        return threads.submit(work, "java-test-call").result(timeout=5)

    first = on_thread(threading.current_thread)
    # one after the other, calls keep the thread (and its gateway connection)
    assert {on_thread(threading.current_thread) for _ in range(5)} == {first}
    stuck, release = threading.Event(), threading.Event()

    def hold() -> None:
        stuck.set()
        release.wait(5)

    threads.submit(hold, "java-test-stuck")
    assert stuck.wait(5)
    # the stuck call holds the thread it took: the next call gets another one
    second, name = on_thread(
        lambda: (threading.current_thread(), threading.current_thread().name)
    )
    assert second is not first and name == "java-test-call"
    release.set()
    for thread in (first, second):
        thread.join(5)  # idle past idle_s, each thread ends
        assert not thread.is_alive()
