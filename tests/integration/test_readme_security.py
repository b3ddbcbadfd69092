"""The TLS and token set-ups of docs/security.md work as written: the commands of its sections
"TLS and mutual TLS" and "Bearer tokens and roles" run with bash in document order
(openssl, ``connect-grpc auth``, the properties they write, grpcurl and the Python client),
each exiting 0 or failing with its documented error.

Only what names this machine is replaced: ``/tmp/connect-tls`` and ``/tmp/connect-tokens``
by temporary directories, the broker's ``127.0.0.1:9092`` by the session's broker and the
port ``8443`` by a free one. The ``connect-grpc standalone`` command of each section is run
as a :class:`WorkerProcess` with the properties file the section wrote (the test keeps the
process's handle to stop it); the commands after it run while it serves.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from connect_grpc.client.connection import ConnectionSettings, TlsOptions
from connect_grpc.config.worker import read_properties
from connect_grpc.kafka.ports import free_port
from connect_grpc.testing.cluster import WorkerProcess
from tests.documents import SECURITY, Command, section_commands
from tests.integration.test_readme_commands import (
    Outcome,
    assert_as_documented,
    grpcurl_dir,  # noqa: F401  # the module's fixture: the pinned grpcurl
    run_in_one_shell,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: docs/security.md's sections.
TLS_SECTION = "## TLS and mutual TLS"
TOKENS_SECTION = "## Bearer tokens and roles"
DOCUMENTED_TLS_DIR = "/tmp/connect-tls"
DOCUMENTED_TOKENS_DIR = "/tmp/connect-tokens"
DOCUMENTED_BROKER = "127.0.0.1:9092"
DOCUMENTED_PORT = "localhost:8443"


@dataclass(frozen=True)
class Section:
    """A section's commands, split around its worker command."""

    setup: list[Command]
    worker: Command
    calls: list[Command]


@dataclass(frozen=True)
class Machine:
    """What replaces the documented paths and ports."""

    tls_dir: Path
    tokens_dir: Path
    bootstrap: str
    port: int

    def localize(self, command: Command) -> Command:
        text = (command.text.replace(DOCUMENTED_TLS_DIR, str(self.tls_dir))
                .replace(DOCUMENTED_TOKENS_DIR, str(self.tokens_dir))
                .replace(DOCUMENTED_BROKER, self.bootstrap)
                .replace(DOCUMENTED_PORT, f"localhost:{self.port}"))
        return dataclasses.replace(command, text=text)


def section(heading: str, machine: Machine) -> Section:
    found = [machine.localize(c) for c in section_commands(SECURITY, heading)]
    [index] = [i for i, c in enumerate(found) if c.words[1:2] == ["standalone"]]
    return Section(found[:index], found[index], found[index + 1 :])


def assert_ran(outcomes: list[Outcome]) -> None:
    failed = [o.describe() for o in outcomes if o.problem() is not None]
    assert not failed, "\n\n".join(failed)


@pytest.fixture(scope="module")
def machine(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Machine:
    root = tmp_path_factory.mktemp("readme-security")
    return Machine(root / "connect-tls", root / "connect-tokens", kafka_bootstrap, free_port())


@pytest.fixture(scope="module")
def set_up(machine: Machine, tmp_path_factory: pytest.TempPathFactory) -> Machine:
    """Both sections' commands before their worker: certificates, tokens, properties."""
    work = tmp_path_factory.mktemp("readme-security-setup")
    for heading in (TLS_SECTION, TOKENS_SECTION):
        assert_ran(run_in_one_shell(section(heading, machine).setup, "", [], work / "s", 120))
    return machine


def documented_worker(
    command: Command, root: Path, port: int, connection: ConnectionSettings
) -> WorkerProcess:
    """The section's ``connect-grpc standalone <properties>``, as a test worker."""
    [properties_path] = shlex.split(command.text, comments=True)[2:]
    properties = read_properties(Path(properties_path))
    assert properties["listeners"] == f"grpcs://localhost:{port}"
    return WorkerProcess(root, properties["bootstrap.servers"], properties, port=port,
                         connection=connection)


@pytest.fixture
def tls_worker(set_up: Machine, tmp_path: Path) -> Iterator[tuple[WorkerProcess, Section]]:
    documented = section(TLS_SECTION, set_up)
    alice = TlsOptions(set_up.tls_dir / "ca.pem", set_up.tls_dir / "alice.pem",
                       set_up.tls_dir / "alice.key")
    worker = documented_worker(documented.worker, tmp_path / "worker", set_up.port,
                               ConnectionSettings("", tls=alice))
    with worker:
        yield worker, documented


def test_readme_mtls_set_up(
    tls_worker: tuple[WorkerProcess, Section], grpcurl_dir: Path, tmp_path: Path  # noqa: F811
) -> None:
    worker, documented = tls_worker
    assert [c.words[0] for c in documented.calls] == [
        "grpcurl", "grpcurl", "grpcurl", ".venv/bin/python"
    ]
    outcomes = run_in_one_shell(documented.calls, "", [grpcurl_dir], tmp_path, 120)
    assert_as_documented(outcomes, worker)
    assert "['tls-demo']" in outcomes[-1].output  # alice created it; the dashboard could not
    assert "Code: PermissionDenied" in outcomes[1].output


@pytest.fixture
def token_worker(set_up: Machine, tmp_path: Path) -> Iterator[tuple[WorkerProcess, Section]]:
    documented = section(TOKENS_SECTION, set_up)
    token = (set_up.tokens_dir / "ops.token").read_text(encoding="utf-8").strip()
    settings = ConnectionSettings("", tls=TlsOptions(set_up.tls_dir / "ca.pem"), token=token)
    worker = documented_worker(documented.worker, tmp_path / "worker", set_up.port, settings)
    with worker:
        yield worker, documented


def test_readme_token_set_up(
    token_worker: tuple[WorkerProcess, Section], grpcurl_dir: Path, tmp_path: Path  # noqa: F811
) -> None:
    worker, documented = token_worker
    assert [c.words[0] for c in documented.calls] == ["grpcurl"] * 3
    outcomes = run_in_one_shell(documented.calls, "", [grpcurl_dir], tmp_path, 120)
    assert_as_documented(outcomes, worker)
    assert '"class_name"' in outcomes[0].output  # ListPlugins answered the admin
