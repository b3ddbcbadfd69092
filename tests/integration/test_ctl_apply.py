"""``connect-grpc ctl apply`` of a desired state against a live standalone worker (real
process, real Spark, real Kafka, real gRPC): a directory of specs created, applied again
with nothing changed, a config change and a state change, a dry run that shows the diff and
changes nothing, a concurrent writer's change not overwritten, and a prune that deletes only
what an apply created; the worked example of docs/ctl.md ("Desired state from a
directory"), run as written, twice; and twenty specs on the 3-worker cluster through a
follower."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from connect_grpc.client import ConnectClient
from connect_grpc.client.convert import ConnectorListing
from connect_grpc.ctl.apply_specs import MARKER_KEY, MARKER_VALUE, load_spec
from connect_grpc.ctl.apply_state import CONFIG_CHANGED, Report, apply_specs
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.exit_codes import ExitCode
from connect_grpc.ctl.render import Output
from connect_grpc.testing.cluster import WorkerProcess
from tests.documents import CTL, section_commands
from tests.integration.helpers import source_config
from tests.integration.test_readme_commands import run_in_one_shell

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

EXECUTABLE = str(Path(sys.executable).parent / "connect-grpc")
#: docs/ctl.md's worked example.
APPLY_SECTION = "## Desired state from a directory"


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


Ctl = Callable[..., Run]


@pytest.fixture
def ctl(worker: WorkerProcess, tmp_path: Path) -> Ctl:
    env = {**os.environ, CONFIG_DIR_ENV: str(tmp_path / "ctl-config")}
    env.pop("CONNECT_GRPC_TARGET", None)

    def run(*args: str) -> Run:
        words = [EXECUTABLE, "ctl", "--target", worker.address, *args]
        result = subprocess.run(words, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=120, check=False)
        return Run(result.returncode, result.stdout, result.stderr)

    return run


def write_spec(folder: Path, name: str, document: dict[str, Any]) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, **document}), encoding="utf-8")
    return path


def listed(worker: WorkerProcess) -> dict[str, ConnectorListing]:
    with ConnectClient(worker.address) as client:
        return {entry.name: entry
                for entry in client.list_connectors(expand_status=True, expand_info=True)}


def test_apply_a_directory_idempotently_with_changes_a_dry_run_and_a_prune(
    ctl: Ctl, worker: WorkerProcess, tmp_path: Path, name: str, events: Path
) -> None:
    specs = tmp_path / "specs"
    first, second, by_hand = f"{name}-a", f"{name}-b", f"{name}-hand"
    write_spec(specs, first, {"state": "RUNNING", "config": source_config(events, tasks=1)})
    write_spec(specs, second, {"state": "PAUSED", "config": source_config(events, tasks=1)})
    plain = tmp_path / "hand.json"
    plain.write_text(f'{{"name": "{by_hand}", "connector.class": "InstrumentedSource", '
                     f'"tasks.max": "1", "test.events.file": "{events}"}}')
    assert ctl("apply", "-f", str(plain)).lines == [f"connector {by_hand} created (RUNNING)"]

    created = ctl("apply", "-f", str(specs))
    assert created.code == 0, created.err
    assert created.lines == [f"connector {first} created (RUNNING)",
                             f"connector {second} created (PAUSED)"]
    now = listed(worker)
    assert now[first].info is not None and now[first].info.config[MARKER_KEY] == MARKER_VALUE
    assert now[by_hand].info is not None and MARKER_KEY not in now[by_hand].info.config

    again = ctl("apply", "-f", str(specs))
    assert (again.code, again.lines) == (0, [f"connector {first} unchanged",
                                             f"connector {second} unchanged"]), again.err
    etags = {key: entry.info.etag for key, entry in listed(worker).items() if entry.info}
    assert etags == {key: entry.info.etag for key, entry in now.items() if entry.info}

    write_spec(specs, first, {"state": "RUNNING",
                              "config": source_config(events, tasks=2, **{"test.poll.ms": "5"})})
    write_spec(specs, second, {"state": "RUNNING", "config": source_config(events, tasks=1)})
    dry = ctl("apply", "-f", str(specs), "--dry-run")
    assert dry.code == 0, dry.err
    assert dry.lines == [
        f"connector {first} config changed (tasks.max, test.poll.ms) (dry run)",
        "  ~ tasks.max: 1 -> 2",
        "  + test.poll.ms: 5",
        f"connector {second} state changed (PAUSED -> RUNNING) (dry run)",
        "  state: PAUSED -> RUNNING",
    ]
    assert {key: entry.info.etag for key, entry in listed(worker).items() if entry.info} == etags

    applied = ctl("apply", "-f", str(specs))
    assert (applied.code, applied.lines) == (0, [
        f"connector {first} config changed (tasks.max, test.poll.ms)",
        f"connector {second} state changed (PAUSED -> RUNNING)"]), applied.err
    after = listed(worker)
    assert after[first].info is not None and after[first].info.config["tasks.max"] == "2"
    assert after[first].info.config[MARKER_KEY] == MARKER_VALUE  # kept by the change
    assert ctl("apply", "-f", str(specs)).lines == [f"connector {first} unchanged",
                                                    f"connector {second} unchanged"]

    (specs / f"{second}.yaml").unlink()
    dry_prune = ctl("apply", "-f", str(specs), "--prune", "--dry-run")
    assert dry_prune.lines == [f"connector {first} unchanged (dry run)",
                               f"connector {second} pruned (dry run)"], dry_prune.err
    assert second in listed(worker)
    pruned = ctl("apply", "-f", str(specs), "--prune")
    assert (pruned.code, pruned.lines) == (0, [f"connector {first} unchanged",
                                               f"connector {second} pruned"]), pruned.err
    left = listed(worker)
    assert second not in left and first in left and by_hand in left  # never one by hand
    assert ctl("delete", first, by_hand).code == 0


def test_a_concurrent_writer_is_not_overwritten_and_the_others_apply(
    worker: WorkerProcess, tmp_path: Path, name: str, events: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    specs = tmp_path / "specs"
    raced, other = f"{name}-raced", f"{name}-other"
    for connector in (raced, other):
        write_spec(specs, connector, {"state": "STOPPED", "config": source_config(events)})
    with ConnectClient(worker.address) as client:
        wanted = [load_spec(path) for path in sorted(specs.iterdir())]
        assert apply_specs(client, Output(), wanted, prune=False, dry_run=False).exit_code is (
            ExitCode.OK)
        for connector in (raced, other):
            write_spec(specs, connector, {"state": "STOPPED",
                                          "config": source_config(events, tasks=1)})
        changed = [load_spec(path) for path in sorted(specs.iterdir())]

        class ConcurrentWriter(ConnectClient):
            """Another writer patches ``raced`` right after apply read the connectors."""

            def list_connectors(self, *args: Any, **kwargs: Any) -> list[ConnectorListing]:
                found = super().list_connectors(*args, **kwargs)
                client.patch_connector_config(raced, {"test.poll.ms": "7"})
                return found

        capsys.readouterr()
        with ConcurrentWriter(worker.address) as racing:
            report = apply_specs(racing, Output(), changed, prune=False, dry_run=False,
                                 report=Report())
        captured = capsys.readouterr()
        assert report.exit_code is ExitCode.ABORTED
        assert report.results_of(other) == [CONFIG_CHANGED]
        assert captured.out.splitlines() == [f"connector {other} config changed (tasks.max)"]
        assert (f"Error: ABORTED (ETAG_MISMATCH): connector {raced} was changed by another "
                "writer since apply read it") in captured.err
        kept = client.get_connector(raced).config
        assert (kept["test.poll.ms"], kept["tasks.max"]) == ("7", "2")  # not overwritten
        assert client.get_connector(other).config["tasks.max"] == "1"
        for connector in (raced, other):
            client.delete_connector(connector)


def test_the_worked_example_of_the_docs_runs_as_written_twice(
    worker: WorkerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/ctl.md, "Desired state from a directory": each command's output is the one the
    page shows after it (``# `` lines), on a first run and on a second one (the example
    cleans up after itself)."""
    commands = section_commands(CTL, APPLY_SECTION)
    assert any("--prune" in command.text for command in commands)
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "ctl-config"))
    monkeypatch.setenv("CONNECT_GRPC_TARGET", worker.address)  # the page's default worker
    lines = CTL.read_text(encoding="utf-8").splitlines()
    venv_bin = Path(sys.executable).parent
    for attempt in ("first", "second"):
        outcomes = run_in_one_shell(commands, worker.address, [venv_bin],
                                    tmp_path / f"sh-{attempt}", 300)
        problems = []
        for outcome in outcomes:
            shown = _shown_output(lines, outcome.command.line + outcome.command.text.count("\n"))
            if outcome.returncode != 0 or (shown and outcome.output.splitlines() != shown):
                problems.append(f"{attempt} run, line {outcome.command.line}: exit "
                                f"{outcome.returncode}\n$ {outcome.command.text}\n"
                                f"{outcome.output}\ndocumented:\n" + "\n".join(shown))
        assert not problems, "\n\n".join(problems) + f"\n\nworker log:\n{worker.logs()[-3000:]}"


def _shown_output(lines: list[str], last: int) -> list[str]:
    """The ``# `` comment lines right after a command's last line (1-based): its output."""
    shown = []
    for line in lines[last:]:
        if not line.startswith("# "):
            break
        shown.append(line[2:])
    return shown


def test_twenty_specs_through_a_follower_of_the_cluster(
    cluster: list[WorkerProcess], tmp_path: Path, name: str, events: Path
) -> None:
    """On the 3-worker cluster, every write forwarded by a follower to the leader: 20 specs
    created, then 20 unchanged; an edit shown by --dry-run with nothing changed, then
    applied; two specs removed and pruned."""
    with ConnectClient(cluster[0].address) as client:
        leader_id = client.get_cluster_info().leader_id
    follower = next(w for w in cluster if f"worker-{w.port}" != leader_id)
    env = {**os.environ, CONFIG_DIR_ENV: str(tmp_path / "ctl-config")}
    env.pop("CONNECT_GRPC_TARGET", None)

    def ctl(*args: str) -> Run:
        words = [EXECUTABLE, "ctl", "--target", follower.address, *args]
        result = subprocess.run(words, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=180, check=False)
        return Run(result.returncode, result.stdout, result.stderr)

    specs = tmp_path / "specs"
    names = [f"{name}-{index:02d}" for index in range(20)]
    for connector in names:
        write_spec(specs, connector, {"state": "STOPPED",
                                      "config": source_config(events, tasks=1)})
    created = ctl("apply", "-f", str(specs))
    assert (created.code, created.lines) == (
        0, [f"connector {c} created (STOPPED)" for c in names]), created.err
    again = ctl("apply", "-f", str(specs))
    assert (again.code, again.lines) == (0, [f"connector {c} unchanged" for c in names]), (
        again.err)

    with ConnectClient(follower.address) as client:
        def etags() -> dict[str, str]:
            return {entry.name: entry.info.etag
                    for entry in client.list_connectors(expand_info=True)
                    if entry.info is not None and entry.name in names}

        before = etags()
        write_spec(specs, names[3], {"state": "STOPPED", "config": source_config(events, tasks=3)})
        dry = ctl("apply", "-f", str(specs), "--dry-run")
        assert dry.code == 0, dry.err
        assert dry.lines[3:5] == [f"connector {names[3]} config changed (tasks.max) (dry run)",
                                  "  ~ tasks.max: 1 -> 3"]
        assert etags() == before
        applied = ctl("apply", "-f", str(specs))
        assert applied.lines[3] == f"connector {names[3]} config changed (tasks.max)"
        assert applied.lines.count(f"connector {names[0]} unchanged") == 1

        for connector in names[-2:]:
            (specs / f"{connector}.yaml").unlink()
        pruned = ctl("apply", "-f", str(specs), "--prune")
        assert pruned.code == 0, pruned.err
        assert pruned.lines[-2:] == [f"connector {c} pruned" for c in names[-2:]]
        assert sorted(etags()) == names[:-2]
        assert ctl("delete", "-e", f"{name}-.*").code == 0
