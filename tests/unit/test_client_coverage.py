"""The Python client wraps every RPC of ConnectService: none missing, none extra, and each
method calls its own RPC (checked against a tiny in-process gRPC server that records the
method path of every call and answers UNIMPLEMENTED)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.errors import UnimplementedError
from connect_grpc.v1 import connect_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["ConnectService"]
RPCS = sorted(method.name for method in SERVICE.methods)
#: Public methods of the client that are not RPCs.
LIFECYCLE = {"close"}
#: A value for each required parameter a client method may have.
SAMPLE_ARGUMENTS: dict[str, Any] = {
    "name": "c",
    "task_id": 0,
    "config": {"connector.class": "X"},
    "offsets": [],
    "level": "INFO",
}


def snake_case(rpc: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()


def client_methods() -> dict[str, Callable[..., Any]]:
    return {
        name: member
        for name, member in inspect.getmembers(ConnectClient, inspect.isfunction)
        if not name.startswith("_") and name not in LIFECYCLE
    }


def test_the_service_has_rpcs() -> None:
    assert len(RPCS) >= 21
    assert snake_case("WatchConnectorStatus") == "watch_connector_status"


def test_every_rpc_has_a_client_method() -> None:
    missing = {snake_case(rpc) for rpc in RPCS} - set(client_methods())
    assert not missing, f"RPCs without a ConnectClient method: {sorted(missing)}"


def test_every_client_method_is_an_rpc() -> None:
    extra = set(client_methods()) - {snake_case(rpc) for rpc in RPCS}
    assert not extra, f"ConnectClient methods with no RPC: {sorted(extra)}"


def test_every_client_method_is_documented() -> None:
    undocumented = [name for name, method in client_methods().items() if not method.__doc__]
    assert not undocumented


class _Recorder(grpc.GenericRpcHandler):  # type: ignore[type-arg]  # generic in stubs only
    """Answers every method of every service UNIMPLEMENTED and records its path."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[bytes, Any] | None:
        self.paths.append(handler_call_details.method)
        method = SERVICE.methods_by_name.get(handler_call_details.method.rsplit("/", 1)[-1])

        def refuse(request: bytes, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "recorded")

        if method is not None and method.server_streaming:
            return grpc.unary_stream_rpc_method_handler(refuse)
        return grpc.unary_unary_rpc_method_handler(refuse)


@pytest.fixture(scope="module")
def recorder() -> Iterator[tuple[_Recorder, str]]:
    handler = _Recorder()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield handler, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("rpc", RPCS)
def test_each_client_method_calls_its_own_rpc(
    recorder: tuple[_Recorder, str], rpc: str
) -> None:
    handler, address = recorder
    handler.paths.clear()
    method = client_methods()[snake_case(rpc)]
    required = [
        parameter.name
        for parameter in list(inspect.signature(method).parameters.values())[1:]
        if parameter.default is inspect.Parameter.empty
    ]
    unknown = set(required) - set(SAMPLE_ARGUMENTS)
    assert not unknown, f"add sample values for {sorted(unknown)} to SAMPLE_ARGUMENTS"
    with ConnectClient(address, timeout=10) as client, pytest.raises(UnimplementedError):
        result = getattr(client, snake_case(rpc))(**{p: SAMPLE_ARGUMENTS[p] for p in required})
        if isinstance(result, Iterator):
            next(result)
    assert handler.paths == [f"/{SERVICE.full_name}/{rpc}"]
