"""Every error code confluent-kafka defines is classified on purpose as retriable or final
(a librdkafka upgrade that adds a code fails here until someone classifies it), the codes
that matter most are pinned, and a fatal error is never retriable."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.kernel.kafka_clients import FINAL_NAMES, RETRIABLE_NAMES, is_retriable
from connect_grpc.runtime.retry import is_retriable_error

pytestmark = pytest.mark.timeout(20)

DEFINED = sorted(
    name for name in dir(KafkaError) if isinstance(getattr(KafkaError, name), int)
)


def test_confluent_kafka_defines_local_and_broker_codes() -> None:
    assert "_DESTROY_BROKER" in DEFINED and "NOT_LEADER_FOR_PARTITION" in DEFINED
    assert len(DEFINED) > 150


@pytest.mark.parametrize("name", DEFINED)
def test_every_code_is_in_exactly_one_class(name: str) -> None:
    assert (name in RETRIABLE_NAMES) != (name in FINAL_NAMES), (
        f"KafkaError.{name} must be in exactly one of kafka_clients.RETRIABLE_NAMES and "
        "FINAL_NAMES"
    )


@pytest.mark.parametrize("name", DEFINED)
def test_the_class_decides_and_a_fatal_error_is_never_retriable(name: str) -> None:
    code = getattr(KafkaError, name)
    assert is_retriable(KafkaError(code)) is (name in RETRIABLE_NAMES)
    assert not is_retriable(KafkaError(code, fatal=True))
    assert not is_retriable(KafkaError(code, fatal=True, retriable=True))


@pytest.mark.parametrize(
    "name",
    ["_DESTROY_BROKER", "_TRANSPORT", "_MSG_TIMED_OUT", "NOT_LEADER_FOR_PARTITION",
     "_ALL_BROKERS_DOWN", "_FAIL", "_TIMED_OUT", "REQUEST_TIMED_OUT", "NOT_COORDINATOR",
     "REBALANCE_IN_PROGRESS", "UNKNOWN_TOPIC_OR_PART", "_QUEUE_FULL"],
)
def test_outage_codes_are_retriable(name: str) -> None:
    error = KafkaError(getattr(KafkaError, name), "Failed to get watermark offsets")
    assert is_retriable(error)
    assert is_retriable_error(KafkaException(error))


@pytest.mark.parametrize(
    "name",
    ["TOPIC_AUTHORIZATION_FAILED", "_FENCED", "PRODUCER_FENCED", "INVALID_CONFIG",
     "_INVALID_ARG", "_DESTROY", "_FATAL", "_AUTHENTICATION", "MSG_SIZE_TOO_LARGE",
     "OFFSET_OUT_OF_RANGE", "UNKNOWN"],
)
def test_configuration_authorization_fencing_and_data_codes_are_final(name: str) -> None:
    error = KafkaError(getattr(KafkaError, name))
    assert not is_retriable(error)
    assert not is_retriable_error(KafkaException(error))


def test_no_name_is_classified_twice() -> None:
    assert not RETRIABLE_NAMES & FINAL_NAMES
