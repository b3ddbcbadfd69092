"""Where an exactly-once source task's transactions end: the three boundaries and the
transaction context a task uses with ``transaction.boundary=connector`` (the producer that
applies them is tested against a broker in tests/integration/test_transactions.py)."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.api import SourceRecord, TransactionBoundary
from connect_grpc.runtime.transaction_boundaries import (
    DEFAULT_INTERVAL_MS,
    Boundary,
    Decision,
    TaskTransactionContext,
    boundary_settings,
    new_boundary,
)
from connect_grpc.runtime.transactions import Transactions, transactional_conf


def _records(count: int) -> list[SourceRecord]:
    return [SourceRecord({"p": 0}, {"o": i}, "t", str(i)) for i in range(count)]


def _connector_boundary() -> tuple[Boundary, TaskTransactionContext]:
    boundary = new_boundary(TransactionBoundary.CONNECTOR, 60.0)
    assert boundary.context is not None
    return boundary, boundary.context


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_poll_boundaries_commit_after_every_batch_and_at_the_end() -> None:
    boundary = new_boundary(TransactionBoundary.POLL, 60.0)
    assert boundary.context is None
    assert boundary.splits(_records(3)) == []
    assert boundary.after_batch() is Decision.COMMIT
    assert boundary.at_end() is Decision.COMMIT


def test_interval_boundaries_commit_once_the_interval_passed_since_the_last_commit() -> None:
    clock = FakeClock()
    boundary = new_boundary(TransactionBoundary.INTERVAL, 10.0, clock)
    assert boundary.context is None
    clock.now += 9.9
    assert boundary.after_batch() is None
    clock.now += 0.1
    assert boundary.after_batch() is Decision.COMMIT
    clock.now += 5
    assert boundary.after_batch() is None  # counted from that commit
    assert boundary.at_end() is Decision.COMMIT


def test_connector_boundaries_follow_what_the_task_asked_and_forget_it() -> None:
    boundary, context = _connector_boundary()
    records = _records(6)
    context.commit_transaction(records[1])
    context.abort_transaction(records[4])
    assert boundary.splits(records) == [(2, Decision.COMMIT), (5, Decision.ABORT)]
    assert boundary.splits(records) == []  # forgotten once applied
    assert boundary.after_batch() is None and boundary.at_end() is None
    context.commit_transaction()
    assert boundary.after_batch() is Decision.COMMIT
    assert boundary.after_batch() is None
    context.commit_transaction()
    assert boundary.at_end() is Decision.COMMIT


def test_abort_wins_when_a_task_asks_both_for_one_point() -> None:
    boundary, context = _connector_boundary()
    records = _records(2)
    context.abort_transaction(records[0])
    context.commit_transaction(records[0])
    context.commit_transaction()
    context.abort_transaction()
    assert boundary.splits(records) == [(1, Decision.ABORT)]
    assert boundary.after_batch() is Decision.ABORT


def test_a_request_naming_a_record_of_a_later_batch_waits_for_it() -> None:
    boundary, context = _connector_boundary()
    first, later = _records(2), _records(3)
    context.commit_transaction(later[2])
    assert boundary.splits(first) == []
    assert boundary.splits(later) == [(3, Decision.COMMIT)]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, (TransactionBoundary.POLL, DEFAULT_INTERVAL_MS / 1000)),
        ({"transaction.boundary": " Interval "}, (TransactionBoundary.INTERVAL, 60.0)),
        (
            {"transaction.boundary": "interval", "transaction.boundary.interval.ms": " 2500"},
            (TransactionBoundary.INTERVAL, 2.5),
        ),
        ({"transaction.boundary": "CONNECTOR"}, (TransactionBoundary.CONNECTOR, 60.0)),
    ],
)
def test_boundary_settings_parse_like_the_config_def(
    config: dict[str, str], expected: tuple[TransactionBoundary, float]
) -> None:
    assert boundary_settings(config) == expected


def test_interval_transactions_outlast_their_interval_unless_the_user_set_a_timeout() -> None:
    interval = Transactions("g-c-0", "o", "c", TransactionBoundary.INTERVAL, 90.0)
    assert transactional_conf({}, interval)["transaction.timeout.ms"] == "150000"
    chosen = transactional_conf({"transaction.timeout.ms": "100000"}, interval)
    assert chosen["transaction.timeout.ms"] == "100000"
    poll = Transactions("g-c-0", "o", "c")
    assert "transaction.timeout.ms" not in transactional_conf({}, poll)
