"""``connect-grpc ctl`` over TLS and with bearer tokens, as a user runs it (the real
executable), against real workers: the mutual-TLS worker and the TLS worker with a tokens
file the security modules share (tests/integration/tls_workers.py, certificates made at
test time).

- Over mutual TLS, with a context that stores the files: ``get connectors`` lists what an
  admin created; a viewer's ``pause`` is PERMISSION_DENIED.
- An untrusted worker certificate, a plaintext client against the TLS listener and a client
  without a certificate fail with the exit code of UNAVAILABLE.
- With tokens: none is UNAUTHENTICATED, a viewer's ``pause`` (token from the environment)
  PERMISSION_DENIED and changes nothing; a context's token file works, and ``--token-file``
  overrides it.
- docs/ctl.md's "ctl over TLS and with tokens" commands run as written (only the documented
  paths and address replaced).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.ctl.connecting import TOKEN_ENV
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.exit_codes import ExitCode
from connect_grpc.kernel.domain import State, TargetState
from connect_grpc.testing.certs import Pki
from connect_grpc.testing.cluster import WorkerProcess
from tests.documents import CTL, Command, section_commands
from tests.integration.helpers import source_config
from tests.integration.test_ctl import CTL_TLS_SECTION, _documented
from tests.integration.test_readme_commands import run_in_one_shell
from tests.integration.tls_workers import ADMIN_TOKEN, VIEWER_TOKEN

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXECUTABLE = str(Path(sys.executable).parent / "connect-grpc")
DOCUMENTED_TLS_DIR = "/tmp/connect-tls"
DOCUMENTED_TOKENS_DIR = "/tmp/connect-tokens"
DOCUMENTED_ADDRESS = "localhost:8443"
#: Each call's deadline: a refused handshake must fail fast, not at a 30 s deadline.
REQUEST_TIMEOUT = "15"


@dataclass(frozen=True)
class Ctl:
    """Runs the executable with its own contexts directory and environment."""

    config_dir: Path

    def __call__(self, *args: str, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        environment = {**self.environment(), **(env or {})}
        return subprocess.run(
            [EXECUTABLE, "ctl", "--request-timeout", REQUEST_TIMEOUT, *args], env=environment,
            cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90,
            check=False,
        )

    def environment(self) -> dict[str, str]:
        environment = {**os.environ, CONFIG_DIR_ENV: str(self.config_dir)}
        for inherited in ("CONNECT_GRPC_TARGET", TOKEN_ENV):
            environment.pop(inherited, None)
        return environment


@pytest.fixture
def ctl(tmp_path: Path) -> Ctl:
    return Ctl(tmp_path / "ctl-config")


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ops.token (the admin's) and dashboard.token (the viewer's), as docs/ctl.md names them."""
    directory = tmp_path_factory.mktemp("tokens")
    (directory / "ops.token").write_text(ADMIN_TOKEN + "\n", encoding="ascii")
    (directory / "dashboard.token").write_text(VIEWER_TOKEN + "\n", encoding="ascii")
    return directory


@pytest.fixture
def stopped_connector(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[WorkerProcess, str]]:
    """A STOPPED connector, created by an admin on the worker the test parametrises."""
    worker: WorkerProcess = request.getfixturevalue(request.param)
    name = f"ctl-tls-{uuid.uuid4().hex[:8]}"
    with ConnectClient(worker.connection, timeout=60) as admin:  # the fixture's: an admin
        admin.create_connector(name, source_config(tmp_path / "events", tasks=1),
                               TargetState.STOPPED)
    yield worker, name
    with ConnectClient(worker.connection, timeout=60) as admin:
        admin.delete_connector(name)


def connector_state(worker: WorkerProcess, name: str) -> State:
    with ConnectClient(worker.connection, timeout=60) as client:
        return client.get_connector_status(name).connector.state


def failed_with(run: subprocess.CompletedProcess[str], code: ExitCode, grpc_code: str) -> bool:
    return run.returncode == code and run.stderr.startswith(f"Error: {grpc_code}: ")


# ---------------------------------------------------------------------------- mutual TLS


@pytest.mark.parametrize("stopped_connector", ["mtls_worker"], indirect=True)
def test_get_connectors_over_mtls_with_a_context(
    ctl: Ctl, pki: Pki, stopped_connector: tuple[WorkerProcess, str]
) -> None:
    worker, name = stopped_connector
    for context, identity in (("alice", pki.admin), ("dashboard", pki.viewer)):
        made = ctl("config", "set-context", context, "--target", worker.address,
                   "--cacert", str(pki.ca.certificate), "--cert", str(identity.certificate),
                   "--key", str(identity.key))
        assert made.returncode == 0, made.stderr

    listed = ctl("get", "connectors", "-o", "json")  # the current context: alice's
    assert listed.returncode == 0, listed.stderr
    assert name in [row["name"] for row in json.loads(listed.stdout)["connectors"]]

    refused = ctl("--context", "dashboard", "pause", name)
    assert failed_with(refused, ExitCode.DENIED, "PERMISSION_DENIED"), refused.stderr
    assert "has role viewer" in refused.stderr
    assert connector_state(worker, name) is State.STOPPED


def test_handshake_failures_exit_with_unavailable(
    ctl: Ctl, pki: Pki, mtls_worker: WorkerProcess
) -> None:
    address = mtls_worker.address
    alice = ["--cert", str(pki.admin.certificate), "--key", str(pki.admin.key)]
    attempts = {
        "an untrusted worker certificate": ["--cacert", str(pki.rogue_ca.certificate), *alice],
        "plaintext against TLS": [],
        "no client certificate": ["--cacert", str(pki.ca.certificate)],
        "a client certificate of another CA": [
            "--cacert", str(pki.ca.certificate), "--cert", str(pki.rogue.certificate),
            "--key", str(pki.rogue.key)],
    }
    for attempt, flags in attempts.items():
        run = ctl("--target", address, *flags, "get", "connectors")
        assert failed_with(run, ExitCode.UNAVAILABLE, "UNAVAILABLE"), (attempt, run.stderr)
    trusted = ctl("--target", address, "--cacert", str(pki.ca.certificate), *alice,
                  "get", "connectors")
    assert trusted.returncode == 0, trusted.stderr
    assert mtls_worker.returncode is None


# ---------------------------------------------------------------------------- tokens


@pytest.mark.parametrize("stopped_connector", ["token_worker"], indirect=True)
def test_tokens_from_files_the_environment_and_contexts(
    ctl: Ctl, pki: Pki, tokens: Path, stopped_connector: tuple[WorkerProcess, str]
) -> None:
    worker, name = stopped_connector
    tls = ["--target", worker.address, "--cacert", str(pki.ca.certificate)]

    anonymous = ctl(*tls, "get", "connectors")
    assert failed_with(anonymous, ExitCode.DENIED, "UNAUTHENTICATED"), anonymous.stderr

    viewer = ctl(*tls, "pause", name, env={TOKEN_ENV: VIEWER_TOKEN})
    assert failed_with(viewer, ExitCode.DENIED, "PERMISSION_DENIED"), viewer.stderr
    assert connector_state(worker, name) is State.STOPPED

    made = ctl("config", "set-context", "ops", "--target", worker.address,
               "--cacert", str(pki.ca.certificate), "--token-file", str(tokens / "ops.token"))
    assert made.returncode == 0, made.stderr
    assert ADMIN_TOKEN not in (ctl.config_dir / "contexts.json").read_text()
    listed = ctl("get", "connectors", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert name in [row["name"] for row in json.loads(listed.stdout)["connectors"]]

    overridden = ctl("pause", name, "--token-file", str(tokens / "dashboard.token"))
    assert failed_with(overridden, ExitCode.DENIED, "PERMISSION_DENIED"), overridden.stderr
    assert connector_state(worker, name) is State.STOPPED
    assert ctl("resume", name).returncode == 0  # the context's admin token
    assert connector_state(worker, name) is not State.STOPPED


def test_a_token_is_not_sent_to_a_plaintext_target(
    ctl: Ctl, tokens: Path, token_worker: WorkerProcess
) -> None:
    """Refused before any call (exit 2, not the UNAVAILABLE of a plaintext call to TLS)."""
    run = ctl("--target", token_worker.address, "--token-file", str(tokens / "ops.token"),
              "get", "connectors")
    assert run.returncode == ExitCode.USAGE
    assert "--token-file: a bearer token is sent over TLS only" in " ".join(run.stderr.split())


# ---------------------------------------------------------------------------- docs/ctl.md


def readme_blocks() -> list[list[Command]]:
    """The ```sh blocks of docs/ctl.md's "ctl over TLS and with tokens": the mutual-TLS one,
    then the tokens one."""
    found = section_commands(CTL, CTL_TLS_SECTION)
    blocks = sorted({c.block for c in found})
    return [[c for c in found if c.block == block] for block in blocks]


def localized(command: Command, made: Pki, tokens: Path, worker: WorkerProcess) -> Command:
    text = (command.text.replace(DOCUMENTED_TLS_DIR, str(made.ca.directory))
            .replace(DOCUMENTED_TOKENS_DIR, str(tokens))
            .replace(DOCUMENTED_ADDRESS, worker.address))
    return dataclasses.replace(command, text=text)


def test_readme_examples_run_as_written(
    pki: Pki, tokens: Path, mtls_worker: WorkerProcess,
    token_worker: WorkerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The documented files are the fixtures' (pki.ca.directory holds ca.pem, alice.pem,
    alice.key like /tmp/connect-tls); each block runs against its worker."""
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "ctl-config"))
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv("CONNECT_GRPC_TARGET", raising=False)
    mtls_block, tokens_block = readme_blocks()
    assert [len(mtls_block), len(tokens_block)] == [3, 3]
    venv_bin = Path(sys.executable).parent
    problems = []
    printed = []
    for block, worker in ((mtls_block, mtls_worker), (tokens_block, token_worker)):
        chosen = [localized(command, pki, tokens, worker) for command in block]
        outcomes = run_in_one_shell(chosen, "", [venv_bin], tmp_path / f"sh-{chosen[0].line}",
                                    120)
        printed += [outcome.output for outcome in outcomes]
        for outcome, documented in zip(outcomes, block, strict=True):
            code, errors = _documented(documented)
            output = " ".join(outcome.output.split())
            missing = [e for e in errors if " ".join(e.split()) not in output]
            if outcome.returncode != code or missing:
                problems.append(f"line {documented.line}: exit {outcome.returncode} "
                                f"(documented {code}), missing {missing}\n$ {outcome.command.text}"
                                f"\n{outcome.output[-2000:]}")
    assert not problems, "\n\n".join(problems)
    [secure] = [line.split() for line in printed[2].splitlines() if " secure " in line]
    assert secure[3:6] == ["mtls", str(pki.ca.certificate), f"{pki.ca.directory}/alice.pem"]
    assert ADMIN_TOKEN in (tokens / "ops.token").read_text()
    assert ADMIN_TOKEN not in "".join(printed)
