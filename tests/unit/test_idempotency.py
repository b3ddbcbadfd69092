"""Retries carrying a request_id get the first answer back and cause no second effect; an id
reused for another request is rejected (item 6 of the hardening issue)."""

from __future__ import annotations

import threading

import pytest

from connect_grpc.api.idempotency import RequestLog
from connect_grpc.errors import InvalidArgumentError
from connect_grpc.v1 import connect_pb2 as pb


def _put(request_id: str, name: str = "c", **config: str) -> pb.PutConnectorConfigRequest:
    return pb.PutConnectorConfigRequest(name=name, config=config, request_id=request_id)


def _delete(request_id: str, name: str = "c") -> pb.DeleteConnectorRequest:
    return pb.DeleteConnectorRequest(name=name, request_id=request_id)


class Calls:
    def __init__(self) -> None:
        self.count = 0

    def put(self) -> pb.PutConnectorConfigResponse:
        self.count += 1
        return pb.PutConnectorConfigResponse(created=self.count == 1)

    def delete(self) -> pb.DeleteConnectorResponse:
        self.count += 1
        return pb.DeleteConnectorResponse()


def test_same_request_id_runs_once_and_replays_the_answer() -> None:
    log, calls = RequestLog(), Calls()
    first = log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put)
    again = log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put)
    assert first == again and again.created
    assert calls.count == 1


def test_no_request_id_runs_every_time() -> None:
    log, calls = RequestLog(), Calls()
    for _ in range(3):
        log.run("Delete", _delete(""), pb.DeleteConnectorResponse, calls.delete)
    assert calls.count == 3


@pytest.mark.parametrize(
    ("method", "request_"),
    [
        ("Put", _put("r1", name="other", a="1")),
        ("Put", _put("r1", a="2")),
        ("Put", _put("r1", a="1", b="1")),
        ("Delete", _delete("r1")),
    ],
    ids=["another-name", "another-value", "another-key", "another-rpc"],
)
def test_a_reused_id_with_another_request_is_rejected(method: str, request_: object) -> None:
    log, calls = RequestLog(), Calls()
    log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put)
    with pytest.raises(InvalidArgumentError) as caught:
        log.run(method, request_, pb.PutConnectorConfigResponse, calls.put)  # type: ignore[arg-type]
    assert [v.field for v in caught.value.violations] == ["request_id"]
    assert calls.count == 1
    # the original request still replays
    assert log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put).created


def test_map_order_does_not_change_the_request() -> None:
    log, calls = RequestLog(), Calls()
    first = pb.PutConnectorConfigRequest(name="c", request_id="r")
    first.config["a"], first.config["b"] = "1", "2"
    second = pb.PutConnectorConfigRequest(name="c", request_id="r")
    second.config["b"], second.config["a"] = "2", "1"
    log.run("Put", first, pb.PutConnectorConfigResponse, calls.put)
    log.run("Put", second, pb.PutConnectorConfigResponse, calls.put)
    assert calls.count == 1


def test_failures_are_not_remembered() -> None:
    log = RequestLog()
    attempts = []

    def call() -> pb.DeleteConnectorResponse:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")
        return pb.DeleteConnectorResponse()

    with pytest.raises(RuntimeError):
        log.run("Delete", _delete("r"), pb.DeleteConnectorResponse, call)
    log.run("Delete", _delete("r"), pb.DeleteConnectorResponse, call)
    assert len(attempts) == 2


def test_a_failed_id_may_be_used_for_another_request() -> None:
    log, calls = RequestLog(), Calls()

    def fail() -> pb.DeleteConnectorResponse:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        log.run("Delete", _delete("r", name="x"), pb.DeleteConnectorResponse, fail)
    log.run("Delete", _delete("r", name="y"), pb.DeleteConnectorResponse, calls.delete)
    assert calls.count == 1


def test_expired_and_evicted_answers_run_again() -> None:
    log, calls = RequestLog(capacity=1, ttl_seconds=0.0), Calls()
    log.run("Delete", _delete("a"), pb.DeleteConnectorResponse, calls.delete)
    log.run("Delete", _delete("a"), pb.DeleteConnectorResponse, calls.delete)
    assert calls.count == 2


def test_concurrent_retries_run_once() -> None:
    log = RequestLog()
    calls = []
    gate = threading.Event()

    def call() -> pb.DeleteConnectorResponse:
        calls.append(1)
        gate.wait(1)
        return pb.DeleteConnectorResponse()

    threads = [
        threading.Thread(
            target=log.run, args=("D", _delete("same"), pb.DeleteConnectorResponse, call)
        )
        for _ in range(5)
    ]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(5)
    assert len(calls) == 1
