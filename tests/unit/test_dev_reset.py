"""The demo's reset of its topic and group: which Kafka answers it waits out."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.dev import DemoResetError, _until_done


def _failing_then_ok(codes: list[int]) -> tuple[list[int], Callable[[], None]]:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        if codes:
            raise KafkaException(KafkaError(codes.pop(0)))

    return calls, call


def test_a_fresh_brokers_not_coordinator_answer_is_waited_out() -> None:
    calls, call = _failing_then_ok(
        [KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE]
    )
    _until_done(call, "delete the group", time.monotonic() + 10)
    assert len(calls) == 3


def test_a_final_error_is_raised_with_what_was_being_done() -> None:
    calls, call = _failing_then_ok([KafkaError.GROUP_AUTHORIZATION_FAILED])
    with pytest.raises(DemoResetError, match="cannot delete the group"):
        _until_done(call, "delete the group", time.monotonic() + 10)
    assert len(calls) == 1
