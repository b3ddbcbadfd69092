"""Config providers: the worker properties that declare them, the file, directory and
environment providers with their allow-lists, references, resolution, reverse
transformation of task configs, and the masking of resolved values."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.providers import (
    ConfigProviderError,
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
)
from connect_grpc.config_providers.redaction import (
    HIDDEN,
    SECRETS,
    SecretRegistry,
    redact_secrets,
)
from connect_grpc.config_providers.specs import DIRECTORY, ENV, FILE, provider_specs
from connect_grpc.config_providers.transformer import (
    ConfigReferenceError,
    ConfigTransformer,
    Reference,
    has_references,
    references,
)
from connect_grpc.kernel.errors import InvalidArgumentError

KAFKA = "org.apache.kafka.common.config.provider"


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "db.properties").write_text(
        "# the database\nuser=app\npassword=file-secret-7f3a\n", encoding="utf-8"
    )
    (directory / "token").write_text("dir-secret-9c2e\n", encoding="utf-8")
    return directory


# ---- worker properties ------------------------------------------------------------------


def test_specs_accept_kafka_class_names_and_parameters(secrets_dir: Path) -> None:
    specs = provider_specs({
        "config.providers": "file, dir,env",
        "config.providers.file.class": f"{KAFKA}.FileConfigProvider",
        "config.providers.file.param.allowed.paths": f"{secrets_dir}, {secrets_dir.parent}",
        "config.providers.dir.class": "DirectoryConfigProvider",
        "config.providers.env.class": f"{KAFKA}.EnvVarConfigProvider",
        "config.providers.env.param.allowlist.pattern": "CONNECT_.*",
    })
    assert [(s.name, s.kind) for s in specs] == [("file", FILE), ("dir", DIRECTORY), ("env", ENV)]
    assert specs[0].allowed_paths == (secrets_dir.resolve(), secrets_dir.parent.resolve())
    assert specs[1].allowed_paths is None
    assert specs[2].allowlist_pattern == "CONNECT_.*"


def test_no_providers_by_default() -> None:
    assert provider_specs({}) == ()
    config = WorkerConfig.from_properties({"bootstrap.servers": "localhost:9092"})
    assert config.config_providers == ()


@pytest.mark.parametrize(
    ("props", "field", "text"),
    [
        ({"config.providers": "file"}, "config.providers.file.class", "is required"),
        ({"config.providers": "file", "config.providers.file.class": "com.acme.Vault"},
         "config.providers.file.class", "unknown provider class 'com.acme.Vault'"),
        ({"config.providers": "vault",
          "config.providers.vault.class": "com.github.jcustenborder.kafka.config.vault."
                                          "VaultConfigProvider"},
         "config.providers.vault.class", "a Java config provider's class is looked up on "
                                         "plugin.path, which is not set"),
        ({"config.providers": "a,a", "config.providers.a.class": "FileConfigProvider"},
         "config.providers", "provider 'a' is listed more than once"),
        ({"config.providers": "my:file"}, "config.providers", "may only contain"),
        ({"config.providers": "env", "config.providers.env.class": "EnvVarConfigProvider",
          "config.providers.env.param.allowed.paths": "/"},
         "config.providers.env.param.allowed.paths", "unknown parameter of the env provider"),
        ({"config.providers": "f", "config.providers.f.class": "FileConfigProvider",
          "config.providers.f.param.allowed.paths": "relative/dir"},
         "config.providers.f.param.allowed.paths", "path 'relative/dir' is not absolute"),
        ({"config.providers": "f", "config.providers.f.class": "FileConfigProvider",
          "config.providers.f.param.allowed.paths": "/no/such/dir-xyz"},
         "config.providers.f.param.allowed.paths", "path '/no/such/dir-xyz' does not exist"),
        ({"config.providers": "e", "config.providers.e.class": "EnvVarConfigProvider",
          "config.providers.e.param.allowlist.pattern": "(unclosed"},
         "config.providers.e.param.allowlist.pattern", "not a valid regular expression"),
        ({"config.providers": "f", "config.providers.f.class": "FileConfigProvider",
          "config.providers.vault.class": "FileConfigProvider"},
         "config.providers.vault.class", "does not list (it lists: f)"),
        ({"config.providers": "f", "config.providers.f.class": "FileConfigProvider",
          "config.providers.f.params.allowed.paths": "/"},
         "config.providers.f.params.allowed.paths", "unknown setting"),
    ],
)
def test_bad_provider_properties_name_the_property(
    props: dict[str, str], field: str, text: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        WorkerConfig.from_properties({"bootstrap.servers": "localhost:9092", **props})
    assert [v.field for v in caught.value.violations] == [field]
    assert text in caught.value.message


def test_the_workers_own_properties_resolve_with_its_providers(secrets_dir: Path) -> None:
    """KIP-421: a worker property's reference to a provider the same properties declare is
    resolved, and masked in log lines like a connector's."""
    config = WorkerConfig.from_properties({
        "bootstrap.servers": "localhost:9092",
        "config.providers": "file",
        "config.providers.file.class": "FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets_dir),
        "producer.sasl.jaas.config":
            f"x password=\"${{file:{secrets_dir}/db.properties:password}}\";",
        # a reference naming no declared provider is left as it is: Spark substitutes its own
        "spark.executor.extraJavaOptions": "-Dhome=${env:HOME}",
    })
    assert config.raw["producer.sasl.jaas.config"] == 'x password="file-secret-7f3a";'
    assert config.raw["spark.executor.extraJavaOptions"] == "-Dhome=${env:HOME}"
    assert config.spark_conf["spark.executor.extraJavaOptions"] == "-Dhome=${env:HOME}"
    assert SECRETS.redact("it is file-secret-7f3a") == f"it is {HIDDEN}"


def test_a_worker_property_whose_reference_does_not_resolve_stops_the_start(
    secrets_dir: Path,
) -> None:
    providers = {
        "bootstrap.servers": "localhost:9092",
        "config.providers": "file",
        "config.providers.file.class": "FileConfigProvider",
    }
    with pytest.raises(InvalidArgumentError) as caught:
        WorkerConfig.from_properties({
            **providers, "ssl.key.password": f"${{file:{secrets_dir}/db.properties:nope}}"})
    assert [v.field for v in caught.value.violations] == ["ssl.key.password"]
    assert f"properties file {secrets_dir}/db.properties has no key 'nope'" \
        in caught.value.message
    # a Java provider is built by the JVM these properties start: not for them
    with pytest.raises(InvalidArgumentError) as java:
        WorkerConfig.from_properties({
            "bootstrap.servers": "localhost:9092", "plugin.path": str(secrets_dir),
            "config.providers": "vault", "config.providers.vault.class": "com.acme.Vault",
            "sasl.jaas.config": "${vault:kafka:jaas}"})
    assert [v.field for v in java.value.violations] == ["sasl.jaas.config"]
    assert "'vault' is a Java config provider (com.acme.Vault)" in java.value.message


# ---- providers ---------------------------------------------------------------------------


def test_file_provider_reads_keys_of_a_properties_file(secrets_dir: Path) -> None:
    provider = FileConfigProvider("file", (secrets_dir.resolve(),))
    path = str(secrets_dir / "db.properties")
    assert provider.get(path, {"password", "user", "absent"}) == {
        "password": "file-secret-7f3a", "user": "app"
    }
    assert provider.why_missing(path, "absent") == f"properties file {path} has no key 'absent'"


def test_file_provider_refuses_paths_outside_its_allowed_paths(
    secrets_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.properties"
    outside.write_text("password=x\n", encoding="utf-8")
    provider = FileConfigProvider("file", (secrets_dir.resolve(),))
    with pytest.raises(ConfigProviderError, match=r"is not under the allowed\.paths of provider"):
        provider.get(str(outside), {"password"})
    dotted = f"{secrets_dir}/../outside.properties"
    with pytest.raises(ConfigProviderError, match=r"is not under the allowed\.paths"):
        provider.get(dotted, {"password"})
    (secrets_dir / "link.properties").symlink_to(outside)
    with pytest.raises(ConfigProviderError, match=r"is not under the allowed\.paths"):
        provider.get(str(secrets_dir / "link.properties"), {"password"})


def test_file_provider_errors_name_the_path_and_never_a_value(secrets_dir: Path) -> None:
    provider = FileConfigProvider("file")
    with pytest.raises(ConfigProviderError, match=r"cannot read properties file .*missing"):
        provider.get(str(secrets_dir / "missing.properties"), {"password"})
    with pytest.raises(ConfigProviderError, match=r"needs a path: \$\{file:/path"):
        provider.get("", {"password"})


def test_directory_provider_reads_whole_files(secrets_dir: Path, tmp_path: Path) -> None:
    provider = DirectoryConfigProvider("dir", (secrets_dir.resolve(),))
    assert provider.get(str(secrets_dir), {"token", "nope", "../db.properties"}) == {
        "token": "dir-secret-9c2e\n"
    }
    assert "no regular file 'nope'" in provider.why_missing(str(secrets_dir), "nope")
    assert "is not a file name" in provider.why_missing(str(secrets_dir), "../db.properties")
    with pytest.raises(ConfigProviderError, match="is not a directory"):
        provider.get(str(secrets_dir / "token"), {"x"})
    outside = tmp_path / "elsewhere"
    outside.write_text("x", encoding="utf-8")
    (secrets_dir / "escape").symlink_to(outside)
    with pytest.raises(ConfigProviderError, match=r"is not under the allowed\.paths"):
        provider.get(str(secrets_dir), {"escape"})


def test_env_provider_reads_allowed_variables_only() -> None:
    environ = {"CONNECT_DB_PASSWORD": "env-secret-1b8d", "HOME": "/root"}
    provider = EnvVarConfigProvider("env", "CONNECT_.*", environ)
    assert provider.get("", {"CONNECT_DB_PASSWORD", "HOME", "CONNECT_NOPE"}) == {
        "CONNECT_DB_PASSWORD": "env-secret-1b8d"
    }
    assert "does not match the allowlist.pattern of provider 'env' (CONNECT_.*)" in (
        provider.why_missing("", "HOME")
    )
    assert provider.why_missing("", "CONNECT_NOPE") == (
        "environment variable CONNECT_NOPE is not set"
    )
    with pytest.raises(ConfigProviderError, match="takes no path"):
        provider.get("/etc", {"HOME"})
    # the pattern must match the whole name, as Java's Matcher.matches does
    assert EnvVarConfigProvider("env", "CONNECT", environ).get("", {"CONNECT_DB_PASSWORD"}) == {}
    assert EnvVarConfigProvider("env", None, environ).get("", {"HOME"}) == {"HOME": "/root"}


def test_env_provider_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECT_UNIT_TEST_VAR", "from-the-environment")
    assert EnvVarConfigProvider("env").get("", {"CONNECT_UNIT_TEST_VAR"}) == {
        "CONNECT_UNIT_TEST_VAR": "from-the-environment"
    }


# ---- references and resolution -----------------------------------------------------------


def test_reference_syntax_is_kafkas() -> None:
    assert references("${file:/etc/db.properties:password}") == [
        Reference("${file:/etc/db.properties:password}", "file", "/etc/db.properties", "password")
    ]
    assert references("${env:HOME}") == [Reference("${env:HOME}", "env", "", "HOME")]
    assert [r.key for r in references("jdbc://${env:USER}:${dir:/s:pw}@db")] == ["USER", "pw"]
    assert references("${file:/a:b:c}")[0] == Reference("${file:/a:b:c}", "file", "/a", "b:c")
    assert not has_references("${no_colon}")
    assert not has_references("plain")
    assert not has_references(None)


@pytest.fixture
def transformer(secrets_dir: Path) -> ConfigTransformer:
    return ConfigTransformer({
        "file": FileConfigProvider("file", (secrets_dir.resolve(),)),
        "dir": DirectoryConfigProvider("dir"),
        "env": EnvVarConfigProvider("env", "CONNECT_.*", {"CONNECT_TOKEN": "env-secret-1b8d"}),
    })


def test_resolve_replaces_every_reference(
    transformer: ConfigTransformer, secrets_dir: Path
) -> None:
    config = {
        "password": f"${{file:{secrets_dir}/db.properties:password}}",
        "url": f"db://${{file:{secrets_dir}/db.properties:user}}@${{env:CONNECT_TOKEN}}/x",
        "token": f"${{dir:{secrets_dir}:token}}",
        "plain": "unchanged",
    }
    assert transformer.resolve(config) == {
        "password": "file-secret-7f3a",
        "url": "db://app@env-secret-1b8d/x",
        "token": "dir-secret-9c2e\n",
        "plain": "unchanged",
    }
    assert SECRETS.among(["... file-secret-7f3a ..."]) == ("file-secret-7f3a",)


def test_every_unresolvable_reference_is_reported_on_its_key(
    transformer: ConfigTransformer, secrets_dir: Path, tmp_path: Path
) -> None:
    resolution = transformer.resolve_all({
        "a": f"${{file:{secrets_dir}/db.properties:nope}}",
        "b": "${vault:secret/db:password}",
        "c": f"${{file:{tmp_path}/other.properties:password}}",
        "d": "${env:HOME}",
        "e": f"${{file:{secrets_dir}/db.properties:password}}",
    })
    problems = resolution.problems
    assert sorted(problems) == ["a", "b", "c", "d"]
    assert problems["a"] == [
        f"cannot resolve ${{file:{secrets_dir}/db.properties:nope}}: properties file "
        f"{secrets_dir}/db.properties has no key 'nope'"
    ]
    assert problems["b"] == [
        "cannot resolve ${vault:secret/db:password}: no config provider 'vault': this "
        "worker's providers (config.providers) are file, dir, env"
    ]
    assert "is not under the allowed.paths of provider 'file'" in problems["c"][0]
    assert "does not match the allowlist.pattern" in problems["d"][0]
    assert resolution.config["a"] == f"${{file:{secrets_dir}/db.properties:nope}}"
    assert resolution.config["e"] == "file-secret-7f3a"
    with pytest.raises(ConfigReferenceError) as caught:
        transformer.resolve({"z": "${env:HOME}", "y": "${vault:k}"})
    assert caught.value.key == "y"
    assert caught.value.message.startswith("config y: cannot resolve ${vault:k}")


def test_a_worker_without_providers_says_so() -> None:
    with pytest.raises(ConfigReferenceError, match=r"no config providers \(worker property"):
        ConfigTransformer().resolve({"password": "${file:/x:y}"})
    assert ConfigTransformer().resolve({"a": "b", "c": "${literal}"}) == {
        "a": "b", "c": "${literal}"
    }


def test_reverse_puts_references_back_into_task_configs() -> None:
    raw = {"password": "${file:/s/db.properties:password}", "host": "${env:CONNECT_HOST}",
           "port": "${env:CONNECT_PORT}", "topic": "t"}
    resolved = {"password": "file-secret-7f3a", "host": "db.example.com", "port": "5432",
                "topic": "t"}
    tasks = [
        {"password": "file-secret-7f3a", "topic": "t", "task.id": "0"},
        {"db.password": "file-secret-7f3a", "db.url": "db.example.com:5432", "task.id": "1"},
        {"host": "changed-by-the-connector", "shard": "5432"},
    ]
    assert ConfigTransformer.reverse(raw, resolved, tasks) == [
        {"password": "${file:/s/db.properties:password}", "topic": "t", "task.id": "0"},
        # beyond Kafka: a copy of a resolved value under another key is a reference too
        {"db.password": "${file:/s/db.properties:password}", "db.url": "db.example.com:5432",
         "task.id": "1"},
        # as Kafka: a key the connector config has with references gets its raw value; a
        # short value ("5432") is left alone, as unrelated text could equal it
        {"host": "${env:CONNECT_HOST}", "shard": "5432"},
    ]


def test_a_reversed_task_config_resolves_to_what_the_connector_gave(
    transformer: ConfigTransformer, secrets_dir: Path
) -> None:
    raw = {"password": f"${{file:{secrets_dir}/db.properties:password}}"}
    resolved = transformer.resolve(raw)
    task = {"db.password": resolved["password"], "task.id": "0"}
    [stored] = ConfigTransformer.reverse(raw, resolved, [task])
    assert "file-secret-7f3a" not in str(stored)
    assert transformer.resolve(stored) == task


# ---- masking -----------------------------------------------------------------------------


def test_registry_masks_long_values_only() -> None:
    registry = SecretRegistry()
    assert not registry
    registry.register(["s3cr3t-value", "abc", "s3cr3t"])
    assert registry.redact("got s3cr3t-value and s3cr3t and abc") == (
        f"got {HIDDEN} and {HIDDEN} and abc"
    )
    assert registry.among(["x s3cr3t y", "nothing"]) == ("s3cr3t",)


def test_log_processor_masks_registered_values_in_event_fields() -> None:
    SECRETS.register(["processor-secret-42"])
    event = {
        "event": "plugin_said processor-secret-42",
        "config": {"password": "processor-secret-42", "port": 1},
        "args": ["processor-secret-42", 3],
        "count": 7,
    }
    assert redact_secrets(None, "info", event) == {
        "event": f"plugin_said {HIDDEN}",
        "config": {"password": HIDDEN, "port": 1},
        "args": [HIDDEN, 3],
        "count": 7,
    }

