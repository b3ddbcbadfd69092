"""A ConnectService servicer on an in-process gRPC server, for unit tests that call the RPCs
over a real channel: a free loopback port, no TLS. The servicer is the caller's: the API's
``ConnectServicer`` over the ``herder`` fixture or a stand-in, or a scripted one."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager

import grpc

from connect_grpc.v1 import connect_pb2_grpc as pb_grpc


def start_server(
    servicer: pb_grpc.ConnectServiceServicer,
    *,
    max_workers: int = 2,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
) -> tuple[grpc.Server, str]:
    """Starts ``servicer`` (behind ``interceptors``, in order) on a free loopback port: the
    server, which the caller stops, and its address."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers), interceptors=list(interceptors)
    )
    pb_grpc.add_ConnectServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@contextmanager
def serving(
    servicer: pb_grpc.ConnectServiceServicer,
    *,
    max_workers: int = 2,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
) -> Iterator[str]:
    """:func:`start_server`'s address; the server is stopped (calls cut short) at the end."""
    server, address = start_server(servicer, max_workers=max_workers, interceptors=interceptors)
    try:
        yield address
    finally:
        server.stop(0).wait()


@contextmanager
def connect_channel(servicer: pb_grpc.ConnectServiceServicer) -> Iterator[grpc.Channel]:
    """A plaintext channel to ``servicer`` :func:`serving`; closed before the server stops."""
    with serving(servicer) as address, grpc.insecure_channel(address) as channel:
        yield channel


@contextmanager
def connect_stub(servicer: pb_grpc.ConnectServiceServicer) -> Iterator[pb_grpc.ConnectServiceStub]:
    """A ConnectService stub over :func:`connect_channel`."""
    with connect_channel(servicer) as channel:
        yield pb_grpc.ConnectServiceStub(channel)
