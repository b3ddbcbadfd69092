"""The distributed worker's own properties, with Kafka Connect's names and defaults.

``connect-grpc distributed`` reads the same properties file as the standalone worker; the
settings every worker has (``bootstrap.servers``, ``listeners``, ``spark.*``, …) stay in
:class:`~connect_grpc.config.worker.WorkerConfig`, and :class:`DistributedConfig` adds what
only a cluster member needs: its group, the three internal topics and how they are created,
the group timeouts, and the address other workers forward writes to.

Parsing follows Kafka's ``ConfigDef`` (values trimmed as Java's ``String.trim``, integers
as ``Integer.parseInt``), so a worker.properties written for Apache Kafka Connect means the
same here. Every bad or missing property raises
:class:`~connect_grpc.kernel.errors.InvalidArgumentError` naming it, which the command reports as
one ``worker_start_failed`` line with exit code 2.

One property is our own: ``leader.election.topic``, the one-partition topic whose consumer
group (``group.id``) elects the leader. Kafka Connect elects its leader inside its own group
protocol, which a librdkafka client cannot speak; we use an ordinary consumer group instead.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from connect_grpc.config.worker import DEFAULT_LISTENER, int_property, parse_grpc_listener
from connect_grpc.kernel.configdef import INT_MAX, LONG_MAX, java_trim, topic_name_error
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.security.session_key import DEFAULT_TTL_MS as DEFAULT_KEY_TTL_MS

GROUP_ID = "group.id"
CONFIG_TOPIC = "config.storage.topic"
OFFSET_TOPIC = "offset.storage.topic"
STATUS_TOPIC = "status.storage.topic"
LEADER_TOPIC = "leader.election.topic"
CONFIG_REPLICATION = "config.storage.replication.factor"
OFFSET_REPLICATION = "offset.storage.replication.factor"
STATUS_REPLICATION = "status.storage.replication.factor"
OFFSET_PARTITIONS = "offset.storage.partitions"
STATUS_PARTITIONS = "status.storage.partitions"
SESSION_TIMEOUT = "session.timeout.ms"
HEARTBEAT_INTERVAL = "heartbeat.interval.ms"
REBALANCE_TIMEOUT = "rebalance.timeout.ms"
ADVERTISED_LISTENER = "advertised.listener"
LISTENERS = "listeners"
#: Kafka Connect's (KIP-507): how long the leader uses one session key before the next.
KEY_TTL = "inter.worker.key.ttl.ms"
#: An admin client setting that Kafka Connect's start-up lookup of the Kafka cluster takes
#: from the worker properties: how long a starting worker waits for Kafka to answer.
DEFAULT_API_TIMEOUT = "default.api.timeout.ms"

#: Suffix of the default ``leader.election.topic``: ``<config.storage.topic>-leader``.
LEADER_TOPIC_SUFFIX = "-leader"
#: Kafka's replication factor is a Java ``short``.
SHORT_MAX = 32767
#: "Let the broker choose" for a replication factor or a partition count (KIP-464).
BROKER_DEFAULT = -1

DEFAULT_REPLICATION_FACTOR = 3
DEFAULT_OFFSET_PARTITIONS = 25
DEFAULT_STATUS_PARTITIONS = 5
DEFAULT_SESSION_TIMEOUT_MS = 10_000
#: Kafka Connect's default is 3 s. Survivors learn that the leader's session expired at
#: their next heartbeat, so failover takes up to session.timeout.ms + one interval: 1 s
#: keeps it within session.timeout.ms + 2 s at the cost of a few small requests.
DEFAULT_HEARTBEAT_INTERVAL_MS = 1_000
DEFAULT_REBALANCE_TIMEOUT_MS = 60_000
DEFAULT_API_TIMEOUT_MS = 60_000


@dataclass(frozen=True, slots=True)
class DistributedConfig:
    """What a worker needs to be a member of a cluster, beyond :class:`WorkerConfig`.

    Replication factors and partition counts are used only when a topic is created; -1
    (:data:`BROKER_DEFAULT`) lets the broker apply its ``default.replication.factor`` /
    ``num.partitions``. The config topic and the leader-election topic always have one
    partition, and the leader-election topic is created with the config topic's
    replication factor.
    """

    group_id: str
    config_topic: str
    offset_topic: str
    status_topic: str
    leader_election_topic: str
    #: The host and port other workers connect to when they forward a write to this one.
    advertised_host: str
    advertised_port: int
    config_replication_factor: int = DEFAULT_REPLICATION_FACTOR
    offset_replication_factor: int = DEFAULT_REPLICATION_FACTOR
    status_replication_factor: int = DEFAULT_REPLICATION_FACTOR
    offset_partitions: int = DEFAULT_OFFSET_PARTITIONS
    status_partitions: int = DEFAULT_STATUS_PARTITIONS
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    rebalance_timeout_ms: int = DEFAULT_REBALANCE_TIMEOUT_MS
    #: ``inter.worker.key.ttl.ms``: the leader writes a new session key this often.
    key_ttl_ms: int = DEFAULT_KEY_TTL_MS
    #: ``default.api.timeout.ms``: how long start-up waits for Kafka (internal topics).
    default_api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS

    @property
    def advertised_address(self) -> str:
        """``host:port`` as a gRPC channel target (an IPv6 host in brackets)."""
        host = f"[{self.advertised_host}]" if ":" in self.advertised_host else self.advertised_host
        return f"{host}:{self.advertised_port}"

    @property
    def advertised_listener(self) -> str:
        """``grpc://host:port``: the advertised address in the ``listeners`` form."""
        return f"grpc://{self.advertised_address}"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> DistributedConfig:
        """Parses the worker properties (the mapping ``WorkerConfig.from_properties`` takes).

        Raises InvalidArgumentError naming the first bad or missing property.
        """
        topics = _topics(props)
        host, port = _advertised(props)
        session_ms = int_property(props, SESSION_TIMEOUT, DEFAULT_SESSION_TIMEOUT_MS, 1)
        return cls(
            group_id=_required(props, GROUP_ID),
            config_topic=topics[CONFIG_TOPIC],
            offset_topic=topics[OFFSET_TOPIC],
            status_topic=topics[STATUS_TOPIC],
            leader_election_topic=topics[LEADER_TOPIC],
            advertised_host=host,
            advertised_port=port,
            config_replication_factor=_replication_factor(props, CONFIG_REPLICATION),
            offset_replication_factor=_replication_factor(props, OFFSET_REPLICATION),
            status_replication_factor=_replication_factor(props, STATUS_REPLICATION),
            offset_partitions=_partitions(props, OFFSET_PARTITIONS, DEFAULT_OFFSET_PARTITIONS),
            status_partitions=_partitions(props, STATUS_PARTITIONS, DEFAULT_STATUS_PARTITIONS),
            session_timeout_ms=session_ms,
            heartbeat_interval_ms=_heartbeat(props, session_ms),
            rebalance_timeout_ms=int_property(
                props, REBALANCE_TIMEOUT, DEFAULT_REBALANCE_TIMEOUT_MS, 1
            ),
            key_ttl_ms=int_property(props, KEY_TTL, DEFAULT_KEY_TTL_MS, 1000, LONG_MAX),
            default_api_timeout_ms=int_property(
                props, DEFAULT_API_TIMEOUT, DEFAULT_API_TIMEOUT_MS, 1
            ),
        )


def _required(props: Mapping[str, str], name: str) -> str:
    """A required STRING property, trimmed as ConfigDef trims it; blank counts as missing."""
    value = java_trim(props.get(name, ""))
    if not value:
        raise InvalidArgumentError.for_field(name, "is required in distributed mode")
    return value


def _topics(props: Mapping[str, str]) -> dict[str, str]:
    """The four internal topic names by property, each legal and all of them distinct.

    Distinct because two stores sharing a topic would read each other's records as their
    own (and the config topic's one partition would not hold for the others).
    """
    topics = {name: _topic(props, name) for name in (CONFIG_TOPIC, OFFSET_TOPIC, STATUS_TOPIC)}
    topics[LEADER_TOPIC] = _leader_topic(props, topics[CONFIG_TOPIC])
    seen: dict[str, str] = {}
    for name, topic in topics.items():
        if topic in seen:
            raise InvalidArgumentError.for_field(
                name, f"must name another topic than {seen[topic]} (both are {topic!r})"
            )
        seen[topic] = name
    return topics


def _topic(props: Mapping[str, str], name: str) -> str:
    topic = _required(props, name)
    error = topic_name_error(topic)
    if error is not None:
        raise InvalidArgumentError.for_field(name, error)
    return topic


def _leader_topic(props: Mapping[str, str], config_topic: str) -> str:
    """``leader.election.topic``, by default derived from the config topic so that two
    clusters sharing a Kafka cluster (distinct config topics) never share it either."""
    if java_trim(props.get(LEADER_TOPIC, "")):
        return _topic(props, LEADER_TOPIC)
    topic = config_topic + LEADER_TOPIC_SUFFIX
    error = topic_name_error(topic)
    if error is not None:
        raise InvalidArgumentError.for_field(
            LEADER_TOPIC, f"the default {topic!r} (from {CONFIG_TOPIC}) is illegal: {error}; "
            "set leader.election.topic"
        )
    return topic


def _replication_factor(props: Mapping[str, str], name: str) -> int:
    """A SHORT that is -1 (the broker's default) or at least 1, as Kafka Connect validates it."""
    value = int_property(props, name, DEFAULT_REPLICATION_FACTOR, BROKER_DEFAULT, SHORT_MAX)
    if value == 0:
        raise InvalidArgumentError.for_field(
            name, "must be -1 (the broker's default.replication.factor) or at least 1, got 0"
        )
    return value


def _partitions(props: Mapping[str, str], name: str, default: int) -> int:
    """An INT that is -1 (the broker's num.partitions) or at least 1."""
    value = int_property(props, name, default, BROKER_DEFAULT, INT_MAX)
    if value == 0:
        raise InvalidArgumentError.for_field(
            name, "must be -1 (the broker's num.partitions) or at least 1, got 0"
        )
    return value


def _heartbeat(props: Mapping[str, str], session_timeout_ms: int) -> int:
    """``heartbeat.interval.ms``, which must be below the session timeout or every member
    would be expired between two heartbeats (the group coordinator refuses it too)."""
    value = int_property(props, HEARTBEAT_INTERVAL, DEFAULT_HEARTBEAT_INTERVAL_MS, 1)
    if value >= session_timeout_ms:
        raise InvalidArgumentError.for_field(
            HEARTBEAT_INTERVAL,
            f"must be lower than {SESSION_TIMEOUT} ({session_timeout_ms}), got {value} "
            "(typically at most a third of it)",
        )
    return value


def _advertised(props: Mapping[str, str]) -> tuple[str, int]:
    """The (host, port) other workers reach this one at: ``advertised.listener``, else the
    first of ``listeners``. A wildcard host or port 0 is refused: others cannot dial them."""
    raw = java_trim(props.get(ADVERTISED_LISTENER, ""))
    if raw:
        return _explicit_advertised(raw)
    listener = props.get(LISTENERS, DEFAULT_LISTENER).split(",")[0].strip()
    host, port, _ = parse_grpc_listener(listener)
    if _is_wildcard(host):
        raise InvalidArgumentError.for_field(
            ADVERTISED_LISTENER,
            f"{LISTENERS} binds the wildcard address {host}, which other workers cannot "
            f"connect to: set {ADVERTISED_LISTENER} to a host:port they can reach",
        )
    if port == 0:
        raise InvalidArgumentError.for_field(
            ADVERTISED_LISTENER,
            f"{LISTENERS} uses port 0 (any free port), which other workers cannot know: "
            f"set a fixed port in {LISTENERS} or set {ADVERTISED_LISTENER}",
        )
    return host, port


def _explicit_advertised(raw: str) -> tuple[str, int]:
    expected = (
        f"expected host:port, grpc://host:port or grpcs://host:port with a port in "
        f"[1, 65535], got {raw!r}"
    )
    listener = raw if "://" in raw else f"grpc://{raw}"
    try:
        host, port, _ = parse_grpc_listener(listener)
    except InvalidArgumentError:
        raise InvalidArgumentError.for_field(ADVERTISED_LISTENER, expected) from None
    if port == 0:
        raise InvalidArgumentError.for_field(ADVERTISED_LISTENER, expected)
    if _is_wildcard(host):
        raise InvalidArgumentError.for_field(
            ADVERTISED_LISTENER,
            f"{host} is a wildcard address, which other workers cannot connect to: set "
            f"{ADVERTISED_LISTENER} to a host name or address they can reach",
        )
    return host, port


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False
