"""ClusterService: the workers' own calls to each other (distributed mode, not for clients).

Every call is signed with the cluster's session key (``security.session_key``); the
receiving worker's auth interceptor refuses any call that is not (PERMISSION_DENIED for a
client, whatever its role).

The worker that runs a connector generates its task configs; only the leader writes the
config topic, so the worker sends them to the leader's ClusterService/PutTaskConfigs (Kafka
Connect's internal ``PUT /connectors/{name}/tasks``). A worker that is not the leader
answers UNAVAILABLE / NOT_LEADER, and the sender tries again on its next round.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import grpc
import structlog
from google.protobuf.message import Message

from connect_grpc.api.errors import mapped
from connect_grpc.api.peer_channels import ChannelPool
from connect_grpc.api.tls import PeerCredentials
from connect_grpc.herder.validation import validate_name
from connect_grpc.kernel.errors import FailedPreconditionError, UnavailableError
from connect_grpc.security.roles import worker_credential
from connect_grpc.security.session_key import RequestSigner, SignedCall
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

log = structlog.get_logger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ClusterService"].full_name
PUT_TASK_CONFIGS = f"/{SERVICE_NAME}/PutTaskConfigs"
FENCE_ZOMBIES = f"/{SERVICE_NAME}/FenceZombies"

R = TypeVar("R", bound=Message)


class TaskConfigSink(Protocol):
    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None: ...

    def fence_zombies(self, name: str) -> int:
        """(Leader) fences the connector's previous task generation if need be; returns the
        config topic position after its task count record."""


class ClusterServicer(pb_grpc.ClusterServiceServicer):  # type: ignore[misc]  # generated, untyped
    def __init__(self, herder: TaskConfigSink) -> None:
        self._herder = herder

    @mapped
    def PutTaskConfigs(
        self, request: pb.PutTaskConfigsRequest, context: grpc.ServicerContext
    ) -> pb.PutTaskConfigsResponse:
        name = validate_name(request.name)
        configs = [dict(task.config) for task in request.tasks]
        log.info("task_configs_received", connector=name, tasks=len(configs),
                 from_worker=request.worker_id)
        self._herder.put_task_configs(name, configs)
        return pb.PutTaskConfigsResponse()

    @mapped
    def FenceZombies(
        self, request: pb.FenceZombiesRequest, context: grpc.ServicerContext
    ) -> pb.FenceZombiesResponse:
        name = validate_name(request.name)
        log.info("zombie_fencing_requested", connector=name, from_worker=request.worker_id)
        return pb.FenceZombiesResponse(config_position=self._herder.fence_zombies(name))


class TaskConfigSender:
    """Sends task configs to the leader over one long-lived channel per address."""

    def __init__(
        self,
        worker_id: str,
        signer: RequestSigner | None = None,
        credentials: PeerCredentials | None = None,
    ) -> None:
        """``signer`` signs each call with the session key (the leader refuses unsigned
        ones); ``credentials``: TLS to the other workers."""
        self._worker_id = worker_id
        self._signer = signer
        self._channels = ChannelPool(credentials=credentials)

    def _call(
        self, address: str, method: str, request: Message, response_type: type[R],
        timeout: float,
    ) -> R:
        """One signed call; raises UnavailableError when stopping or no key is known yet,
        grpc.RpcError when the call failed."""
        channel = self._channels.get(address)
        if channel is None:
            raise UnavailableError("the worker is stopping", 1.0)
        body = request.SerializeToString()
        metadata = () if self._signer is None else self._signer.metadata(
            SignedCall(method, body, "", worker_credential(self._worker_id))
        )
        send = channel.unary_unary(
            method, request_serializer=None, response_deserializer=response_type.FromString
        )
        response: R = send(body, timeout=timeout, metadata=metadata)
        return response

    def __call__(
        self, address: str, name: str, configs: list[dict[str, str]], timeout: float
    ) -> None:
        """Raises UnavailableError when the leader did not take them (try again later)."""
        request = pb.PutTaskConfigsRequest(
            name=name,
            tasks=[pb.TaskConfig(config=config) for config in configs],
            worker_id=self._worker_id,
        )
        try:
            self._call(address, PUT_TASK_CONFIGS, request, pb.PutTaskConfigsResponse, timeout)
        except grpc.RpcError as exc:
            call: grpc.Call = exc  # type: ignore[assignment]  # a unary call's error is its Call
            raise UnavailableError(
                f"the leader at {address} did not take the task configs of {name}: "
                f"{call.code().name} {call.details()}",
                1.0,
            ) from None

    def request_fencing(self, address: str, name: str, timeout: float) -> int:
        """Asks the leader at ``address`` to fence the connector's previous task generation;
        returns the config position to wait for. Raises UnavailableError when the leader
        did not answer or could not fence for now, FailedPreconditionError when it cannot."""
        request = pb.FenceZombiesRequest(name=name, worker_id=self._worker_id)
        try:
            response = self._call(
                address, FENCE_ZOMBIES, request, pb.FenceZombiesResponse, timeout
            )
        except grpc.RpcError as exc:
            call: grpc.Call = exc  # type: ignore[assignment]  # a unary call's error is its Call
            message = (
                f"the leader at {address} did not fence the zombies of {name}: "
                f"{call.code().name} {call.details()}"
            )
            if call.code() is grpc.StatusCode.FAILED_PRECONDITION:
                raise FailedPreconditionError(message) from None
            raise UnavailableError(message, 1.0) from None
        position: int = response.config_position
        return position

    def close(self) -> None:
        self._channels.close()
