"""Authentication and authorisation of every call, as a server interceptor.

Each call is admitted or refused before any servicer sees it:

1. **Open services** (``auth.open.services``: health and reflection by default) are
   admitted as they are.
2. **Calls from other workers** (marked ``x-connect-forwarded-by``, or signed) must carry
   a valid session-key signature (:mod:`connect_grpc.security.session_key`), whatever the
   worker's other settings. The signature vouches for the original caller's credential
   (its token's hash, its certificate's subject) or for the sending worker itself
   (ClusterService); this worker then applies its *own* policy to that credential, so it
   authorises the original caller, by its own files, never the worker that forwarded it.
   A mark without a valid signature is UNAUTHENTICATED.
3. **Clients**: with client certificates required, the certificate's subject (its role
   from ``auth.principals.file``, else ``admin``); else with ``auth.tokens.file``, the
   ``authorization: Bearer <token>`` metadata; else everyone is ``anonymous`` ``admin``.
   No or a bad credential is UNAUTHENTICATED.

Then the caller's role must allow the method (:func:`required_role`): else
PERMISSION_DENIED. A refused call reaches no servicer, so it changes nothing. An admitted
unary call runs with its caller available to :func:`~connect_grpc.api.caller.current_caller`
(the forwarding code signs on its behalf).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import structlog

from connect_grpc.api.caller import acting_for
from connect_grpc.api.errors import abort
from connect_grpc.api.forwarding import FORWARDED_BY
from connect_grpc.api.handler_cache import WrappedHandlers
from connect_grpc.kernel.errors import ConnectError, PermissionDeniedError, UnauthenticatedError
from connect_grpc.security.config import (
    AUTH_PRINCIPALS_FILE,
    AUTH_TOKENS_FILE,
    HEALTH_SERVICE,
    REFLECTION_SERVICE,
    SecurityConfig,
)
from connect_grpc.security.credential_files import TokenTable, read_principals, read_tokens
from connect_grpc.security.reloading import ReloadingFiles
from connect_grpc.security.roles import (
    ANONYMOUS,
    NO_CREDENTIAL,
    Authentication,
    Caller,
    Role,
    certificate_credential,
    token_credential,
)
from connect_grpc.security.session_key import SIGNATURE_HEADER, RequestVerifier
from connect_grpc.v1 import connect_pb2 as pb

log = structlog.get_logger(__name__)

CONNECT_SERVICE = pb.DESCRIPTOR.services_by_name["ConnectService"].full_name
CLUSTER_SERVICE = pb.DESCRIPTOR.services_by_name["ClusterService"].full_name
AUTHORIZATION = "authorization"
BEARER = "bearer"

#: The ConnectService RPCs a viewer may call: those that change nothing. ValidateConfig
#: is one (it only checks a config); every RPC not listed here needs ``admin``, so a new
#: RPC is an admin's until it is added.
VIEWER_RPCS = frozenset({
    "ListConnectors",
    "GetConnector",
    "GetConnectorConfig",
    "GetConnectorStatus",
    "GetTaskStatus",
    "ListTasks",
    "WatchConnectorStatus",
    "GetOffsets",
    "ValidateConfig",
    "ListPlugins",
    "GetPluginConfig",
    "GetClusterInfo",
    "ListLoggers",
    "GetLogger",
    "GetConnectorTopics",

    # Pipeline preview: runs plugin code on what it is given and writes
    # nothing, as ValidateConfig (which also instantiates plugins)
    "PreviewPipeline",
})


def required_role(method: str, open_services: frozenset[str]) -> Role | None:
    """The role a call of ``method`` (``/package.Service/Method``) needs; None: none (an
    open service)."""
    service, _, name = method.removeprefix("/").rpartition("/")
    if service in open_services:
        return None
    if service == CLUSTER_SERVICE:
        return Role.WORKER
    if service == CONNECT_SERVICE:
        return Role.VIEWER if name in VIEWER_RPCS else Role.ADMIN
    if service in (HEALTH_SERVICE, REFLECTION_SERVICE):
        return Role.VIEWER
    return Role.ADMIN


Metadata = Sequence[tuple[str, str | bytes]]


def _header(metadata: Metadata, name: str) -> str | bytes | None:
    return next((value for key, value in metadata if key == name), None)


class Authenticator:
    """Tells who a call is from (see the module's docstring for the order of the checks).

    The tokens and principals files are re-read when they change, so tokens can be added
    or revoked and roles changed without a restart.
    """

    def __init__(self, security: SecurityConfig, verifier: RequestVerifier | None) -> None:
        """``verifier``: checks calls from other workers (distributed mode); None accepts
        none (a standalone worker has no peers)."""
        self._certificates = security.client_certificates
        self._authenticates = security.authenticates
        self._verifier = verifier
        self._tokens = _reloading_tokens(security.auth.tokens_file)
        self._principals = _reloading_principals(security.auth.principals_file)

    def caller(
        self,
        method: str,
        metadata: Metadata,
        auth_context: Callable[[], Mapping[str, Sequence[bytes]]],
        body: bytes | None,
    ) -> Caller:
        """The caller; ``body`` is the request's bytes (None for a streaming request);
        ``auth_context`` gives the TLS peer's properties (asked only when certificates
        authenticate callers).

        Raises:
            UnauthenticatedError: no credential, or one this worker does not accept.
        """
        forwarded_by = _header(metadata, FORWARDED_BY)
        if forwarded_by is not None or _header(metadata, SIGNATURE_HEADER) is not None:
            return self._signed(method, metadata, body, str(forwarded_by or ""))
        if self._certificates:
            return self._certificate_holder(auth_context())
        if self._tokens is not None:
            return self._token_holder(self._tokens.current(), metadata)
        return ANONYMOUS

    def vouched(self, credential: str) -> Caller:
        """The caller whose credential another worker vouched for, by this worker's own
        policy (its tokens or principals file).

        Raises:
            UnauthenticatedError: a credential this worker would not accept from a client.
        """
        kind, _, value = credential.partition(":")
        if kind == "worker":
            return Caller(f"worker {value}", Role.WORKER, Authentication.WORKER_SIGNATURE,
                          credential)
        if not self._authenticates:
            return ANONYMOUS
        if self._certificates and kind == "certificate":
            return self._certificate_role(value)
        if self._tokens is not None and kind == "token":
            entry = self._tokens.current().by_digest(_digest(value))
            if entry is not None:
                return Caller(entry.principal, entry.role, Authentication.TOKEN, credential)
        raise UnauthenticatedError(
            f"the original caller of this forwarded call ({kind or NO_CREDENTIAL}) has no "
            "credential this worker accepts"
        )

    def _signed(self, method: str, metadata: Metadata, body: bytes | None,
                forwarded_by: str) -> Caller:
        if self._verifier is None:
            raise UnauthenticatedError(
                "the call claims to come from another worker, but this worker is not a "
                "member of a cluster"
            )
        if body is None:
            raise UnauthenticatedError("a streaming call cannot come from another worker")
        return self.vouched(self._verifier.verify(method, body, forwarded_by, metadata))

    def _certificate_holder(self, auth_context: Mapping[str, Sequence[bytes]]) -> Caller:
        subjects = auth_context.get("x509_subject") or ()
        if not subjects:
            raise UnauthenticatedError("this worker requires a client certificate")
        return self._certificate_role(subjects[0].decode("utf-8", "replace"))

    def _certificate_role(self, subject: str) -> Caller:
        role = Role.ADMIN if self._principals is None else self._principals.current().get(subject)
        return Caller(subject, role, Authentication.CERTIFICATE, certificate_credential(subject))

    @staticmethod
    def _token_holder(tokens: TokenTable, metadata: Metadata) -> Caller:
        raw = _header(metadata, AUTHORIZATION)
        if raw is None:
            raise UnauthenticatedError(
                "this worker requires a bearer token: send the metadata "
                "'authorization: Bearer <token>'"
            )
        scheme, _, token = (raw.decode("ascii", "replace") if isinstance(raw, bytes)
                            else raw).strip().partition(" ")
        if scheme.lower() != BEARER or not token.strip():
            raise UnauthenticatedError(
                "the authorization metadata must be 'Bearer <token>'"
            )
        entry = tokens.match(token.strip())
        if entry is None:
            raise UnauthenticatedError("the bearer token is not valid")
        return Caller(entry.principal, entry.role, Authentication.TOKEN,
                      token_credential(entry.digest))


def _digest(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        return b""


def _reloading_tokens(path: Path | None) -> ReloadingFiles[TokenTable] | None:
    if path is None:
        return None
    return ReloadingFiles([path], lambda: read_tokens(path, AUTH_TOKENS_FILE), AUTH_TOKENS_FILE)


def _reloading_principals(path: Path | None) -> ReloadingFiles[Mapping[str, Role]] | None:
    if path is None:
        return None
    return ReloadingFiles(
        [path], lambda: read_principals(path, AUTH_PRINCIPALS_FILE), AUTH_PRINCIPALS_FILE
    )


def authorize(caller: Caller, required: Role, method: str) -> None:
    """Raises PermissionDeniedError unless the caller's role allows ``required``."""
    if caller.may(required):
        return
    if required is Role.WORKER:
        raise PermissionDeniedError(
            f"{method} is for the cluster's workers only, not for clients"
        )
    has = f"role {caller.role.value}" if caller.role else "no role"
    raise PermissionDeniedError(
        f"{caller.principal} has {has}; {method} needs role {required.value}"
    )


@dataclass(frozen=True, slots=True)
class _WithBytes:
    """A unary request, parsed, and as it came on the wire (what a signature covers)."""

    raw: bytes
    message: Any


class AuthInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Admits or refuses every call before its handler runs (see the module docstring).

    gRPC gives an interceptor only the method and the metadata, so the check itself runs
    in a wrapper of the handler, where the peer's certificate and the request's bytes are
    known. Place it before any interceptor that handles calls itself (the leader's-writes
    relay), so that those are checked too.
    """

    def __init__(self, authenticator: Authenticator, open_services: frozenset[str]) -> None:
        self._authenticator = authenticator
        self._open_services = open_services
        self._guards = WrappedHandlers(self._guard)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        return self._guards.of(handler_call_details.method, handler)

    def _guard(self, handler: Any, method: str) -> Any:
        required = required_role(method, self._open_services)
        return handler if required is None else self._guarded(handler, method, required)

    def _admit(
        self, method: str, required: Role, context: grpc.ServicerContext, body: bytes | None
    ) -> Caller:
        """The caller, if admitted; else ends the call with UNAUTHENTICATED or
        PERMISSION_DENIED (raises)."""
        metadata = tuple(context.invocation_metadata() or ())
        try:
            # grpc-stubs type its values as bytes; they are lists of bytes
            auth_context = cast(Callable[[], Mapping[str, Sequence[bytes]]], context.auth_context)
            caller = self._authenticator.caller(method, metadata, auth_context, body)
            authorize(caller, required, method)
        except ConnectError as exc:
            log.warning("call_refused", rpc=method, peer=context.peer(), reason=exc.reason,
                        error=exc.message)
            abort(context, exc)
        return caller

    def _guarded(self, handler: Any, method: str, required: Role) -> Any:
        if handler.unary_unary is not None:
            return self._guarded_unary(handler, method, required)
        serialize = handler.response_serializer
        deserialize = handler.request_deserializer
        if handler.unary_stream is not None:
            def unary_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                self._admit(method, required, context, None)
                return handler.unary_stream(request, context)  # type: ignore[no-any-return]

            return grpc.unary_stream_rpc_method_handler(unary_stream, deserialize, serialize)
        if handler.stream_unary is not None:
            def stream_unary(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
                self._admit(method, required, context, None)
                return handler.stream_unary(requests, context)

            return grpc.stream_unary_rpc_method_handler(stream_unary, deserialize, serialize)

        def stream_stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            self._admit(method, required, context, None)
            return handler.stream_stream(requests, context)

        return grpc.stream_stream_rpc_method_handler(stream_stream, deserialize, serialize)

    def _guarded_unary(self, handler: Any, method: str, required: Role) -> Any:
        deserialize = handler.request_deserializer

        def keep_bytes(raw: bytes) -> _WithBytes:
            return _WithBytes(raw, deserialize(raw) if deserialize is not None else raw)

        def unary_unary(request: _WithBytes, context: grpc.ServicerContext) -> Any:
            caller = self._admit(method, required, context, request.raw)
            with acting_for(caller):
                return handler.unary_unary(request.message, context)

        return grpc.unary_unary_rpc_method_handler(
            unary_unary, keep_bytes, handler.response_serializer
        )


def build_interceptor(
    security: SecurityConfig, verifier: RequestVerifier | None
) -> AuthInterceptor:
    """The interceptor of a worker with these settings."""
    return AuthInterceptor(Authenticator(security, verifier), security.auth.open_services)
