"""The auth interceptor's decisions, table-driven over every RPC of the service descriptor
(so that a new RPC cannot be missed): who is UNAUTHENTICATED, who is PERMISSION_DENIED, who
is let through, and that a refused call never reaches a servicer. Real gRPC on 127.0.0.1;
the servicers only record the calls that reach them."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.rpc import error_details_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from connect_grpc.api.auth import VIEWER_RPCS, build_interceptor
from connect_grpc.api.caller import current_caller
from connect_grpc.api.forwarding import FORWARDED_BY
from connect_grpc.security.config import (
    HEALTH_SERVICE,
    REFLECTION_SERVICE,
    AuthConfig,
    SecurityConfig,
)
from connect_grpc.security.credential_files import hash_token
from connect_grpc.security.roles import Caller, Role, token_credential, worker_credential
from connect_grpc.security.session_key import (
    CREDENTIAL_HEADER,
    SESSION_KEY_UNKNOWN,
    SIGNATURE_INVALID,
    RequestSigner,
    RequestVerifier,
    SessionKey,
    SignedCall,
)
from connect_grpc.v1 import connect_pb2 as pb
from tests.rpc_roles import MUTATIONS, READS

pytestmark = pytest.mark.timeout(60)

OK = grpc.StatusCode.OK
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED

CONNECT = pb.DESCRIPTOR.services_by_name["ConnectService"]
CLUSTER = pb.DESCRIPTOR.services_by_name["ClusterService"]
VIEWER_TOKEN = "viewer-token-0123456789abcdef"
ADMIN_TOKEN = "admin-token-0123456789abcdef"
KEY = SessionKey(b"k" * 32, created_ms=1_000)


def token_of(token: str) -> str:
    """The credential a worker vouches for when it forwards a call made with ``token``."""
    return token_credential(bytes.fromhex(hash_token(token).removeprefix("sha256:")))


ADMIN = token_of(ADMIN_TOKEN)


def test_every_rpc_is_classified() -> None:
    assert set(CONNECT.methods_by_name) == READS | MUTATIONS
    assert not READS & MUTATIONS
    assert VIEWER_RPCS == READS


def all_methods() -> list[MethodDescriptor]:
    return [*CONNECT.methods, *CLUSTER.methods]


def method_id(method: MethodDescriptor) -> str:
    return f"{method.containing_service.name}/{method.name}"


def full_name(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


def message_class(descriptor: Any) -> Any:
    return message_factory.GetMessageClass(descriptor)


@dataclass
class Recorder:
    """Every call that reached a servicer, with the caller it ran as."""

    calls: list[tuple[str, Caller | None]] = field(default_factory=list)

    def handler(self, method: MethodDescriptor) -> grpc.RpcMethodHandler[Any, Any]:
        response = message_class(method.output_type)
        request = message_class(method.input_type)
        name = full_name(method)

        def unary(_: Any, context: grpc.ServicerContext) -> Any:
            self.calls.append((name, current_caller()))
            return response()

        def stream(_: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            self.calls.append((name, current_caller()))
            yield response()

        if method.server_streaming:
            return grpc.unary_stream_rpc_method_handler(
                stream, request.FromString, response.SerializeToString
            )
        return grpc.unary_unary_rpc_method_handler(
            unary, request.FromString, response.SerializeToString
        )


@dataclass
class Served:
    address: str
    recorder: Recorder
    channel: grpc.Channel

    def call(
        self, method: MethodDescriptor, metadata: tuple[tuple[str, str | bytes], ...] = (),
        body: bytes = b"",
    ) -> grpc.StatusCode:
        """Calls ``method`` with an empty request (``body``: its exact bytes instead)."""
        response = message_class(method.output_type)
        name = full_name(method)
        try:
            if method.server_streaming:
                stream = self.channel.unary_stream(
                    name, request_serializer=None, response_deserializer=response.FromString
                )
                list(stream(body, timeout=10, metadata=metadata))
            else:
                unary = self.channel.unary_unary(
                    name, request_serializer=None, response_deserializer=response.FromString
                )
                unary(body, timeout=10, metadata=metadata)
        except grpc.RpcError as error:
            return error.code()
        return OK


def serve(
    security: SecurityConfig, keys: list[SessionKey] | None
) -> tuple[grpc.Server, Served]:
    recorder = Recorder()
    verifier = None if keys is None else RequestVerifier(lambda: keys)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        interceptors=[build_interceptor(security, verifier)],
    )
    for service in (CONNECT, CLUSTER):
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            service.full_name,
            {method.name: recorder.handler(method) for method in service.methods},
        ),))
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (CONNECT.full_name, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    address = f"127.0.0.1:{port}"
    return server, Served(address, recorder, grpc.insecure_channel(address))


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.txt"
    path.write_text(
        "# hash principal role\n"
        f"{hash_token(VIEWER_TOKEN)} dashboard viewer\n"
        f"{hash_token(ADMIN_TOKEN)}  ops-admin admin\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def tokens_worker(tokens_file: Path) -> Iterator[Served]:
    """A worker of a cluster (it knows the session key) that authenticates by token."""
    server, served = serve(SecurityConfig(auth=AuthConfig(tokens_file=tokens_file)), [KEY])
    yield served
    served.channel.close()
    server.stop(0).wait()


@pytest.fixture
def open_standalone() -> Iterator[Served]:
    """A standalone worker (no session key) that authenticates nobody."""
    server, served = serve(SecurityConfig(), None)
    yield served
    served.channel.close()
    server.stop(0).wait()


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def signed(
    method: MethodDescriptor, credential: str, key: SessionKey = KEY,
    forwarded_by: str = "w2", clock: Callable[[], int] | None = None,
) -> tuple[tuple[str, str | bytes], ...]:
    """The metadata a worker adds to a call it forwards (or makes, without forwarded_by)."""
    signer = RequestSigner(lambda: key, clock or (lambda: int(time.time() * 1000)))
    headers = signer.metadata(SignedCall(full_name(method), b"", forwarded_by, credential))
    marked: tuple[tuple[str, str | bytes], ...] = (
        ((FORWARDED_BY, forwarded_by),) if forwarded_by else ()
    )
    return marked + headers


def expected_for(role: Role | None, method: MethodDescriptor) -> grpc.StatusCode:
    """What a caller with ``role`` gets, by the rules the issue states."""
    if method.containing_service is CLUSTER:
        return OK if role is Role.WORKER else DENIED
    if role is Role.ADMIN:
        return OK
    if role is Role.VIEWER and method.name in READS:
        return OK
    return DENIED


CALLERS: dict[str, Callable[[MethodDescriptor], tuple[tuple[str, str | bytes], ...]]] = {
    "no credential": lambda m: (),
    "unknown token": lambda m: bearer("not-a-known-token-at-all"),
    "basic scheme": lambda m: (("authorization", f"Basic {ADMIN_TOKEN}"),),
    "empty bearer": lambda m: (("authorization", "Bearer "),),
    "forged forwarded mark": lambda m: (
        (FORWARDED_BY, "w2"), (CREDENTIAL_HEADER, ADMIN.encode()),
    ),
    "forged mark with a viewer token": lambda m: (
        *bearer(VIEWER_TOKEN), (FORWARDED_BY, "w2"), (CREDENTIAL_HEADER, ADMIN.encode()),
    ),
    "forged worker call": lambda m: ((CREDENTIAL_HEADER, worker_credential("w2").encode()),),
    "signed with an unknown key": lambda m: signed(
        m, ADMIN, SessionKey(b"x" * 32, created_ms=2_000)
    ),
    "signed with a wrong secret": lambda m: signed(
        m, ADMIN, SessionKey(b"x" * 32, created_ms=KEY.created_ms)
    ),
    "signature without the mark": lambda m: signed(m, ADMIN)[1:],
    "signature from an hour ago": lambda m: signed(
        m, ADMIN, clock=lambda: int(time.time() * 1000) - 3_600_000
    ),
    "signed for a token this worker does not know": lambda m: signed(
        m, token_of("a-token-no-worker-knows-0123")
    ),
    "signed for no credential": lambda m: signed(m, "none"),
    "signed for a certificate": lambda m: signed(m, "certificate:CN=alice"),
}
UNAUTHENTICATED_CALLERS = sorted(CALLERS)


@pytest.mark.parametrize("method", all_methods(), ids=method_id)
@pytest.mark.parametrize("caller", UNAUTHENTICATED_CALLERS)
def test_a_missing_or_bad_credential_is_unauthenticated_and_reaches_nothing(
    tokens_worker: Served, caller: str, method: MethodDescriptor
) -> None:
    assert tokens_worker.call(method, CALLERS[caller](method)) == UNAUTHENTICATED
    assert tokens_worker.recorder.calls == []


@pytest.mark.parametrize("method", all_methods(), ids=method_id)
@pytest.mark.parametrize(("token", "role"), [(VIEWER_TOKEN, Role.VIEWER),
                                             (ADMIN_TOKEN, Role.ADMIN)], ids=["viewer", "admin"])
def test_a_token_holder_gets_what_its_role_allows(
    tokens_worker: Served, token: str, role: Role, method: MethodDescriptor
) -> None:
    code = tokens_worker.call(method, bearer(token))
    assert code == expected_for(role, method)
    reached = [name for name, _ in tokens_worker.recorder.calls]
    assert reached == ([full_name(method)] if code == OK else [])


VOUCHED = {
    "viewer": (token_of(VIEWER_TOKEN), "dashboard", Role.VIEWER),
    "admin": (ADMIN, "ops-admin", Role.ADMIN),
    "worker": (worker_credential("w2"), "worker w2", Role.WORKER),
}


@pytest.mark.parametrize("method", all_methods(), ids=method_id)
@pytest.mark.parametrize("who", sorted(VOUCHED))
def test_a_signed_call_is_authorised_as_its_original_caller_by_this_workers_policy(
    tokens_worker: Served, who: str, method: MethodDescriptor
) -> None:
    """The receiving worker authorises the original caller, not the forwarding worker,
    and by its own tokens file: the signature names the caller's token (by its hash), and
    the role is this worker's for that token. A viewer's forwarded mutation is
    PERMISSION_DENIED. Workers forward unary calls only: a signed stream is refused."""
    credential, principal, role = VOUCHED[who]
    forwarded_by = "" if method.containing_service is CLUSTER else "w2"
    code = tokens_worker.call(method, signed(method, credential, forwarded_by=forwarded_by))
    expected = UNAUTHENTICATED if method.server_streaming else expected_for(role, method)
    assert code == expected
    if code == OK:
        [(_, caller)] = tokens_worker.recorder.calls
        assert caller is not None and (caller.principal, caller.role) == (principal, role)


def test_a_signature_covers_the_request_bytes(tokens_worker: Served) -> None:
    """A captured signature does not carry over to another request."""
    method = CONNECT.methods_by_name["DeleteConnector"]
    metadata = signed(method, ADMIN)  # signed over an empty request
    other = pb.DeleteConnectorRequest(name="victim").SerializeToString()
    assert tokens_worker.call(method, metadata, body=other) == UNAUTHENTICATED
    assert tokens_worker.call(method, metadata) == OK


def test_the_refusal_says_why(tokens_worker: Served) -> None:
    method = CONNECT.methods_by_name["CreateConnector"]
    unary = tokens_worker.channel.unary_unary(
        full_name(method), request_serializer=None, response_deserializer=None
    )
    cases = [
        ((), "UNAUTHENTICATED", "requires a bearer token"),
        (bearer(VIEWER_TOKEN), "PERMISSION_DENIED",
         "dashboard has role viewer; /connect.v1.ConnectService/CreateConnector needs role admin"),
        (signed(method, ADMIN, SessionKey(b"y" * 32, 7)), SESSION_KEY_UNKNOWN,
         "session key 7"),
        (signed(method, ADMIN, SessionKey(b"y" * 32, KEY.created_ms)),
         SIGNATURE_INVALID, "does not match"),
        (signed(method, "certificate:CN=x"), "UNAUTHENTICATED",
         "has no credential this worker accepts"),
    ]
    for metadata, reason, text in cases:
        with pytest.raises(grpc.RpcError) as caught:
            unary(b"", timeout=10, metadata=metadata)
        status = rpc_status.from_call(caught.value)  # type: ignore[arg-type]
        assert status is not None
        info = error_details_pb2.ErrorInfo()
        assert status.details[0].Unpack(info)
        assert info.reason == reason
        assert text in status.message


@pytest.mark.parametrize("method", all_methods(), ids=method_id)
def test_a_worker_that_authenticates_nobody_lets_clients_do_everything_but_cluster_calls(
    open_standalone: Served, method: MethodDescriptor
) -> None:
    expected = DENIED if method.containing_service is CLUSTER else OK
    assert open_standalone.call(method) == expected


@pytest.mark.parametrize("method", all_methods(), ids=method_id)
def test_a_standalone_worker_refuses_any_call_claiming_to_be_forwarded(
    open_standalone: Served, method: MethodDescriptor
) -> None:
    """Without a cluster there is no session key: no signature can be valid."""
    assert open_standalone.call(method, signed(method, ADMIN)) == UNAUTHENTICATED
    assert open_standalone.recorder.calls == []


def health_status(served: Served, metadata: tuple[tuple[str, str], ...] = ()) -> object:
    stub = health_pb2_grpc.HealthStub(served.channel)
    try:
        return stub.Check(health_pb2.HealthCheckRequest(), timeout=5, metadata=metadata).status
    except grpc.RpcError as error:
        return error.code()


def reflection_status(served: Served, metadata: tuple[tuple[str, str], ...] = ()) -> object:
    stub = reflection_pb2_grpc.ServerReflectionStub(served.channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    try:
        answers = list(stub.ServerReflectionInfo(iter([request]), timeout=5, metadata=metadata))
    except grpc.RpcError as error:
        return error.code()
    return sorted(s.name for s in answers[0].list_services_response.service)


def test_health_and_reflection_stay_open(tokens_worker: Served) -> None:
    assert health_status(tokens_worker) == health_pb2.HealthCheckResponse.SERVING
    assert reflection_status(tokens_worker) == sorted(
        (CONNECT.full_name, HEALTH_SERVICE, REFLECTION_SERVICE)
    )


def test_auth_open_services_empty_closes_health_and_reflection(tokens_file: Path) -> None:
    security = SecurityConfig(auth=AuthConfig(tokens_file=tokens_file, open_services=frozenset()))
    server, served = serve(security, [KEY])
    try:
        assert health_status(served) == UNAUTHENTICATED
        assert reflection_status(served) == UNAUTHENTICATED
        assert health_status(served, bearer(VIEWER_TOKEN)) == health_pb2.HealthCheckResponse.SERVING
        assert isinstance(reflection_status(served, bearer(VIEWER_TOKEN)), list)
    finally:
        served.channel.close()
        server.stop(0).wait()


def test_tokens_are_added_and_revoked_without_a_restart(
    tokens_worker: Served, tokens_file: Path
) -> None:
    method = CONNECT.methods_by_name["ListConnectors"]
    new_token = "a-token-added-while-it-runs-0123"
    assert tokens_worker.call(method, bearer(new_token)) == UNAUTHENTICATED
    tokens_file.write_text(f"{hash_token(new_token)} late-comer viewer\n", encoding="utf-8")
    assert tokens_worker.call(method, bearer(new_token)) == OK
    assert tokens_worker.call(method, bearer(ADMIN_TOKEN)) == UNAUTHENTICATED  # revoked


def test_a_broken_tokens_file_keeps_the_last_good_one(
    tokens_worker: Served, tokens_file: Path
) -> None:
    method = CONNECT.methods_by_name["ListConnectors"]
    tokens_file.write_text("this line is not a token line\n", encoding="utf-8")
    assert tokens_worker.call(method, bearer(VIEWER_TOKEN)) == OK


def test_a_cluster_member_that_authenticates_nobody_still_requires_the_signature() -> None:
    """Signed calls are admitted (for any credential: this worker authenticates nobody),
    the workers' own ClusterService calls too; a forged mark is not."""
    server, served = serve(SecurityConfig(), [KEY])
    try:
        create = CONNECT.methods_by_name["CreateConnector"]
        put = CLUSTER.methods_by_name["PutTaskConfigs"]
        assert served.call(create, signed(create, "none")) == OK
        assert served.call(put, signed(put, worker_credential("w2"), forwarded_by="")) == OK
        assert served.call(create, CALLERS["forged forwarded mark"](create)) == UNAUTHENTICATED
        assert served.call(put) == DENIED
    finally:
        served.channel.close()
        server.stop(0).wait()


def test_a_methods_guard_is_built_once_for_the_handler_it_guards() -> None:
    interceptor = build_interceptor(SecurityConfig(), None)

    @dataclass
    class Details:
        method: str
        invocation_metadata: tuple[tuple[str, str], ...] = ()

    def unary(request: Any, context: Any) -> Any:
        return request

    first = grpc.unary_unary_rpc_method_handler(unary)
    second = grpc.unary_unary_rpc_method_handler(unary)
    pause = Details("/connect.v1.ConnectService/PauseConnector")

    guarded = interceptor.intercept_service(lambda _: first, pause)
    assert guarded is not first  # an admin write is guarded
    assert interceptor.intercept_service(lambda _: first, pause) is guarded
    # another handler for the method (a relay after this worker lost the lead): its own guard
    other = interceptor.intercept_service(lambda _: second, pause)
    assert other is not guarded and other is not second
    # a method nobody serves is answered UNIMPLEMENTED by gRPC, and nothing is kept for it
    assert interceptor.intercept_service(lambda _: None, Details("/x.Y/Made.Up")) is None
    assert "/x.Y/Made.Up" not in interceptor._guards


def test_a_signature_is_the_v1_hmac_of_the_compact_json_a_peer_of_another_version_checks() -> None:
    key = SessionKey(b"k" * 32, 1_700_000_000_000)
    call = SignedCall("/connect.v1.ConnectService/PauseConnector", b"\x0a\x01a", "w1", "token:ab")
    signer = RequestSigner(lambda: key, clock=lambda: 1_700_000_000_123)
    (_, signature), _ = signer.metadata(call)
    payload = json.dumps(
        ["v1", call.method, hashlib.sha256(call.body).hexdigest(), 1_700_000_000_123,
         key.created_ms, call.forwarded_by, call.credential],
        separators=(",", ":"),
    ).encode("utf-8")
    expected = hmac.new(key.secret, payload, hashlib.sha256).hexdigest()
    assert signature == f"v1 {key.created_ms} 1700000000123 {expected}"
