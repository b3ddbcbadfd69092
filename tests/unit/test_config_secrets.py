"""Secrets in connector configs: ValidateConfig shows PASSWORD values as ``[hidden]`` and
references unresolved while the plugin validates resolved values; references that do not
resolve are errors of their key; the stored config keeps the references; the worker hands
plugins resolved configs, stores task configs with references, and masks resolved values
in the traces it reports."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.providers import EnvVarConfigProvider, FileConfigProvider
from connect_grpc.config_providers.redaction import HIDDEN
from connect_grpc.config_providers.transformer import ConfigReferenceError, ConfigTransformer
from connect_grpc.connectors.api import SourceConnector, Task
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType, define_all
from connect_grpc.kernel.domain import (
    ConfigInfos,
    ConnectorOffset,
    InstanceStatus,
    TargetState,
    TaskId,
)
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.runtime.record_times import RecordTimes
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.testing.plugins import read_events
from tests.task_fakes import IdleSource
from tests.unit.fake_worker import FakeWorker

SECRET = "file-secret-3d9b71"
ENV_SECRET = "env-secret-55ac02"


class RecordingSource(SourceConnector):
    """Remembers every config it validated and started with; copies its password into a
    task key of another name; ``fail.with.password`` makes start raise quoting it."""

    validated: ClassVar[list[dict[str, str]]] = []
    started: ClassVar[list[dict[str, str]]] = []

    def config_def(self) -> ConfigDef:
        return define_all([
            ConfigKey("password", ConfigType.PASSWORD, "The password.", default=None),
            ConfigKey("port", ConfigType.INT, "A port.", default=5432),
            ConfigKey("user", ConfigType.STRING, "The user.", default="app"),
        ])

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        RecordingSource.validated.append(dict(config))
        return super().validate(config)

    def start(self, config: Mapping[str, str]) -> None:
        RecordingSource.started.append(dict(config))
        self._config = dict(config)
        if config.get("fail.with.password") == "true":
            raise RuntimeError(f"login refused for password {config['password']}")

    def task_class(self) -> type[Task]:
        return IdleSource

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"db.password": self._config.get("password", ""),
                 "user": self._config.get("user", "app")}]

    def stop(self, connector_deleted: bool = False) -> None:
        return None


CLASS = f"{__name__}.RecordingSource"


@pytest.fixture(autouse=True)
def _forget_recorded() -> None:
    RecordingSource.validated.clear()
    RecordingSource.started.clear()


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "db.properties"
    path.write_text(f"password={SECRET}\nport=not-a-port\n", encoding="utf-8")
    return path


@pytest.fixture
def transformer(secrets_file: Path) -> ConfigTransformer:
    return ConfigTransformer({
        "file": FileConfigProvider("file", (secrets_file.parent.resolve(),)),
        "env": EnvVarConfigProvider("env", "CONNECT_.*", {"CONNECT_USER": ENV_SECRET}),
    })


@pytest.fixture
def plugins() -> Plugins:
    return Plugins(include_testing=True, registered=(RecordingSource,))


@pytest.fixture
def validator(plugins: Plugins, transformer: ConfigTransformer) -> ConfigValidator:
    return ConfigValidator(plugins, 8, transformer=transformer)


def _values(infos: ConfigInfos) -> dict[str, str | None]:
    return {info.value.name: info.value.value for info in infos.configs}


def _errors(infos: ConfigInfos) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key, message in infos.all_errors():
        errors.setdefault(key, []).append(message)
    return errors


# ---- validation ---------------------------------------------------------------------------


def test_validation_shows_passwords_hidden_and_references_raw(
    validator: ConfigValidator, secrets_file: Path
) -> None:
    reference = f"${{file:{secrets_file}:password}}"
    infos = validator.validate({
        "connector.class": CLASS, "password": reference, "user": "${env:CONNECT_USER}",
    })
    assert infos.error_count == 0, infos.all_errors()
    values = _values(infos)
    assert values["password"] == HIDDEN
    assert values["user"] == "${env:CONNECT_USER}"
    [seen] = RecordingSource.validated
    assert seen["password"] == SECRET and seen["user"] == ENV_SECRET
    assert SECRET not in repr(infos) and ENV_SECRET not in repr(infos)


def test_a_literal_password_is_hidden_too(validator: ConfigValidator) -> None:
    infos = validator.validate({"connector.class": "InstrumentedSource", "test.secret": "pw!"})
    assert _values(infos)["test.secret"] == HIDDEN
    assert _values(infos)["tasks.max"] is None  # unset keys still show nothing


def test_an_unresolvable_reference_is_the_only_error_of_its_key(
    validator: ConfigValidator, tmp_path: Path
) -> None:
    infos = validator.validate({
        "connector.class": CLASS,
        "port": "${env:CONNECT_PORT}",
        "password": "${vault:db:password}",
        "user": f"${{file:{tmp_path}/../elsewhere.properties:user}}",
    })
    errors = _errors(infos)
    assert sorted(errors) == ["password", "port", "user"]
    assert errors["port"] == [
        "cannot resolve ${env:CONNECT_PORT}: environment variable CONNECT_PORT is not set"
    ]
    assert "no config provider 'vault'" in errors["password"][0]
    assert "is not under the allowed.paths of provider 'file'" in errors["user"][0]


def test_a_message_about_a_resolved_value_quotes_the_reference(
    validator: ConfigValidator, secrets_file: Path
) -> None:
    reference = f"${{file:{secrets_file}:port}}"
    infos = validator.validate({"connector.class": CLASS, "port": reference})
    [message] = _errors(infos)["port"]
    assert message == f"Invalid value {reference} for configuration port: Not a number of type INT"


@pytest.mark.parametrize(
    "key", ["tasks.max", "name", "offsets.storage.topic", "consumer.override.group.id"]
)
def test_framework_keys_the_control_plane_reads_must_be_literal(
    validator: ConfigValidator, key: str
) -> None:
    infos = validator.validate({"connector.class": CLASS, key: "${env:CONNECT_USER}"})
    [message] = _errors(infos)[key]
    assert message.startswith(f"{key} must be a literal value")


def test_a_reference_in_connector_class_is_invalid_argument(validator: ConfigValidator) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        validator.validate({"connector.class": "${env:CONNECT_CLASS}"})
    assert [v.field for v in caught.value.violations] == ["config.connector.class"]


def test_a_class_outside_the_allowed_sources_is_invalid_argument_on_connector_class(
    validator: ConfigValidator,
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        validator.validate({"connector.class": "collections.OrderedDict"})
    [violation] = caught.value.violations
    assert violation.field == "config.connector.class"
    assert "registered plugin" in violation.description
    assert "plugin.path" in violation.description


# ---- the herder stores raw configs --------------------------------------------------------


def test_create_stores_the_references_and_rejects_what_cannot_resolve(
    tmp_path: Path, plugins: Plugins, secrets_file: Path
) -> None:
    config = WorkerConfig.from_properties({
        "bootstrap.servers": "127.0.0.1:1", "worker.id": "w1",
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets_file.parent),
    })
    workers: list[FakeWorker] = []

    def runtime(board: object) -> FakeWorker:
        workers.append(FakeWorker(board, plugins))  # type: ignore[arg-type]
        return workers[-1]

    herder = StandaloneHerder(config, plugins, FileOffsetStore(tmp_path / "o.json"), runtime)
    herder.start()
    try:
        reference = f"${{file:{secrets_file}:password}}"
        herder.create_connector("c", {"connector.class": CLASS, "password": reference},
                                TargetState.STARTED)
        assert herder.connector_config("c")["password"] == reference
        with pytest.raises(InvalidArgumentError) as caught:
            herder.create_connector(
                "d", {"connector.class": CLASS, "password": f"${{file:{secrets_file}:nope}}"},
                TargetState.STARTED,
            )
        assert [v.field for v in caught.value.violations] == ["config.password"]
        assert "has no key 'nope'" in caught.value.message
    finally:
        herder.stop()


# ---- the worker resolves, reverses and masks ----------------------------------------------


class _Statuses:
    def __init__(self) -> None:
        self.connectors: dict[str, InstanceStatus] = {}
        self.tasks: dict[TaskId, InstanceStatus] = {}

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        self.connectors[connector] = status

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        self.tasks[task] = status

    def on_reconfiguration_requested(self, connector: str) -> None:
        return None


@pytest.fixture
def worker(
    tmp_path: Path, plugins: Plugins, transformer: ConfigTransformer
) -> tuple[Worker, _Statuses]:
    config = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1", "worker.id": "w"})
    statuses = _Statuses()
    offsets = FileOffsetStore(tmp_path / "offsets.json")
    return Worker(config, plugins, offsets, statuses, transformer=transformer), statuses


def test_the_worker_starts_the_plugin_resolved_and_stores_tasks_with_references(
    worker: tuple[Worker, _Statuses], secrets_file: Path
) -> None:
    runtime, _ = worker
    raw = {"connector.class": CLASS, "password": f"${{file:{secrets_file}:password}}",
           "user": "${env:CONNECT_USER}"}
    assert runtime.start_connector("c", raw, TargetState.STARTED)
    [started] = RecordingSource.started
    assert started["password"] == SECRET and started["user"] == ENV_SECRET
    assert runtime.connector_task_configs("c", 1) == [
        {"db.password": raw["password"], "user": raw["user"]}
    ]
    runtime.stop_connector("c", connector_deleted=True)


def test_an_unresolvable_reference_fails_the_instance_naming_the_key(
    worker: tuple[Worker, _Statuses], secrets_file: Path
) -> None:
    runtime, statuses = worker
    raw = {"connector.class": CLASS, "password": f"${{file:{secrets_file}:nope}}"}
    assert not runtime.start_connector("c", raw, TargetState.STARTED)
    assert statuses.connectors["c"].state.value == "FAILED"
    assert "config password: cannot resolve" in statuses.connectors["c"].trace
    assert not RecordingSource.started
    task = TaskId("c", 0)
    assert not runtime.start_task(task, {"connector.class": CLASS}, raw, TargetState.STARTED)
    assert "config password: cannot resolve" in statuses.tasks[task].trace


def test_a_trace_quoting_a_resolved_value_is_masked(
    worker: tuple[Worker, _Statuses], secrets_file: Path
) -> None:
    runtime, statuses = worker
    raw = {"connector.class": CLASS, "password": f"${{file:{secrets_file}:password}}",
           "fail.with.password": "true"}
    assert not runtime.start_connector("c", raw, TargetState.STARTED)
    trace = statuses.connectors["c"].trace
    assert f"login refused for password {HIDDEN}" in trace
    assert SECRET not in trace


# ---- offsets: the plugin's hook gets the resolved config ----------------------------------


def test_the_alter_offsets_hook_gets_the_resolved_config(tmp_path: Path, plugins: Plugins) -> None:
    transformer = ConfigTransformer(
        {"env": EnvVarConfigProvider("env", None, {"CONNECT_ALTER_MODE": "false"})}
    )
    store = FileOffsetStore(tmp_path / "offsets.json")
    store.start()
    manager = OffsetManager(
        plugins, lambda config: store, ConsumerGroupOffsets({"bootstrap.servers": "127.0.0.1:1"}),
        transformer=transformer,
        record_times=RecordTimes(lambda name, config: {"bootstrap.servers": "127.0.0.1:1"}),
    )
    events = tmp_path / "events.jsonl"
    config = {"name": "c", "connector.class": "InstrumentedSource",
              "test.events.file": str(events), "test.alter.offsets": "${env:CONNECT_ALTER_MODE}"}
    offsets = [ConnectorOffset({"task": 0}, {"seq": 4})]
    message = manager.alter("c", config, offsets).message
    assert message.startswith("The Connect framework-managed offsets")  # the hook said False
    [event] = [e for e in read_events(events) if e["event"] == "alter_offsets"]
    assert event["mode"] == "false"
    with pytest.raises(ConfigReferenceError, match="CONNECT_NOPE is not set"):
        manager.alter("c", {**config, "test.alter.offsets": "${env:CONNECT_NOPE}"}, offsets)
    assert [e["event"] for e in read_events(events)] == ["alter_offsets"]
