"""librdkafka's "Failed to acquire idempotence PID … retrying": a fresh broker answers the
first InitProducerId with COORDINATOR_LOAD_IN_PROGRESS, which every worker start hit. The
relayed line is DEBUG while such retries have lasted less than PID_RETRY_GRACE_S; a run of
retries that lasts longer, and any other cause, is logged as librdkafka says."""

from __future__ import annotations

import logging

from connect_grpc.kernel.kafka_clients import PID_RETRY_GRACE_S, ClientLog

#: As confluent-kafka hands librdkafka's line to the logger (format, facility, name, text).
FORMAT = "%s [%s] %s"
LOADING = (
    "[thrd:main]: Failed to acquire idempotence PID from broker 127.0.0.1:26013/1: "
    "Broker: Coordinator load in progress: retrying"
)
DENIED = (
    "[thrd:main]: Failed to acquire idempotence PID from broker 127.0.0.1:26013/1: "
    "Broker: Cluster authorization failed: retrying"
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Sink:
    def __init__(self) -> None:
        self.lines: list[tuple[int, str, dict[str, object]]] = []

    def bind(self, **fields: object) -> Sink:
        return self

    def log(self, level: int, event: str, **fields: object) -> None:
        self.lines.append((level, event, fields))

    def levels(self) -> list[int]:
        return [level for level, _, _ in self.lines]


def test_a_producer_id_put_off_by_a_starting_broker_is_a_debug_line() -> None:
    clock, sink = Clock(), Sink()
    client_log = ClientLog("connect-configs", clock=clock, sink=sink)
    for _ in range(5):  # librdkafka retries every half second
        client_log.log(logging.WARNING, FORMAT, "GETPID", "connect-configs#producer-1", LOADING)
        clock.now += 0.5
    assert sink.levels() == [logging.DEBUG] * 5
    assert sink.lines[0][2]["message"] == f"GETPID [connect-configs#producer-1] {LOADING}"
    # a later real warning of the client is not swallowed by the rate limit
    client_log.log(logging.WARNING, FORMAT, "FAIL", "connect-configs#producer-1", "refused")
    assert sink.levels()[-1] == logging.WARNING


def test_retries_that_go_on_past_the_grace_are_warnings_again() -> None:
    clock, sink = Clock(), Sink()
    client_log = ClientLog("p", window_s=0, clock=clock, sink=sink)
    elapsed = 0.0
    while elapsed <= PID_RETRY_GRACE_S:
        client_log.log(logging.WARNING, FORMAT, "GETPID", "p#producer-1", LOADING)
        clock.now += 0.5
        elapsed += 0.5
    assert sink.levels()[0] == logging.DEBUG
    assert sink.levels()[-1] == logging.WARNING
    # a new run, long after: a broker restarting again, DEBUG again
    clock.now += 10 * PID_RETRY_GRACE_S
    client_log.log(logging.WARNING, FORMAT, "GETPID", "p#producer-1", LOADING)
    assert sink.levels()[-1] == logging.DEBUG


def test_a_real_failure_to_get_a_producer_id_is_still_a_warning() -> None:
    sink = Sink()
    ClientLog("p", clock=Clock(), sink=sink).log(
        logging.WARNING, FORMAT, "GETPID", "p#producer-1", DENIED
    )
    assert sink.levels() == [logging.WARNING]
