"""Which Kafka client settings a connector may set for its own clients
(``producer.override.*``, ``consumer.override.*``, ``admin.override.*``): Kafka Connect's
worker property ``connector.client.config.override.policy`` with its four policies, ``All``
(the default), ``None``, ``Principal`` and ``Allowlist`` (KIP-1188, with
``connector.client.config.override.allowlist``), their names, defaults and messages.

A worker reads the policy once, at start (a value it cannot honour stops it there); connector
validation refuses an override the policy does not allow, on the override's own key. Kafka
Connect takes the class name of any policy plugin; here the policies are these four, named
by their alias or by Kafka's class name, since a policy of one's own would have to be a
Python plugin API of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import structlog

from connect_grpc.config_providers.transformer import has_references
from connect_grpc.kernel.configdef import java_trim
from connect_grpc.kernel.errors import InvalidArgumentError

POLICY_PROPERTY: Final = "connector.client.config.override.policy"
ALLOWLIST_PROPERTY: Final = "connector.client.config.override.allowlist"

ALL: Final = "All"
NONE: Final = "None"
PRINCIPAL: Final = "Principal"
ALLOWLIST: Final = "Allowlist"
POLICIES: Final = (ALL, NONE, PRINCIPAL, ALLOWLIST)
DEFAULT_POLICY: Final = ALL

#: What the ``Principal`` policy lets a connector set: its clients' identity.
PRINCIPAL_SETTINGS: Final = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})

PRODUCER_OVERRIDE_PREFIX: Final = "producer.override."
CONSUMER_OVERRIDE_PREFIX: Final = "consumer.override."
ADMIN_OVERRIDE_PREFIX: Final = "admin.override."

#: Kafka's policy classes live here, named ``<alias>ConnectorClientConfigOverridePolicy``.
_KAFKA_PACKAGE: Final = "org.apache.kafka.connect.connector.policy."
_CLASS_SUFFIX: Final = "ConnectorClientConfigOverridePolicy"

_DLQ_TOPIC: Final = "errors.deadletterqueue.topic.name"
_TOPIC_CREATION_PREFIX: Final = "topic.creation."

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ClientOverridePolicy:
    """A worker's policy: ``name`` is one of :data:`POLICIES`; ``allowlist`` the settings
    the ``Allowlist`` policy allows (empty for the others, which ignore the key)."""

    name: str = DEFAULT_POLICY
    allowlist: frozenset[str] = frozenset()
    #: Whether the worker set the allowlist key for a policy other than ``Allowlist``
    #: (Kafka Connect ignores it then; the worker says so in its log).
    allowlist_ignored: bool = False

    def allows(self, setting: str) -> bool:
        """Whether a connector may set the client setting ``setting`` (prefix removed)."""
        if self.name == ALL:
            return True
        if self.name == PRINCIPAL:
            return setting in PRINCIPAL_SETTINGS
        if self.name == ALLOWLIST:
            return setting in self.allowlist
        return False

    def refusal(self, setting: str) -> str:
        """Kafka Connect's message for an override this policy does not allow."""
        return (
            f"The '{self.name}' policy does not allow '{setting}' to be overridden in the "
            "connector configuration."
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ClientOverridePolicy:
        """The worker's policy; InvalidArgumentError naming the key for a policy that is not
        one of the four, or an allowlist Kafka Connect would refuse."""
        name = _policy_name(props.get(POLICY_PROPERTY))
        if name != ALLOWLIST:
            return cls(name, allowlist_ignored=ALLOWLIST_PROPERTY in props)
        return cls(name, _allowlist(props.get(ALLOWLIST_PROPERTY)))

    def log_setup(self) -> None:
        """What Kafka Connect logs when it sets the policy up, and the allowlist it ignores."""
        if self.name == PRINCIPAL:
            _log.warning(
                "client_override_policy_deprecated", policy=PRINCIPAL,
                instead=f"{POLICY_PROPERTY}={ALLOWLIST} with {ALLOWLIST_PROPERTY}="
                + ",".join(sorted(PRINCIPAL_SETTINGS)),
            )
        _log.info("client_override_policy", policy=self.name,
                  allowlist=sorted(self.allowlist) if self.name == ALLOWLIST else None)
        if self.allowlist_ignored:
            _log.warning("client_override_allowlist_ignored", policy=self.name,
                         reason=f"{ALLOWLIST_PROPERTY} applies to {POLICY_PROPERTY}={ALLOWLIST} "
                         "only")

    def errors(self, config: Mapping[str, str], *, sink: bool) -> dict[str, list[str]]:
        """The connector config's overrides this policy refuses, each on its own key, for
        the clients the connector uses, as Kafka Connect checks them: the producer's for a
        source, or a sink with a dead-letter queue; the consumer's for a sink; the admin
        client's for a source with ``topic.creation.*`` keys, or any connector with a
        dead-letter queue (Kafka Connect's sinks; here sources have one too)."""
        if self.name == ALL:
            return {}
        has_dlq = bool(java_trim(config.get(_DLQ_TOPIC, "")))
        prefixes = []
        if not sink or has_dlq:
            prefixes.append(PRODUCER_OVERRIDE_PREFIX)
        if has_dlq or (not sink and any(k.startswith(_TOPIC_CREATION_PREFIX) for k in config)):
            prefixes.append(ADMIN_OVERRIDE_PREFIX)
        if sink:
            prefixes.append(CONSUMER_OVERRIDE_PREFIX)
        return {
            key: [self.refusal(key[len(prefix):])]
            for prefix in prefixes
            for key in config
            if key.startswith(prefix) and not self.allows(key[len(prefix):])
        }


def _policy_name(raw: str | None) -> str:
    """The policy a worker names: an alias, or Kafka's simple or full class name for it."""
    if raw is None:
        return DEFAULT_POLICY
    text = java_trim(raw)
    for name in POLICIES:
        if text in (name, f"{name}{_CLASS_SUFFIX}", f"{_KAFKA_PACKAGE}{name}{_CLASS_SUFFIX}"):
            return name
    if has_references(text):
        # Kafka Connect resolves references in its worker's properties; a worker here
        # resolves them in connector configs only, so the reference itself would be the name
        raise InvalidArgumentError.for_field(
            POLICY_PROPERTY,
            f"must name the policy itself, got {raw!r}: config provider references are "
            "resolved in connector configs, not in the worker's properties",
        )
    raise InvalidArgumentError.for_field(
        POLICY_PROPERTY,
        f"expected one of {', '.join(POLICIES)} (or Kafka Connect's class name for one, "
        f"{_KAFKA_PACKAGE}<policy>{_CLASS_SUFFIX}), got {raw!r}: connect-grpc has these "
        "four policies and loads no policy class of its own",
    )


def _allowlist(raw: str | None) -> frozenset[str]:
    """The ``Allowlist`` policy's settings: a list, as Kafka Connect parses and checks it (a
    blank value is an empty list, which allows nothing; a repeated or an empty item is
    refused, the repeat looked for first)."""
    text = java_trim(raw or "")
    if not text:
        return frozenset()
    items = [java_trim(item) for item in text.split(",")]
    if len(set(items)) != len(items):
        raise InvalidArgumentError.for_field(
            ALLOWLIST_PROPERTY, f"Configuration '{ALLOWLIST_PROPERTY}' values must not be "
            "duplicated."
        )
    if "" in items:
        raise InvalidArgumentError.for_field(
            ALLOWLIST_PROPERTY, f"Configuration '{ALLOWLIST_PROPERTY}' values must not be empty."
        )
    return frozenset(items)
