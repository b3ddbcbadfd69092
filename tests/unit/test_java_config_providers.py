"""Java config providers of ``plugin.path``: declared in the worker properties, looked up
through the worker's JVM (a scripted lookup here; tests/integration/test_java_config_providers.py
runs a real one), their values masked, their failures a reference's problem, and a provider
that cannot be built a start-up error naming its property."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pytest

from connect_grpc import app
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.providers import ConfigProviderError, ConfigValues
from connect_grpc.config_providers.redaction import HIDDEN, SECRETS
from connect_grpc.config_providers.specs import JAVA, ProviderSpec, provider_specs
from connect_grpc.config_providers.transformer import (
    ConfigReferenceError,
    ConfigTransformer,
    reloads_when_expired,
)
from connect_grpc.kernel.errors import InvalidArgumentError, StartupError, UnavailableError

VAULT = "com.github.jcustenborder.kafka.config.vault.VaultConfigProvider"


def _props(**more: str) -> dict[str, str]:
    return {"config.providers": "vault", "config.providers.vault.class": VAULT,
            "plugin.path": "/opt/plugins", **more}


class ScriptedLookup:
    """The JVM's answers: values by (path, key), a time to live by path; errors raised as
    told."""

    def __init__(self, values: Mapping[tuple[str, str], str],
                 error: Exception | None = None, ttls: Mapping[str, int] | None = None) -> None:
        self.values = dict(values)
        self.error = error
        self.ttls = dict(ttls or {})
        self.asked: list[tuple[str, str, tuple[str, ...]]] = []
        self.opened: list[str] = []

    def open_config_provider(self, spec: ProviderSpec, timeout_s: float) -> None:
        if self.error is not None:
            raise self.error
        self.opened.append(spec.name)

    def config_data(
        self, spec: ProviderSpec, path: str, keys: Collection[str], timeout_s: float
    ) -> ConfigValues:
        self.asked.append((spec.name, path, tuple(sorted(keys))))
        if self.error is not None:
            raise self.error
        return ConfigValues(
            {key: self.values[(path, key)] for key in keys if (path, key) in self.values},
            self.ttls.get(path))


def test_a_class_that_is_not_built_in_is_a_java_provider_when_plugin_path_is_set() -> None:
    [spec] = provider_specs(_props(**{
        "config.providers.vault.param.vault.address": "https://vault:8200",
        "config.providers.vault.param.secrets.version": "2",
    }))
    assert spec == ProviderSpec(
        "vault", JAVA, class_name=VAULT,
        params=(("secrets.version", "2"), ("vault.address", "https://vault:8200")))
    # what is not a param is refused as for any provider
    with pytest.raises(InvalidArgumentError) as caught:
        provider_specs(_props(**{"config.providers.vault.params.vault.address": "x"}))
    assert [v.field for v in caught.value.violations] == [
        "config.providers.vault.params.vault.address"]


def test_java_references_resolve_through_the_lookup_and_are_masked() -> None:
    lookup = ScriptedLookup({("secret/db", "password"): "java-vault-secret-9c1e",
                             ("secret/db", "user"): "app"})
    transformer = ConfigTransformer.from_specs(provider_specs(_props()), lookup)
    config = {"connection.password": "${vault:secret/db:password}",
              "connection.user": "${vault:secret/db:user}", "topic": "t"}
    assert transformer.resolve(config) == {
        "connection.password": "java-vault-secret-9c1e", "connection.user": "app", "topic": "t"}
    # one lookup per path, as Kafka does
    assert lookup.asked == [("vault", "secret/db", ("password", "user"))]
    assert SECRETS.redact("it was java-vault-secret-9c1e") == f"it was {HIDDEN}"


def test_a_missing_key_or_a_failing_lookup_is_the_references_problem() -> None:
    transformer = ConfigTransformer.from_specs(provider_specs(_props()), ScriptedLookup({}))
    with pytest.raises(ConfigReferenceError) as missing:
        transformer.resolve({"password": "${vault:secret/db:password}"})
    assert missing.value.key == "password"
    assert (f"the Java provider 'vault' ({VAULT}) has no value for key 'password' at path "
            "'secret/db'") in missing.value.problem

    threw = ConfigTransformer.from_specs(provider_specs(_props()), ScriptedLookup(
        {}, ConfigProviderError(f"provider 'vault' ({VAULT}): org.apache.kafka.common.config."
                                "ConfigException: permission denied")))
    problems = threw.resolve_all({"password": "${vault:secret/db:password}"}).problems
    assert problems == {"password": [
        f"cannot resolve ${{vault:secret/db:password}}: provider 'vault' ({VAULT}): "
        "org.apache.kafka.common.config.ConfigException: permission denied"]}

    late = ConfigTransformer.from_specs(provider_specs(_props()), ScriptedLookup(
        {}, UnavailableError("the scan of plugin.path's Java plugins has not finished")))
    [problem] = late.resolve_all({"password": "${vault:p:k}"}).problems["password"]
    assert "did not answer: the scan of plugin.path's Java plugins has not finished" in problem

    nowhere = ConfigTransformer.from_specs(provider_specs(_props()), None)
    [problem] = nowhere.resolve_all({"password": "${vault:p:k}"}).problems["password"]
    assert "plugin.path holds no Java plugins" in problem


def test_the_time_to_live_a_java_provider_gives_is_the_resolutions() -> None:
    lookup = ScriptedLookup({("secret/db", "password"): "lease-pw-41f0a", ("secret/mq", "k"): "v",
                             ("static", "k"): "w"}, ttls={"secret/db": 60_000, "secret/mq": 5_000})
    transformer = ConfigTransformer.from_specs(provider_specs(_props()), lookup)
    resolution = transformer.resolve_all({"a": "${vault:secret/db:password}",
                                          "b": "${vault:secret/mq:k}", "c": "${vault:static:k}"})
    assert resolution.ttls == {("vault", "secret/db"): 60_000, ("vault", "secret/mq"): 5_000}
    assert resolution.ttl_ms == 5_000
    assert transformer.resolve_all({"c": "${vault:static:k}"}).ttl_ms is None


@pytest.mark.parametrize(("value", "restarts"), [
    (None, True), ("restart", True), ("RESTART", True), (" none ", False), ("None", False)])
def test_config_action_reload_is_read_as_kafka_reads_it(value: str | None, restarts: bool) -> None:
    config = {} if value is None else {"config.action.reload": value}
    assert reloads_when_expired(config) is restarts


class _Java:
    """What the start-up check uses of the worker's JavaPlugins."""

    def __init__(self, lookup: ScriptedLookup, scanned: bool = True) -> None:
        self.config_lookup = lookup
        self.scanned = scanned

    def await_scan(self, timeout_s: float) -> None:
        if not self.scanned:
            raise UnavailableError("the scan of plugin.path's Java plugins has not finished")


def _worker(**more: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "b:9092", **_props(**more)})


def test_a_java_provider_without_java_plugins_stops_the_start_naming_its_property() -> None:
    with pytest.raises(StartupError) as caught:
        app._check_java_config_providers(_worker(), None)
    assert caught.value.property_name == "config.providers.vault.class"
    assert caught.value.exit_code == 2
    assert "plugin.path holds no Java plugins" in caught.value.message


def test_each_java_provider_is_built_at_the_start_and_one_that_cannot_be_stops_it() -> None:
    fine = ScriptedLookup({})
    java: Any = _Java(fine)
    app._open_java_config_providers(_worker(), java)
    assert fine.opened == ["vault"]

    refused: Any = _Java(ScriptedLookup({}, ConfigProviderError(
        f"provider 'vault' ({VAULT}): org.apache.kafka.connect.errors.ConnectException: "
        f"Failed to find any class that implements ConfigProvider and which name matches {VAULT}")))
    with pytest.raises(StartupError) as caught:
        app._open_java_config_providers(_worker(), refused)
    assert caught.value.property_name == "config.providers.vault.class"
    assert caught.value.exit_code == 2
    assert caught.value.message.startswith(
        f"config.providers.vault.class: provider 'vault' ({VAULT}): ")

    unscanned: Any = _Java(ScriptedLookup({}), scanned=False)
    with pytest.raises(StartupError) as late:
        app._open_java_config_providers(_worker(), unscanned)
    assert late.value.exit_code == 1
