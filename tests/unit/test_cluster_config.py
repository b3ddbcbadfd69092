"""DistributedConfig: Kafka Connect's distributed-worker properties, defaults and rules."""

from __future__ import annotations

import pytest

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.kernel.errors import InvalidArgumentError

BASE = {
    "bootstrap.servers": "127.0.0.1:9092",
    "group.id": "connect-cluster",
    "config.storage.topic": "connect-configs",
    "offset.storage.topic": "connect-offsets",
    "status.storage.topic": "connect-status",
    "listeners": "grpc://127.0.0.1:8083",
}


def parse(**overrides: str | None) -> DistributedConfig:
    """BASE with each override applied (dots spelled as ``__``); None removes a property."""
    props = dict(BASE)
    for key, value in overrides.items():
        name = key.replace("__", ".")
        if value is None:
            props.pop(name, None)
        else:
            props[name] = value
    return DistributedConfig.from_properties(props)


def refused(**overrides: str | None) -> InvalidArgumentError:
    with pytest.raises(InvalidArgumentError) as caught:
        parse(**overrides)
    return caught.value


def violated_field(error: InvalidArgumentError) -> str:
    assert len(error.violations) == 1
    return error.violations[0].field


def test_defaults_are_kafka_connects() -> None:
    config = parse()
    assert config.group_id == "connect-cluster"
    assert (config.config_topic, config.offset_topic, config.status_topic) == (
        "connect-configs",
        "connect-offsets",
        "connect-status",
    )
    assert config.config_replication_factor == 3
    assert config.offset_replication_factor == 3
    assert config.status_replication_factor == 3
    assert config.offset_partitions == 25
    assert config.status_partitions == 5
    assert config.session_timeout_ms == 10_000
    assert config.heartbeat_interval_ms == 1_000
    assert config.rebalance_timeout_ms == 60_000
    assert config.default_api_timeout_ms == 60_000


def test_leader_election_topic_defaults_to_config_topic_suffixed() -> None:
    assert parse().leader_election_topic == "connect-configs-leader"
    assert parse(leader__election__topic="elect").leader_election_topic == "elect"


def test_every_value_is_read() -> None:
    config = parse(
        config__storage__replication__factor="1",
        offset__storage__replication__factor="2",
        status__storage__replication__factor="-1",
        offset__storage__partitions="-1",
        status__storage__partitions="7",
        session__timeout__ms="45000",
        heartbeat__interval__ms="15000",
        rebalance__timeout__ms="120000",
        default__api__timeout__ms="5000",
    )
    assert config.config_replication_factor == 1
    assert config.offset_replication_factor == 2
    assert config.status_replication_factor == -1
    assert config.offset_partitions == -1
    assert config.status_partitions == 7
    assert (config.session_timeout_ms, config.heartbeat_interval_ms) == (45_000, 15_000)
    assert config.rebalance_timeout_ms == 120_000
    assert config.default_api_timeout_ms == 5_000


def test_values_are_trimmed_as_configdef_trims_them() -> None:
    config = parse(group__id="  g1 \t", offset__storage__partitions=" 3 ")
    assert config.group_id == "g1"
    assert config.offset_partitions == 3


@pytest.mark.parametrize(
    "name",
    ["group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic"],
)
def test_missing_required_property_is_named(name: str) -> None:
    error = refused(**{name.replace(".", "__"): None})
    assert violated_field(error) == name
    assert "required" in error.message


@pytest.mark.parametrize("name", ["group.id", "config.storage.topic", "status.storage.topic"])
def test_blank_required_property_is_refused(name: str) -> None:
    assert violated_field(refused(**{name.replace(".", "__"): " \t "})) == name


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("config.storage.topic", "bad topic"),
        ("offset.storage.topic", "a/b"),
        ("status.storage.topic", "x" * 250),
        ("leader.election.topic", ".."),
    ],
)
def test_illegal_topic_name_is_refused(name: str, value: str) -> None:
    error = refused(**{name.replace(".", "__"): value})
    assert violated_field(error) == name
    assert "illegal" in error.message or "cannot be" in error.message


def test_too_long_default_leader_topic_names_leader_property() -> None:
    error = refused(config__storage__topic="c" * 249)
    assert violated_field(error) == "leader.election.topic"


def test_internal_topics_must_be_distinct() -> None:
    error = refused(status__storage__topic="connect-offsets")
    assert violated_field(error) == "status.storage.topic"
    assert "offset.storage.topic" in error.message
    error = refused(leader__election__topic="connect-configs")
    assert violated_field(error) == "leader.election.topic"


INT_PROPERTIES = [
    "config.storage.replication.factor",
    "offset.storage.replication.factor",
    "status.storage.replication.factor",
    "offset.storage.partitions",
    "status.storage.partitions",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
    "default.api.timeout.ms",
]


@pytest.mark.parametrize("name", INT_PROPERTIES)
@pytest.mark.parametrize("value", ["1_0", "2147483648", "ten", "", "0x10", "1.5"])
def test_bad_integer_is_refused_naming_the_property(name: str, value: str) -> None:
    error = refused(**{name.replace(".", "__"): value})
    assert violated_field(error) == name
    assert repr(value) in error.message


@pytest.mark.parametrize(
    "name",
    [
        "config.storage.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
    ],
)
def test_replication_factor_is_minus_one_or_positive_short(name: str) -> None:
    key = name.replace(".", "__")
    assert violated_field(refused(**{key: "0"})) == name
    assert violated_field(refused(**{key: "-2"})) == name
    assert violated_field(refused(**{key: "32768"})) == name
    assert getattr(parse(**{key: "32767"}), _field(name)) == 32767


@pytest.mark.parametrize("name", ["offset.storage.partitions", "status.storage.partitions"])
def test_partitions_are_minus_one_or_positive(name: str) -> None:
    key = name.replace(".", "__")
    assert violated_field(refused(**{key: "0"})) == name
    assert violated_field(refused(**{key: "-5"})) == name
    assert getattr(parse(**{key: "-1"}), _field(name)) == -1


def _field(name: str) -> str:
    return {
        "config.storage.replication.factor": "config_replication_factor",
        "offset.storage.replication.factor": "offset_replication_factor",
        "status.storage.replication.factor": "status_replication_factor",
        "offset.storage.partitions": "offset_partitions",
        "status.storage.partitions": "status_partitions",
    }[name]


@pytest.mark.parametrize(
    "name", ["session.timeout.ms", "heartbeat.interval.ms", "default.api.timeout.ms"]
)
def test_timeouts_must_be_positive(name: str) -> None:
    assert violated_field(refused(**{name.replace(".", "__"): "0"})) == name


@pytest.mark.parametrize("heartbeat", ["10000", "20000"])
def test_heartbeat_must_be_below_session_timeout(heartbeat: str) -> None:
    error = refused(heartbeat__interval__ms=heartbeat)
    assert violated_field(error) == "heartbeat.interval.ms"
    assert "session.timeout.ms" in error.message


def test_heartbeat_just_below_session_timeout_is_accepted() -> None:
    config = parse(session__timeout__ms="6000", heartbeat__interval__ms="5999")
    assert config.heartbeat_interval_ms == 5999


def test_advertised_defaults_to_the_listener() -> None:
    config = parse(listeners="grpc://10.0.0.5:9000,grpc://127.0.0.1:9001")
    assert (config.advertised_host, config.advertised_port) == ("10.0.0.5", 9000)
    assert config.advertised_address == "10.0.0.5:9000"
    assert config.advertised_listener == "grpc://10.0.0.5:9000"


def test_advertised_listener_takes_host_port_or_url() -> None:
    assert parse(advertised__listener="worker-1:8083").advertised_address == "worker-1:8083"
    assert parse(advertised__listener="grpc://worker-2:8084").advertised_address == "worker-2:8084"


def test_advertised_ipv6_address_is_bracketed() -> None:
    config = parse(advertised__listener="[fd00::1]:8083")
    assert config.advertised_host == "fd00::1"
    assert config.advertised_address == "[fd00::1]:8083"


@pytest.mark.parametrize(
    "listeners", ["grpc://0.0.0.0:8083", "grpc://[::]:8083", "grpc://:8083"]
)
def test_wildcard_listener_needs_advertised_listener(listeners: str) -> None:
    error = refused(listeners=listeners)
    assert violated_field(error) == "advertised.listener"
    assert "set advertised.listener" in error.message
    config = parse(listeners=listeners, advertised__listener="worker-1:8083")
    assert config.advertised_address == "worker-1:8083"


@pytest.mark.parametrize("value", ["0.0.0.0:8083", "grpc://[::]:8083", "[0:0:0:0:0:0:0:0]:1"])
def test_wildcard_advertised_listener_is_refused(value: str) -> None:
    error = refused(advertised__listener=value)
    assert violated_field(error) == "advertised.listener"
    assert "wildcard" in error.message


@pytest.mark.parametrize(
    "value", ["worker-1", "worker-1:", "worker-1:http", "worker-1:0", "worker-1:70000",
              "http://worker-1:8083"]
)
def test_malformed_advertised_listener_is_refused(value: str) -> None:
    error = refused(advertised__listener=value)
    assert violated_field(error) == "advertised.listener"
    assert repr(value) in error.message


def test_listener_on_port_zero_needs_advertised_listener() -> None:
    error = refused(listeners="grpc://127.0.0.1:0")
    assert violated_field(error) == "advertised.listener"
    assert parse(listeners="grpc://127.0.0.1:0", advertised__listener="h:1").advertised_port == 1


def test_malformed_listeners_names_listeners() -> None:
    assert violated_field(refused(listeners="http://127.0.0.1:8083")) == "listeners"


def test_config_is_frozen() -> None:
    config = parse()
    with pytest.raises(AttributeError):
        config.group_id = "other"  # type: ignore[misc]
