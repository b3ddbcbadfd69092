"""Retries carrying a request_id get the first answer back and cause no second effect."""

from __future__ import annotations

import threading

import pytest

from connect_grpc.api.idempotency import RequestLog
from connect_grpc.v1 import connect_pb2 as pb


def test_same_request_id_runs_once_and_replays_the_answer() -> None:
    log = RequestLog()
    calls = []

    def call() -> pb.PutConnectorConfigResponse:
        calls.append(1)
        return pb.PutConnectorConfigResponse(created=len(calls) == 1)

    first = log.run("Put", "r1", pb.PutConnectorConfigResponse, call)
    again = log.run("Put", "r1", pb.PutConnectorConfigResponse, call)
    assert first == again and again.created
    assert len(calls) == 1


def test_no_request_id_or_another_method_runs_again() -> None:
    log = RequestLog()
    calls = []

    def call() -> pb.DeleteConnectorResponse:
        calls.append(1)
        return pb.DeleteConnectorResponse()

    log.run("Delete", "", pb.DeleteConnectorResponse, call)
    log.run("Delete", "", pb.DeleteConnectorResponse, call)
    log.run("Delete", "x", pb.DeleteConnectorResponse, call)
    log.run("Pause", "x", pb.DeleteConnectorResponse, call)
    assert len(calls) == 4


def test_failures_are_not_remembered() -> None:
    log = RequestLog()
    attempts = []

    def call() -> pb.DeleteConnectorResponse:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")
        return pb.DeleteConnectorResponse()

    with pytest.raises(RuntimeError):
        log.run("Delete", "r", pb.DeleteConnectorResponse, call)
    log.run("Delete", "r", pb.DeleteConnectorResponse, call)
    assert len(attempts) == 2


def test_expired_and_evicted_answers_run_again() -> None:
    log = RequestLog(capacity=1, ttl_seconds=0.0)
    calls = []

    def call() -> pb.DeleteConnectorResponse:
        calls.append(1)
        return pb.DeleteConnectorResponse()

    log.run("Delete", "a", pb.DeleteConnectorResponse, call)
    log.run("Delete", "a", pb.DeleteConnectorResponse, call)
    assert len(calls) == 2


def test_concurrent_retries_run_once() -> None:
    log = RequestLog()
    calls = []
    gate = threading.Event()

    def call() -> pb.DeleteConnectorResponse:
        calls.append(1)
        gate.wait(1)
        return pb.DeleteConnectorResponse()

    threads = [
        threading.Thread(target=log.run, args=("D", "same", pb.DeleteConnectorResponse, call))
        for _ in range(5)
    ]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(5)
    assert len(calls) == 1
