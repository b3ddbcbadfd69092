"""The gRPC server's pool: bounded, the last idle thread first, and a stop that lets the
backlog finish."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from connect_grpc.api.thread_pool import LastIdleFirstPool


def _thread_name() -> str:
    return threading.current_thread().name


def _grow(pool: futures.Executor, threads: int) -> None:
    """Grows the pool to ``threads`` threads: as many calls held at once, then released."""
    arrived = threading.Barrier(threads + 1)
    release = threading.Event()

    def held() -> None:
        arrived.wait(timeout=10)
        release.wait(timeout=10)

    calls = [pool.submit(held) for _ in range(threads)]
    arrived.wait(timeout=10)
    release.set()
    futures.wait(calls, timeout=10)


def test_results_and_errors_come_back_through_the_futures() -> None:
    pool = LastIdleFirstPool(2)
    assert pool.submit(lambda a, b=0: a + b, 40, b=2).result(timeout=5) == 42
    with pytest.raises(KeyError, match="missing"):
        pool.submit({}.__getitem__, "missing").result(timeout=5)
    pool.shutdown()


def test_a_trickle_after_a_burst_runs_on_the_thread_that_went_idle_last() -> None:
    pool = LastIdleFirstPool(8, thread_name_prefix="t")
    _grow(pool, 8)
    assert pool.threads == 8
    names = [pool.submit(_thread_name).result(timeout=5) for _ in range(20)]
    assert len(set(names)) == 1, f"calls rotated over threads {sorted(set(names))}"
    assert names[0].startswith("t_")
    pool.shutdown()


def test_the_stdlib_pool_rotates_where_this_one_does_not() -> None:
    """The reason for the pool: ThreadPoolExecutor wakes its longest-idle thread, so a
    trickle of calls after a burst visits every thread (should this change in a future
    Python, the pool could go)."""
    stdlib = futures.ThreadPoolExecutor(8)
    _grow(stdlib, 8)
    names = [stdlib.submit(_thread_name).result(timeout=5) for _ in range(20)]
    stdlib.shutdown()
    assert len(set(names)) > 1


def test_at_most_max_workers_run_and_the_rest_wait_in_order() -> None:
    pool = LastIdleFirstPool(2)
    release = threading.Event()
    running = [pool.submit(release.wait, 10) for _ in range(2)]
    order: list[int] = []
    waiting = [pool.submit(order.append, n) for n in range(5)]
    time.sleep(0.2)
    assert pool.threads == 2
    assert order == [] and not any(f.done() for f in waiting)
    release.set()
    futures.wait([*running, *waiting], timeout=10)
    assert order == [0, 1, 2, 3, 4]
    assert pool.threads == 2
    pool.shutdown()


def test_shutdown_finishes_the_backlog_refuses_new_work_and_ends_the_threads() -> None:
    pool = LastIdleFirstPool(1)
    release = threading.Event()
    first = pool.submit(release.wait, 10)
    queued = pool.submit(lambda: "queued")
    threading.Timer(0.2, release.set).start()
    pool.shutdown(wait=True)
    assert first.result(timeout=0) is True and queued.result(timeout=0) == "queued"
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)
    assert not any(t.name.startswith("pool_") and t.is_alive() for t in threading.enumerate())


def test_shutdown_with_cancel_futures_drops_the_backlog() -> None:
    pool = LastIdleFirstPool(1)
    release = threading.Event()
    first = pool.submit(release.wait, 10)
    ran: list[str] = []
    queued = pool.submit(ran.append, "queued")
    threading.Timer(0.2, release.set).start()
    pool.shutdown(wait=True, cancel_futures=True)
    assert first.result(timeout=0) is True
    assert queued.cancelled() and ran == []


def test_a_future_cancelled_while_waiting_is_not_run() -> None:
    pool = LastIdleFirstPool(1)
    release = threading.Event()
    pool.submit(release.wait, 10)
    ran: list[str] = []
    queued = pool.submit(ran.append, "queued")
    assert queued.cancel()
    release.set()
    pool.shutdown(wait=True)
    assert ran == []


def test_a_parked_thread_keeps_nothing_of_its_last_call_alive() -> None:
    class Request:
        pass

    request = Request()
    gone = weakref.ref(request)
    pool = LastIdleFirstPool(1)
    pool.submit(lambda _: None, request).result(timeout=5)
    del request
    deadline = time.monotonic() + 2
    while gone() is not None and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert gone() is None, "the idle thread still holds its last call's arguments"
    pool.shutdown()


def test_max_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_workers must be positive, not 0"):
        LastIdleFirstPool(0)


def test_a_grpc_server_on_the_pool_answers_a_trickle_on_one_thread_after_streams_grew_it(
) -> None:
    """Over a real channel: six watch-like streams hold six threads at once; once they end,
    unary calls all run on one of them."""
    pool = LastIdleFirstPool(8, thread_name_prefix="grpc")
    streams_open = threading.Barrier(7)

    def stream(_: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        yield b"open"
        streams_open.wait(timeout=10)
        while context.is_active():
            time.sleep(0.01)

    def unary(_: bytes, __: grpc.ServicerContext) -> bytes:
        return _thread_name().encode()

    handler = grpc.method_handlers_generic_handler(
        "test.Pool",
        {
            "Stream": grpc.unary_stream_rpc_method_handler(stream),
            "Unary": grpc.unary_unary_rpc_method_handler(unary),
        },
    )
    server = grpc.server(pool, handlers=[handler])  # type: ignore[arg-type]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            open_stream = channel.unary_stream("/test.Pool/Stream")
            calls = [open_stream(b"", timeout=20) for _ in range(6)]
            assert [next(call) for call in calls] == [b"open"] * 6
            streams_open.wait(timeout=10)
            for call in calls:
                call.cancel()
            call_unary = channel.unary_unary("/test.Pool/Unary")
            time.sleep(0.3)  # the streams' threads see their cancellation and park
            names = {call_unary(b"", timeout=5) for _ in range(20)}
        assert pool.threads >= 6
        assert len(names) == 1, f"calls rotated over threads {sorted(names)}"
    finally:
        server.stop(0).wait()
        pool.shutdown(wait=False)
