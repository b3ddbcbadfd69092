"""The admin client's child process (storage.kafka_admin.IsolatedAdmin) while it starts: a
call that finds it starting is UNAVAILABLE and leaves it to start (replaced on every such
call, it would never start on a busy machine), unless it has taken CHILD_START_TIMEOUT_S;
``start`` begins it ahead of the first call. No broker: a pipe plays the starting child's
part, and the real child started by ``start`` sends no request to Kafka."""

from __future__ import annotations

import multiprocessing
import threading
import time
from multiprocessing.connection import Connection

import pytest

from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.storage.kafka_admin import CHILD_START_TIMEOUT_S, IsolatedAdmin


@pytest.fixture
def admin() -> IsolatedAdmin:
    return IsolatedAdmin({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, "console")


class _Child:
    """A child process that is alive until killed (the pipe's other end plays its part)."""

    def __init__(self) -> None:
        self.killed = False
        self.exitcode: int | None = None

    def is_alive(self) -> bool:
        return not self.killed

    def kill(self) -> None:
        self.killed, self.exitcode = True, -9

    def join(self, timeout: float | None = None) -> None:
        pass


def _starting(admin: IsolatedAdmin, started_ago: float = 0.0) -> tuple[_Child, Connection]:
    """Puts a child in ``admin`` that has not yet said it is ready; returns it and its end."""
    parent, theirs = multiprocessing.Pipe()
    child = _Child()
    admin._process, admin._conn = child, parent
    admin._ready, admin._started_at = False, time.monotonic() - started_ago
    return child, theirs


def test_a_call_that_finds_the_child_starting_leaves_it_to_start(admin: IsolatedAdmin) -> None:
    child, theirs = _starting(admin)
    conn = admin._conn
    with deadline.scope(1.0), pytest.raises(UnavailableError, match="still starting"):
        admin.call("group_members", "g")
    assert admin._conn is conn and not child.killed  # neither killed nor replaced
    theirs.send(("ready", None))

    def answer() -> None:
        op, args, _ = theirs.recv()
        theirs.send(("ok", [f"{op}:{args[0]}"]))

    answering = threading.Thread(target=answer)
    answering.start()
    with deadline.scope(5.0):
        assert admin.call("group_members", "g") == ["group_members:g"]
    answering.join()
    assert admin._ready and admin._conn is conn


def test_a_child_starting_for_too_long_is_replaced(admin: IsolatedAdmin) -> None:
    child, _ = _starting(admin, started_ago=CHILD_START_TIMEOUT_S + 1)
    with deadline.scope(1.0), pytest.raises(UnavailableError, match="did not start within"):
        admin.call("group_members", "g")
    assert child.killed and admin._process is None


def test_start_is_idempotent_and_close_ends_the_child(admin: IsolatedAdmin) -> None:
    admin.start()
    first = admin._process
    admin.start()
    assert admin._process is first
    admin.close()
    assert admin._process is None and not first.is_alive()
