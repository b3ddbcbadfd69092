"""TLS, mutual TLS, tokens and roles on real worker processes (issue 12, parts 1 and 2):

- a standalone worker on ``grpcs://`` with a tokens file (``token_worker``, shared with the
  ctl and Go modules over TLS: ``tests/integration/tls_workers.py``): a TLS round trip, a plaintext
  client refused cleanly, and every RPC of the descriptor called by no token, a bad token,
  a viewer and an admin (table-driven), refused calls changing nothing;
- a standalone worker requiring client certificates, with a principals file: mTLS round
  trip, roles, untrusted and missing certificates refused, certificates reloaded without a
  restart;
- a two-worker cluster on mTLS: writes forwarded between workers over TLS (each verifying
  the other's certificate) and authorised as the original caller, the session key in the
  config topic in Kafka Connect's format and rotated, and a client that forges the
  forwarded mark or calls the workers' ClusterService getting nothing.

Certificates are made at test time (``connect_grpc.testing.certs``).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from connect_grpc.client import ConnectClient
from connect_grpc.client.connection import ConnectionSettings, TlsOptions
from connect_grpc.client.convert import PLAINTEXT_AT_TLS_HINT
from connect_grpc.kernel.domain import ConnectorOffset, TargetState
from connect_grpc.kernel.errors import PermissionDeniedError, UnavailableError
from connect_grpc.security.roles import certificate_credential
from connect_grpc.security.session_key import CREDENTIAL_HEADER, SIGNATURE_HEADER, SessionKey
from connect_grpc.testing.certs import Pki
from connect_grpc.testing.cluster import (
    WorkerProcess,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import error_reason, read_all, source_config
from tests.integration.tls_workers import ADMIN_TOKEN, VIEWER_TOKEN, listener_files
from tests.rpc_roles import READS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CONNECT = pb.DESCRIPTOR.services_by_name["ConnectService"]
OK = grpc.StatusCode.OK
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED
#: Tests of a worker that calls must not change (the roles table's target).
GUARDED = "guarded"
OFFSETS = [ConnectorOffset({"task": 0}, {"seq": 41})]


def with_address(settings: ConnectionSettings, worker: WorkerProcess) -> ConnectionSettings:
    return ConnectionSettings(worker.address, settings.tls, settings.token)


# --- a TLS listener with tokens -----------------------------------------------------------


def test_tls_round_trip(token_worker: WorkerProcess, pki: Pki, tmp_path: Path) -> None:
    name = f"tls-{uuid.uuid4().hex[:8]}"
    settings = with_address(pki.settings(None, ADMIN_TOKEN), token_worker)
    with ConnectClient(settings, timeout=60) as client:
        client.create_connector(name, source_config(tmp_path / "events", tasks=1),
                                TargetState.STOPPED)
        assert client.get_connector_config(name)["tasks.max"] == "1"
        client.delete_connector(name)
        assert name not in [c.name for c in client.list_connectors()]


def test_a_plaintext_client_against_the_tls_listener_fails_cleanly(
    token_worker: WorkerProcess,
) -> None:
    with grpc.insecure_channel(token_worker.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    with ConnectClient(token_worker.address, timeout=10) as plaintext, pytest.raises(
        UnavailableError
    ) as refused:
        plaintext.list_plugins()
    assert refused.value.message.endswith(f"({PLAINTEXT_AT_TLS_HINT})")
    assert token_worker.returncode is None
    answer = health_pb2_grpc.HealthStub(token_worker.channel).Check(
        health_pb2.HealthCheckRequest(), timeout=10
    )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


@pytest.fixture(scope="module")
def guarded(token_worker: WorkerProcess, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A STOPPED connector with offsets: each refused mutation would show on it."""
    events = tmp_path_factory.mktemp("guarded") / "events.jsonl"
    settings = ConnectionSettings(token_worker.address, token_worker.connection.tls,
                                  ADMIN_TOKEN)
    with ConnectClient(settings, timeout=60) as client:
        client.create_connector(GUARDED, source_config(events, tasks=1), TargetState.STOPPED,
                                OFFSETS)
    return GUARDED


def requests_naming(name: str) -> dict[str, Any]:
    """A request per ConnectService RPC, each naming connector ``name`` (task 0) and each
    one that would change it if let through."""
    return {
        "ListConnectors": pb.ListConnectorsRequest(expand_info=True),
        "GetConnector": pb.GetConnectorRequest(name=name),
        "CreateConnector": pb.CreateConnectorRequest(name=name, config={"tasks.max": "1"}),
        "PutConnectorConfig": pb.PutConnectorConfigRequest(name=name, config={"x": "1"}),
        "PatchConnectorConfig": pb.PatchConnectorConfigRequest(
            name=name, config={"x": struct_pb2.Value(string_value="1")}
        ),
        "GetConnectorConfig": pb.GetConnectorConfigRequest(name=name),
        "DeleteConnector": pb.DeleteConnectorRequest(name=name),
        "GetConnectorStatus": pb.GetConnectorStatusRequest(name=name),
        "GetTaskStatus": pb.GetTaskStatusRequest(name=name, task_id=0),
        "ListTasks": pb.ListTasksRequest(name=name),
        "PauseConnector": pb.PauseConnectorRequest(name=name),
        "ResumeConnector": pb.ResumeConnectorRequest(name=name),
        "StopConnector": pb.StopConnectorRequest(name=name),
        "RestartConnector": pb.RestartConnectorRequest(name=name, include_tasks=True),
        "RestartTask": pb.RestartTaskRequest(name=name, task_id=0),
        "GetOffsets": pb.GetOffsetsRequest(name=name),
        "AlterOffsets": pb.AlterOffsetsRequest(name=name, offsets=[pb.ConnectorOffset()]),
        "ResetOffsets": pb.ResetOffsetsRequest(name=name),
        "ValidateConfig": pb.ValidateConfigRequest(plugin="FileStreamSource", config={}),
        "ListPlugins": pb.ListPluginsRequest(),
        "GetPluginConfig": pb.GetPluginConfigRequest(name="FileStreamSource"),
        "WatchConnectorStatus": pb.WatchConnectorStatusRequest(name=name),
        "GetClusterInfo": pb.GetClusterInfoRequest(),
        "ListLoggers": pb.ListLoggersRequest(),
        "GetLogger": pb.GetLoggerRequest(name="root"),
        # a namespace no module logs under: an admin's call changes no logger that logs
        "SetLogLevel": pb.SetLogLevelRequest(name=f"{name}.loggers", level="INFO"),
        "GetConnectorTopics": pb.GetConnectorTopicsRequest(name=name),
        "ResetConnectorTopics": pb.ResetConnectorTopicsRequest(name=name),
        # Pipeline preview (issue 26 item 6)
        "PreviewPipeline": pb.PreviewPipelineRequest(
            name=name, samples=pb.PreviewSamples(records=[pb.PreviewSampleRecord()])
        ),
    }


def call(stub: pb_grpc.ConnectServiceStub, rpc: str, request: Any,
         metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    try:
        if rpc == "WatchConnectorStatus":
            stream = stub.WatchConnectorStatus(request, timeout=30, metadata=metadata)
            next(stream)
            stream.cancel()
        else:
            getattr(stub, rpc)(request, timeout=60, metadata=metadata)
    except grpc.RpcError as error:
        return error.code()
    return OK


def state_of(worker: WorkerProcess, name: str) -> tuple[object, ...]:
    """Everything a mutation of ``name`` could change."""
    settings = ConnectionSettings(worker.address, worker.connection.tls, ADMIN_TOKEN)
    with ConnectClient(settings, timeout=60) as client:
        listing = client.list_connectors(expand_info=True)
        return (
            [(c.name, c.info) for c in listing],
            client.get_connector_config(name),
            client.get_offsets(name),
            client.get_connector_status(name).connector.state,
        )


CALLERS: dict[str, tuple[tuple[str, str], ...]] = {
    "no token": (),
    "unknown token": (("authorization", "Bearer " + uuid.uuid4().hex),),
    "not a bearer": (("authorization", "Basic " + ADMIN_TOKEN),),
    "viewer": (("authorization", "Bearer " + VIEWER_TOKEN),),
}


@pytest.mark.parametrize("rpc", [method.name for method in CONNECT.methods])
@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_roles_table(
    token_worker: WorkerProcess, guarded: str, caller: str, rpc: str
) -> None:
    """Every RPC: no or a bad token is UNAUTHENTICATED, a viewer may read and is
    PERMISSION_DENIED the rest; no refused call changes anything."""
    with grpc.secure_channel(token_worker.address, grpc.ssl_channel_credentials(
        token_worker.connection.tls.ca_file.read_bytes()  # type: ignore[union-attr]
    )) as channel:
        before = state_of(token_worker, guarded)
        code = call(pb_grpc.ConnectServiceStub(channel), rpc, requests_naming(guarded)[rpc],
                    CALLERS[caller])
        after = state_of(token_worker, guarded)
    if caller != "viewer":
        assert code == UNAUTHENTICATED
    elif rpc in READS:  # let through (a read may still answer e.g. NOT_FOUND for task 0)
        assert code not in (UNAUTHENTICATED, DENIED)
    else:
        assert code == DENIED
    assert after == before


@pytest.mark.parametrize("rpc", [method.name for method in CONNECT.methods])
def test_an_admin_passes_on_every_rpc(token_worker: WorkerProcess, rpc: str) -> None:
    """Sent about a connector that does not exist, so that nothing changes: whatever the
    worker answers, it is not an authentication or authorisation refusal."""
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    request = requests_naming(missing)[rpc]
    if rpc == "CreateConnector":
        request = pb.CreateConnectorRequest(name=missing, config={"connector.class": "Nope"})
    code = call(token_worker.stub, rpc, request, (("authorization", "Bearer " + ADMIN_TOKEN),))
    assert code not in (UNAUTHENTICATED, DENIED)


# --- mutual TLS ------------------------------------------------------------------------------


def test_mtls_round_trip_and_roles(mtls_worker: WorkerProcess, pki: Pki, tmp_path: Path) -> None:
    name = f"mtls-{uuid.uuid4().hex[:8]}"
    with ConnectClient(with_address(pki.settings(pki.admin), mtls_worker), timeout=60) as admin:
        admin.create_connector(name, source_config(tmp_path / "e", tasks=1), TargetState.STOPPED)
    with ConnectClient(with_address(pki.settings(pki.viewer), mtls_worker), timeout=60) as viewer:
        assert name in [c.name for c in viewer.list_connectors()]
        with pytest.raises(PermissionDeniedError, match="needs role admin"):
            viewer.delete_connector(name)
        assert name in [c.name for c in viewer.list_connectors()]


@pytest.mark.parametrize("who", ["no certificate", "an untrusted certificate"])
def test_mtls_refuses_a_client_without_a_trusted_certificate(
    mtls_worker: WorkerProcess, pki: Pki, who: str
) -> None:
    identity = None if who == "no certificate" else pki.rogue
    settings = with_address(pki.settings(identity), mtls_worker)
    with ConnectClient(settings, timeout=10) as client, pytest.raises(UnavailableError):
        client.list_connectors()
    assert mtls_worker.returncode is None


def test_certificates_are_reloaded_without_a_restart(
    mtls_worker: WorkerProcess, pki: Pki
) -> None:
    """The worker's certificate files are replaced by a certificate of another CA: new
    connections see it at once, the process is the same; then the originals come back."""
    properties = dict(
        line.split("=", 1) for line in mtls_worker.properties_path.read_text().splitlines()
    )
    certificate = Path(properties["listeners.https.ssl.certificate.location"])
    key = Path(properties["listeners.https.ssl.key.location"])
    pid = mtls_worker.pid
    replacement = pki.rogue_ca.issue("replacement", "worker-1")
    trusting_new = ConnectionSettings(
        mtls_worker.address,
        TlsOptions(pki.rogue_ca.certificate, pki.admin.certificate, pki.admin.key),
    )
    trusting_old = with_address(pki.settings(pki.admin), mtls_worker)
    try:
        shutil.copy(replacement.key, key)
        shutil.copy(replacement.certificate, certificate)
        with ConnectClient(trusting_new, timeout=10) as client:
            assert client.list_plugins()
        with ConnectClient(trusting_old, timeout=10) as client, pytest.raises(
            UnavailableError
        ):
            client.list_plugins()
    finally:
        shutil.copy(pki.worker.key, key)
        shutil.copy(pki.worker.certificate, certificate)
    with ConnectClient(trusting_old, timeout=10) as client:
        assert client.list_plugins()
    assert mtls_worker.pid == pid and mtls_worker.returncode is None


# --- a cluster on mutual TLS ------------------------------------------------------------------

KEY_TTL_MS = 4000
ROLES = "admin  {admin}\nviewer {viewer}\n"


@dataclass
class SecureCluster:
    workers: list[WorkerProcess]
    config_topic: str
    bootstrap: str
    #: Each worker's own principals file (the same roles, until a test changes one).
    principals: dict[int, Path]

    def leader(self) -> WorkerProcess:
        leader_id = wait_until(lambda: self.workers[0].stub.GetClusterInfo(
            pb.GetClusterInfoRequest(), timeout=10).leader_id, timeout=60)
        return next(w for w in self.workers if f"worker-{w.port}" == leader_id)

    def follower(self) -> WorkerProcess:
        leader = self.leader()
        return next(w for w in self.workers if w is not leader)

    def session_keys(self) -> list[dict[str, Any]]:
        """Every session-key record of the config topic, oldest first."""
        return [
            json.loads(message.value())
            for message in read_all(self.bootstrap, self.config_topic)
            if message.key() == b"session-key" and message.value() is not None
        ]


@pytest.fixture(scope="module")
def secure_cluster(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, pki: Pki
) -> Iterator[SecureCluster]:
    root = tmp_path_factory.mktemp("secure-cluster")
    group = f"secure-{uuid.uuid4().hex[:8]}"
    properties = {
        **cluster_properties(group),
        **listener_files(pki, root / "tls"),
        "listeners.https.ssl.client.auth": "required",
        "inter.worker.key.ttl.ms": str(KEY_TTL_MS),
    }
    principals: dict[int, Path] = {}
    workers = []
    for n in range(2):
        principals[n] = root / f"principals-{n}.txt"
        principals[n].write_text(ROLES.format(admin=pki.admin.subject, viewer=pki.viewer.subject),
                                 encoding="utf-8")
        workers.append(WorkerProcess(
            root / f"worker-{n}", kafka_bootstrap,
            {**properties, "auth.principals.file": str(principals[n])},
            mode="distributed", connection=pki.settings(pki.admin),
        ))
    try:
        start_together(workers)

        def assigned() -> bool:
            info = workers[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=10)
            return bool(info.leader_id) and len(info.workers) == 2

        wait_until(assigned, timeout=120)
        yield SecureCluster(workers, properties["config.storage.topic"], kafka_bootstrap,
                            principals)
    finally:
        for worker in workers:
            worker.stop()


def test_writes_are_forwarded_over_mtls_for_the_original_caller(
    secure_cluster: SecureCluster, pki: Pki, tmp_path: Path
) -> None:
    follower, leader = secure_cluster.follower(), secure_cluster.leader()
    name = f"fwd-{uuid.uuid4().hex[:8]}"
    config = source_config(tmp_path / "events", tasks=1)
    viewer_settings = with_address(pki.settings(pki.viewer), follower)
    with ConnectClient(viewer_settings, timeout=60) as viewer, pytest.raises(
        PermissionDeniedError
    ):
        viewer.create_connector(name, config, TargetState.STOPPED)
    with ConnectClient(with_address(pki.settings(pki.admin), follower), timeout=60) as admin:
        admin.create_connector(name, config, TargetState.STOPPED)
    with ConnectClient(with_address(pki.settings(pki.viewer), leader), timeout=60) as viewer:
        assert viewer.get_connector_config(name)["tasks.max"] == "1"
    with ConnectClient(with_address(pki.settings(pki.admin), follower), timeout=60) as admin:
        admin.delete_connector(name)
    assert refusals(follower, "CreateConnector") >= 1  # the viewer, by the follower


def refusals(worker: WorkerProcess, rpc: str) -> int:
    return sum(1 for line in worker.logs().splitlines() if "call_refused" in line and rpc in line)


def test_the_leader_applies_its_own_roles_to_the_original_caller(
    secure_cluster: SecureCluster, pki: Pki, tmp_path: Path
) -> None:
    """The follower's principals file is changed (no restart) to make the dashboard an
    admin: the follower forwards the dashboard's write, and the leader, whose file says
    viewer, refuses it; nothing is created. An unconditional pause too, which a follower
    of a cluster that authenticates nobody would write itself (decision 0100)."""
    leader, follower = secure_cluster.leader(), secure_cluster.follower()
    lax = secure_cluster.principals[secure_cluster.workers.index(follower)]
    name = f"lax-{uuid.uuid4().hex[:8]}"
    with ConnectClient(with_address(pki.settings(pki.admin), leader), timeout=60) as admin:
        admin.create_connector(f"{name}-p", source_config(tmp_path / "p", tasks=1),
                               TargetState.STOPPED)
    rpcs = ("CreateConnector", "PauseConnector")
    before = [(refusals(leader, rpc), refusals(follower, rpc)) for rpc in rpcs]
    lax.write_text(ROLES.format(admin=pki.viewer.subject, viewer=pki.admin.subject),
                   encoding="utf-8")
    try:
        settings = with_address(pki.settings(pki.viewer), follower)
        with ConnectClient(settings, timeout=60) as dashboard:
            with pytest.raises(PermissionDeniedError, match="has role viewer"):
                dashboard.create_connector(name, source_config(tmp_path / "e", tasks=1),
                                           TargetState.STOPPED)
            with pytest.raises(PermissionDeniedError, match="has role viewer"):
                dashboard.pause_connector(f"{name}-p")
    finally:
        lax.write_text(ROLES.format(admin=pki.admin.subject, viewer=pki.viewer.subject),
                       encoding="utf-8")
    after = [(refusals(leader, rpc), refusals(follower, rpc)) for rpc in rpcs]
    # the leader refused both, not the follower
    assert after == [(leader_before + 1, follower_before)
                     for leader_before, follower_before in before]
    with ConnectClient(with_address(pki.settings(pki.admin), leader), timeout=60) as admin:
        assert name not in [c.name for c in admin.list_connectors()]
        admin.delete_connector(f"{name}-p")


def forged(subject: str) -> tuple[tuple[str, str | bytes], ...]:
    """What a client adds to pass for a worker forwarding an admin's call."""
    return (
        ("x-connect-forwarded-by", "worker-1"),
        (CREDENTIAL_HEADER, certificate_credential(subject).encode()),
        (SIGNATURE_HEADER, f"v1 1 1 {'0' * 64}"),
    )


def test_a_forged_forwarded_mark_gives_no_privileges(
    secure_cluster: SecureCluster, pki: Pki
) -> None:
    """A viewer that marks its write as forwarded for an admin (with or without a made-up
    signature) is UNAUTHENTICATED by either worker; an admin calling the workers'
    ClusterService is PERMISSION_DENIED; nothing is written."""
    name = f"forged-{uuid.uuid4().hex[:8]}"
    request = pb.CreateConnectorRequest(
        name=name, config={"connector.class": "FileStreamSource", "topic": "t",
                           "file": "/dev/null"},
    )
    for worker in secure_cluster.workers:
        with with_address(pki.settings(pki.viewer), worker).channel() as channel:
            stub = pb_grpc.ConnectServiceStub(channel)
            for metadata in (forged(pki.admin.subject), forged(pki.admin.subject)[:2]):
                with pytest.raises(grpc.RpcError) as caught:
                    stub.CreateConnector(request, timeout=30, metadata=metadata)
                assert caught.value.code() == UNAUTHENTICATED
    leader = secure_cluster.leader()
    with with_address(pki.settings(pki.admin), leader).channel() as channel:
        with pytest.raises(grpc.RpcError) as caught:
            pb_grpc.ClusterServiceStub(channel).PutTaskConfigs(
                pb.PutTaskConfigsRequest(name=name, tasks=[pb.TaskConfig(config={"a": "b"})]),
                timeout=30,
            )
        assert caught.value.code() == DENIED
        assert error_reason(caught.value) == "PERMISSION_DENIED"
        listed = pb_grpc.ConnectServiceStub(channel).ListConnectors(
            pb.ListConnectorsRequest(), timeout=30
        )
        assert name not in [c.name for c in listed.connectors]


def test_the_session_key_is_in_the_config_topic_and_rotated(
    secure_cluster: SecureCluster, pki: Pki, tmp_path: Path
) -> None:
    """Kafka Connect's record (key ``session-key``), a new one every
    ``inter.worker.key.ttl.ms``; forwarded writes go on working across rotations."""
    def rotated_twice() -> list[dict[str, Any]]:
        found = secure_cluster.session_keys()
        return found if len(found) >= 3 else []

    keys = wait_until(rotated_twice, timeout=60)
    for value in keys:
        assert set(value) == {"key", "algorithm", "creation-timestamp"}
        assert SessionKey.from_json(value) is not None
    stamps = [value["creation-timestamp"] for value in keys]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    follower = secure_cluster.follower()
    settings = with_address(pki.settings(pki.admin), follower)
    with ConnectClient(settings, timeout=60) as admin:
        for n in range(3):
            name = f"rotating-{n}-{uuid.uuid4().hex[:6]}"
            admin.create_connector(name, source_config(tmp_path / f"e{n}", tasks=1),
                                   TargetState.STOPPED)
            admin.delete_connector(name)

