"""The worker's connector.client.config.override.policy (with KIP-1188's allowlist): the
worker property read as Kafka Connect reads it, and connector validation refusing an
override the policy does not allow, on its own key, with Kafka Connect's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.config.override_policy import (
    ALLOWLIST_PROPERTY,
    POLICY_PROPERTY,
    ClientOverridePolicy,
)
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.domain import State, TargetState, TaskId
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.task_fakes import StatusRecorder


def _policy(**props: str) -> ClientOverridePolicy:
    return ClientOverridePolicy.from_properties(
        {key.replace("_", "."): value for key, value in props.items()}
    )


def _worker(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "localhost:9092", **props})


def _refusal(policy: str, setting: str) -> str:
    return (f"The '{policy}' policy does not allow '{setting}' to be overridden in the "
            "connector configuration.")


# --- the worker property ---------------------------------------------------------------------

def test_the_default_policy_is_all_and_allows_everything() -> None:
    policy = _worker().client_override_policy
    assert policy.name == "All"
    assert policy.allows("bootstrap.servers") and policy.allows("anything")


@pytest.mark.parametrize("name", ["All", "None", "Principal", "Allowlist"])
def test_a_policy_is_named_by_its_alias_or_kafkas_class_name(name: str) -> None:
    for text in (name, f"{name}ConnectorClientConfigOverridePolicy",
                 f"org.apache.kafka.connect.connector.policy.{name}"
                 "ConnectorClientConfigOverridePolicy", f"  {name}\t"):
        assert _worker(**{POLICY_PROPERTY: text}).client_override_policy.name == name


@pytest.mark.parametrize(
    "text", ["all", "NONE", "", "Custom", "com.example.MyPolicy",
             "org.apache.kafka.connect.connector.policy.NonePolicy"],
)
def test_any_other_policy_stops_the_worker_naming_the_key(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        _worker(**{POLICY_PROPERTY: text})
    assert [v.field for v in raised.value.violations] == [POLICY_PROPERTY]
    assert "expected one of All, None, Principal, Allowlist" in raised.value.message
    assert repr(text) in raised.value.message


def test_a_config_provider_reference_is_refused_as_such() -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        _worker(**{POLICY_PROPERTY: "${file:/etc/policy.properties:policy}"})
    assert [v.field for v in raised.value.violations] == [POLICY_PROPERTY]
    assert "config provider references are resolved in connector configs" in (
        raised.value.message
    )


def test_the_allowlist_is_a_list_of_settings() -> None:
    policy = _policy(**{POLICY_PROPERTY: "Allowlist",
                        ALLOWLIST_PROPERTY: " linger.ms , sasl.jaas.config"})
    assert policy.allowlist == {"linger.ms", "sasl.jaas.config"}
    assert policy.allows("linger.ms") and not policy.allows("acks")


def test_an_empty_or_missing_allowlist_allows_nothing() -> None:
    for props in ({POLICY_PROPERTY: "Allowlist"},
                  {POLICY_PROPERTY: "Allowlist", ALLOWLIST_PROPERTY: "  "}):
        policy = ClientOverridePolicy.from_properties(props)
        assert policy.allowlist == frozenset() and not policy.allows("linger.ms")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("acks,linger.ms,acks", "Configuration 'connector.client.config.override.allowlist' "
                                "values must not be duplicated."),
        ("acks,,linger.ms", "Configuration 'connector.client.config.override.allowlist' "
                            "values must not be empty."),
        (",,", "Configuration 'connector.client.config.override.allowlist' values must not "
               "be duplicated."),
    ],
)
def test_a_bad_allowlist_stops_the_worker_with_kafkas_message(raw: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        _worker(**{POLICY_PROPERTY: "Allowlist", ALLOWLIST_PROPERTY: raw})
    assert [(v.field, v.description) for v in raised.value.violations] == [
        (ALLOWLIST_PROPERTY, message)
    ]


def test_the_allowlist_is_ignored_by_the_other_policies_as_in_kafka() -> None:
    policy = _policy(**{POLICY_PROPERTY: "None", ALLOWLIST_PROPERTY: "acks,acks"})
    assert policy.allowlist_ignored and policy.allowlist == frozenset()
    assert not policy.allows("acks")
    assert not _policy(**{POLICY_PROPERTY: "None"}).allowlist_ignored


def test_principal_allows_the_clients_identity_only() -> None:
    policy = _policy(**{POLICY_PROPERTY: "Principal"})
    for setting in ("sasl.jaas.config", "sasl.mechanism", "security.protocol"):
        assert policy.allows(setting)
    assert not policy.allows("linger.ms") and not policy.allows("ssl.keystore.location")


# --- which overrides are checked, as Kafka Connect checks them --------------------------------

def test_a_source_has_its_producer_overrides_checked() -> None:
    policy = ClientOverridePolicy("None")
    config = {"producer.override.linger.ms": "5", "consumer.override.fetch.min.bytes": "1",
              "admin.override.request.timeout.ms": "1"}
    assert policy.errors(config, sink=False) == {
        "producer.override.linger.ms": [_refusal("None", "linger.ms")]
    }


def test_a_source_creating_topics_or_with_a_dead_letter_queue_has_its_admin_checked() -> None:
    policy = ClientOverridePolicy("None")
    for extra in ({"topic.creation.default.partitions": "1"},
                  {"errors.deadletterqueue.topic.name": "dlq"}):
        errors = policy.errors({"admin.override.request.timeout.ms": "1", **extra}, sink=False)
        assert errors == {
            "admin.override.request.timeout.ms": [_refusal("None", "request.timeout.ms")]
        }


def test_a_sink_has_its_consumer_checked_and_its_producer_and_admin_with_a_dlq() -> None:
    policy = ClientOverridePolicy("None")
    config = {"producer.override.acks": "1", "consumer.override.max.poll.records": "5",
              "admin.override.client.id": "x"}
    assert policy.errors(config, sink=True) == {
        "consumer.override.max.poll.records": [_refusal("None", "max.poll.records")]
    }
    errors = policy.errors({**config, "errors.deadletterqueue.topic.name": " dlq "}, sink=True)
    assert sorted(errors) == ["admin.override.client.id", "consumer.override.max.poll.records",
                              "producer.override.acks"]


def test_allowlist_and_principal_refuse_only_what_they_do_not_list() -> None:
    allowlist = ClientOverridePolicy("Allowlist", frozenset({"linger.ms"}))
    config = {"producer.override.linger.ms": "5", "producer.override.acks": "all"}
    assert allowlist.errors(config, sink=False) == {
        "producer.override.acks": [_refusal("Allowlist", "acks")]
    }
    principal = ClientOverridePolicy("Principal")
    assert principal.errors({"producer.override.sasl.mechanism": "PLAIN", **config},
                            sink=False) == {
        "producer.override.linger.ms": [_refusal("Principal", "linger.ms")],
        "producer.override.acks": [_refusal("Principal", "acks")],
    }
    assert ClientOverridePolicy("All").errors(config, sink=False) == {}


# --- connector validation --------------------------------------------------------------------

def _validator(policy: ClientOverridePolicy) -> ConfigValidator:
    return ConfigValidator(Plugins(), max_tasks=8, override_policy=policy)


def _sequence(**extra: str) -> dict[str, str]:
    return {"connector.class": "SequenceSource", "topic": "t", **extra}


def test_validation_reports_a_refused_override_on_its_key() -> None:
    config = _sequence(**{"producer.override.linger.ms": "5"})
    errors = dict(_validator(ClientOverridePolicy("None")).validate(config).all_errors())
    assert errors == {"producer.override.linger.ms": _refusal("None", "linger.ms")}
    assert _validator(ClientOverridePolicy()).validate(config).all_errors() == []


def test_a_create_with_a_refused_override_is_invalid_argument_naming_the_key() -> None:
    config = _sequence(**{"producer.override.acks": "all",
                          "producer.override.linger.ms": "5"})
    policy = ClientOverridePolicy("Allowlist", frozenset({"linger.ms"}))
    with pytest.raises(InvalidArgumentError) as raised:
        _validator(policy).ensure_valid(config)
    assert [(v.field, v.description) for v in raised.value.violations] == [
        ("config.producer.override.acks", _refusal("Allowlist", "acks"))
    ]
    assert "contains the following 1 error(s)" in raised.value.message


def test_a_sink_without_a_dlq_keeps_its_unused_producer_override_as_in_kafka() -> None:
    config = {"connector.class": "FileStreamSink", "file": "/tmp/x", "topics": "t",
              "producer.override.acks": "all"}
    assert _validator(ClientOverridePolicy("None")).validate(config).all_errors() == []


# --- the check at each task's start ----------------------------------------------------------

def test_a_task_whose_overrides_the_policy_now_refuses_fails_naming_the_key(
    tmp_path: Path,
) -> None:
    """A connector stored under an earlier policy: its task fails at start, as in Kafka
    Connect, and nothing of it runs."""
    config = _worker(**{"worker.id": "w", POLICY_PROPERTY: "None"})
    statuses = StatusRecorder()
    worker = Worker(config, Plugins(), FileOffsetStore(tmp_path / "offsets.json"), statuses)
    connector = {"connector.class": "FileStreamSource", "topic": "t",
                 "file": str(tmp_path / "in.txt"), "producer.override.acks": "1"}
    task = TaskId("c", 0)
    assert not worker.start_task(task, connector, {"topic": "t"}, TargetState.STARTED)
    status = statuses.last()
    assert status.state is State.FAILED
    assert status.trace.splitlines()[0].endswith(
        "Client config overrides not allowed: producer.override.acks: "
        + _refusal("None", "acks")
    )
    assert task not in worker.task_ids()
