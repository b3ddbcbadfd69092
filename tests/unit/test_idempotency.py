"""Retries carrying a request_id get the first answer back and cause no second effect; an id
reused for another request is rejected (item 6 of the hardening issue)."""

from __future__ import annotations

import threading
from typing import TypeVar

import pytest
from google.protobuf.message import Message

from connect_grpc.api.idempotency import RequestLog
from connect_grpc.kernel import request_answer
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.v1 import connect_pb2 as pb

M = TypeVar("M", bound=Message)


def _as_is(response: M) -> M:
    return response


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
    first = log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put, _as_is)
    again = log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put, _as_is)
    assert first == again and again.created
    assert calls.count == 1


def test_no_request_id_runs_every_time() -> None:
    log, calls = RequestLog(), Calls()
    for _ in range(3):
        log.run("Delete", _delete(""), pb.DeleteConnectorResponse, calls.delete, _as_is)
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
    log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put, _as_is)
    with pytest.raises(InvalidArgumentError) as caught:
        log.run(method, request_, pb.PutConnectorConfigResponse, calls.put, _as_is)  # type: ignore[arg-type]
    assert [v.field for v in caught.value.violations] == ["request_id"]
    assert calls.count == 1
    # the original request still replays
    replayed = log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put, _as_is)
    assert replayed.created


def test_map_order_does_not_change_the_request() -> None:
    log, calls = RequestLog(), Calls()
    first = pb.PutConnectorConfigRequest(name="c", request_id="r")
    first.config["a"], first.config["b"] = "1", "2"
    second = pb.PutConnectorConfigRequest(name="c", request_id="r")
    second.config["b"], second.config["a"] = "2", "1"
    log.run("Put", first, pb.PutConnectorConfigResponse, calls.put, _as_is)
    log.run("Put", second, pb.PutConnectorConfigResponse, calls.put, _as_is)
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
        log.run("Delete", _delete("r"), pb.DeleteConnectorResponse, call, _as_is)
    log.run("Delete", _delete("r"), pb.DeleteConnectorResponse, call, _as_is)
    assert len(attempts) == 2


def test_a_failed_id_may_be_used_for_another_request() -> None:
    log, calls = RequestLog(), Calls()

    def fail() -> pb.DeleteConnectorResponse:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        log.run("Delete", _delete("r", name="x"), pb.DeleteConnectorResponse, fail, _as_is)
    log.run("Delete", _delete("r", name="y"), pb.DeleteConnectorResponse, calls.delete, _as_is)
    assert calls.count == 1


def test_expired_and_evicted_answers_run_again() -> None:
    log, calls = RequestLog(capacity=1, ttl_seconds=0.0), Calls()
    log.run("Delete", _delete("a"), pb.DeleteConnectorResponse, calls.delete, _as_is)
    log.run("Delete", _delete("a"), pb.DeleteConnectorResponse, calls.delete, _as_is)
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
            target=log.run, args=("D", _delete("same"), pb.DeleteConnectorResponse, call, _as_is)
        )
        for _ in range(5)
    ]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(5)
    assert len(calls) == 1


class SharedStore:
    """The herder's answer store (distributed mode), recording what it was asked to keep."""

    def __init__(self) -> None:
        self.remembered: list[tuple[str, bytes]] = []
        self.answers: dict[str, tuple[float, bytes, bytes]] = {}

    def answer_for(self, request_id: str) -> tuple[float, bytes, bytes] | None:
        return self.answers.get(request_id)

    def remember_answer(
        self, request_id: str, stored_at: float, fingerprint: bytes, payload: bytes
    ) -> None:
        self.remembered.append((request_id, payload))
        self.answers[request_id] = (stored_at, fingerprint, payload)


def test_an_answer_taken_into_the_change_is_not_stored_again() -> None:
    shared = SharedStore()
    log = RequestLog(shared=shared)
    written: list[request_answer.Answer] = []

    def act() -> bool:  # the herder: writes its change with the answer, in one go
        answer = request_answer.take(True)
        assert answer is not None
        written.append(answer)
        return True

    response = log.run(
        "Put",
        _put("r1", a="1"),
        pb.PutConnectorConfigResponse,
        act,
        lambda created: pb.PutConnectorConfigResponse(created=created),
    )
    assert shared.remembered == []
    assert [(a.request_id, a.payload) for a in written] == [("r1", response.SerializeToString())]


def test_an_answer_not_taken_is_stored_after_the_change() -> None:
    shared = SharedStore()
    log, calls = RequestLog(shared=shared), Calls()
    response = log.run("Put", _put("r1", a="1"), pb.PutConnectorConfigResponse, calls.put, _as_is)
    assert shared.remembered == [("r1", response.SerializeToString())]


def test_nothing_is_taken_outside_a_request_with_an_id() -> None:
    assert request_answer.take("result") is None
    log = RequestLog(shared=SharedStore())
    seen: list[request_answer.Answer | None] = []
    log.run(
        "Delete",
        _delete(""),
        pb.DeleteConnectorResponse,
        lambda: seen.append(request_answer.take(None)),
        lambda _: pb.DeleteConnectorResponse(),
    )
    assert seen == [None]
