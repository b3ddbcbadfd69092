"""``connect-grpc ctl`` against a live standalone worker (real process, real Spark, real
Kafka, real gRPC): every subcommand through the real executable, as a user runs it, with
its table and JSON output, dry-run errors, bulk changes by regular expression, restarts
followed to RUNNING or FAILED, an offsets round trip, live watches, exit codes, contexts,
completion, and the examples of docs/ctl.md run as written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.root import COMPLETE_VAR
from connect_grpc.kafka.ports import free_port
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.testing.plugins import count, read_events
from tests.documents import CTL, Command, section_commands, section_lines
from tests.integration.helpers import INSTRUMENTED_SOURCE, source_config
from tests.integration.test_readme_commands import run_in_one_shell

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXECUTABLE = str(Path(sys.executable).parent / "connect-grpc")
LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


Ctl = Callable[..., Run]


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return tmp_path / "ctl-config"


@pytest.fixture
def env(config_dir: Path) -> dict[str, str]:
    environment = {**os.environ, CONFIG_DIR_ENV: str(config_dir)}
    environment.pop("CONNECT_GRPC_TARGET", None)
    return environment


@pytest.fixture
def ctl(worker: WorkerProcess, env: dict[str, str]) -> Ctl:
    """Runs ``connect-grpc ctl --target <worker> ARGS`` (``target=None``: no --target)."""

    def run(*args: str, target: str | None = worker.address, timeout: float = 90) -> Run:
        words = [EXECUTABLE, "ctl", *(["--target", target] if target else []), *args]
        result = subprocess.run(words, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=timeout, check=False)
        return Run(result.returncode, result.stdout, result.stderr)

    return run


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, Any], Path]:
    def write_file(file_name: str, document: Any) -> Path:
        path = tmp_path / file_name
        text = document if isinstance(document, str) else json.dumps(document)
        path.write_text(text, encoding="utf-8")
        return path

    return write_file


def connector_file(name: str, config: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "config": config, **extra}


def states(ctl: Ctl, name: str) -> tuple[str, list[str]]:
    [row] = ctl("get", "connectors", "-o", "json", "-e", name).json()["connectors"]
    return row["state"], [task["state"] for task in row["tasks"]]


def wait_for_states(ctl: Ctl, name: str, expected: tuple[str, list[str]]) -> None:
    try:
        wait_until(lambda: states(ctl, name) == expected, timeout=60, interval=0.5)
    except TimeoutError:
        raise AssertionError(f"{name}: expected {expected}, got {states(ctl, name)}") from None


def table_rows(run: Run) -> dict[str, list[str]]:
    """A plain table's rows by their first cell (cells do not contain spaces here)."""
    assert run.code == 0, run.err
    header, *rows = run.lines
    assert header.split()[0] in ("NAME", "CLASS", "CURRENT", "PARTITION", "TOPIC"), header
    return {row.split()[0]: row.split() for row in rows}


# ---------------------------------------------------------------------------- docs/ctl.md

#: docs/ctl.md: the page's own section (its example), the TLS one
#: (tests/integration/test_ctl_tls.py) and the desired-state one
#: (tests/integration/test_ctl_apply.py).
CTL_SECTION = "# Command line: `connect-grpc ctl`"
CTL_TLS_SECTION = "## ctl over TLS and with tokens"
CTL_APPLY_SECTION = "## Desired state from a directory"


def _readme_ctl_block() -> list[Command]:
    elsewhere = {*section_lines(CTL, CTL_TLS_SECTION), *section_lines(CTL, CTL_APPLY_SECTION)}
    found = [c for c in section_commands(CTL, CTL_SECTION) if c.line not in elsewhere]
    blocks = {c.block for c in found}
    assert len(blocks) == 1, "docs/ctl.md shows its example in one ```sh block"
    return found


def _documented(command: Command, document: Path = CTL) -> tuple[int, list[str]]:
    """The exit code (``# exits N`` after the command) and the ``# Error: …`` lines that
    follow it in ``document``."""
    lines = document.read_text(encoding="utf-8").splitlines()
    end = command.line + command.text.count("\n")  # 1-based line of its last line
    code = 0
    if "# exits " in lines[end - 1]:
        code = int(lines[end - 1].rsplit("# exits ", 1)[1].split()[0])
    errors = []
    for line in lines[end:]:
        if not line.startswith("# "):
            break
        errors.append(line[2:])
    return code, errors


def test_readme_examples_run_as_written(
    worker: WorkerProcess, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = _readme_ctl_block()
    assert any("apply -f config/file-source.json" in c.text for c in chosen)
    monkeypatch.setenv(CONFIG_DIR_ENV, env[CONFIG_DIR_ENV])
    venv_bin = Path(sys.executable).parent
    outcomes = run_in_one_shell(chosen, worker.address, [venv_bin], tmp_path / "sh", 240)
    problems = []
    for outcome in outcomes:
        code, errors = _documented(outcome.command)
        missing = [e for e in errors if " ".join(e.split()) not in " ".join(outcome.output.split())]
        if outcome.returncode != code or missing:
            problems.append(f"line {outcome.command.line}: exit {outcome.returncode} (documented "
                            f"{code}), missing {missing}\n$ {outcome.command.text}\n"
                            f"{outcome.output[-2000:]}")
    assert not problems, "\n\n".join(problems) + f"\n\nworker log:\n{worker.logs()[-3000:]}"

    by_text = {o.command.text: o.output for o in outcomes}

    def output_of(ending: str) -> str:
        [text] = [t for t in by_text if t.endswith(ending)]
        return by_text[text]

    assert output_of("apply -f config/file-source.json") == (
        "connector local-file-source created (RUNNING)\n")
    assert "apply would create it" in output_of("--dry-run")
    assert output_of("--set batch.size=500") == "connector local-file-source patched\n"
    assert "local-file-source task 0 RUNNING" in output_of("--include-tasks")
    assert json.loads(output_of("offsets get local-file-source -o json")) == {"offsets": [
        {"partition": {"filename": "/tmp/connect-local/input.txt"}, "offset": {"position": 0}}
    ]}
    assert "connector local-file-source resumed" in output_of("resume -e 'local-.*'")
    assert "Mode:        standalone" in output_of("ctl cluster")


# ---------------------------------------------------------------------------- reading


@pytest.fixture
def pair(ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path) -> Iterator[str]:
    """``<name>-ok`` (2 tasks RUNNING) and ``<name>-bad`` (task 1 FAILED at start, initial
    offsets); yields ``name``."""
    ok = write("ok.json", connector_file(f"{name}-ok", source_config(events)))
    bad = write("bad.json", connector_file(
        f"{name}-bad", source_config(events, **{"test.fail.task.start": "1"}),
        initial_offsets=[{"partition": {"task": 0}, "offset": {"seq": LONG_MAX}}],
    ))
    created = ctl("apply", "-f", str(ok), "-f", str(bad))
    assert created.code == 0, created.err
    assert created.lines[0] == f"connector {name}-ok created (RUNNING)"
    assert created.lines[1] == f"connector {name}-bad created (RUNNING)"
    wait_for_states(ctl, f"{name}-ok", ("RUNNING", ["RUNNING", "RUNNING"]))
    wait_for_states(ctl, f"{name}-bad", ("RUNNING", ["RUNNING", "FAILED"]))
    yield name
    ctl("delete", "-e", f"{name}-.*")


def test_get_connectors_as_table_wide_json_and_yaml(
    ctl: Ctl, pair: str, worker: WorkerProcess
) -> None:
    worker_id = f"worker-{worker.port}"
    rows = table_rows(ctl("get", "connectors"))
    assert rows[f"{pair}-ok"] == [f"{pair}-ok", "source", "RUNNING", "2/2", worker_id]
    assert rows[f"{pair}-bad"] == [f"{pair}-bad", "source", "RUNNING", "1/2", worker_id]
    assert ctl("get", "connectors").lines[0].split() == ["NAME", "TYPE", "STATE", "TASKS",
                                                         "WORKER"]

    wide = table_rows(ctl("get", "connectors", "-o", "wide", "-e", f"{pair}-.*"))
    assert sorted(wide) == [f"{pair}-bad", f"{pair}-ok"]
    assert wide[f"{pair}-bad"][5:-1] == [INSTRUMENTED_SOURCE, "0:RUNNING", "1:FAILED"]

    document = ctl("get", "connectors", "-o", "json", "-e", f"{pair}-.*").json()
    assert [c["name"] for c in document["connectors"]] == [f"{pair}-bad", f"{pair}-ok"]
    bad = document["connectors"][0]
    assert (bad["type"], bad["class"], bad["state"], bad["worker_id"]) == (
        "source", INSTRUMENTED_SOURCE, "RUNNING", worker_id)
    assert (bad["tasks_running"], bad["tasks_total"]) == (1, 2)
    assert [t["state"] for t in bad["tasks"]] == ["RUNNING", "FAILED"]
    assert "task 1 start failed on purpose" in bad["tasks"][1]["trace"]
    assert bad["config"]["test.fail.task.start"] == "1"
    assert wide[f"{pair}-bad"][-1] == bad["etag"] != document["connectors"][1]["etag"]
    as_yaml = ctl("get", "connectors", "-o", "yaml", "-e", f"{pair}-.*")
    assert yaml.safe_load(as_yaml.out) == document


def test_describe_connector_shows_config_status_traces_and_offsets(ctl: Ctl, pair: str) -> None:
    shown = ctl("describe", "connector", f"{pair}-bad")
    assert shown.code == 0, shown.err
    text = shown.out
    assert f"Name:       {pair}-bad" in text and "State:      RUNNING" in text
    assert "  test.fail.task.start" in text
    assert "Task 1 trace:" in text and "Traceback (most recent call last):" in text
    task_rows = {line.split()[0]: line.split() for line in shown.lines if line.startswith("  ")
                 and line.split()[0] in ("0", "1")}
    assert task_rows["0"][1] == "RUNNING" and task_rows["1"][1] == "FAILED"
    assert "InjectedFailureError: task 1 start failed on purpose" in " ".join(task_rows["1"])
    assert f'  {{"task":0}}  {{"seq":{LONG_MAX}}}' in shown.lines

    described = ctl("describe", "connector", f"{pair}-bad", "-o", "json").json()
    assert described["name"] == f"{pair}-bad" and described["type"] == "source"
    assert described["config"]["connector.class"] == INSTRUMENTED_SOURCE
    assert described["status"]["connector"]["state"] == "RUNNING"
    assert described["status"]["tasks"][1]["state"] == "FAILED"
    assert described["offsets"] == [{"partition": {"task": 0}, "offset": {"seq": LONG_MAX}}]


def test_plugins_and_cluster(ctl: Ctl, worker: WorkerProcess) -> None:
    plugins = table_rows(ctl("plugins"))
    assert "connect_grpc.connectors.file.FileStreamSourceConnector" in plugins
    listed = ctl("plugins", "-o", "json").json()["plugins"]
    source = next(p for p in listed if p["class"] == INSTRUMENTED_SOURCE)
    assert source["type"] == "source" and "InstrumentedSource" in source["aliases"]

    cluster = ctl("cluster", "-o", "yaml")
    assert cluster.code == 0, cluster.err
    info = yaml.safe_load(cluster.out)
    assert (info["mode"], info["worker_id"]) == ("standalone", f"worker-{worker.port}")
    assert [w["address"] for w in info["workers"]] == [worker.address]
    assert "Mode:        standalone" in ctl("cluster").lines


def test_describe_plugin_lists_a_plugins_config_keys_or_exits_3(ctl: Ctl) -> None:
    found = ctl("describe", "plugin", "InstrumentedSource", "-o", "json").json()
    assert (found["class"], found["type"]) == (INSTRUMENTED_SOURCE, "source")
    keys = [key["name"] for key in found["config"]]
    assert keys[0].startswith("test.") and "tasks.max" in keys and "topics" not in keys
    tasks_max = next(key for key in found["config"] if key["name"] == "tasks.max")
    assert (tasks_max["type"], tasks_max["importance"], tasks_max["required"]) == (
        "INT", "HIGH", False)
    table = ctl("describe", "plugin", "RegexRouter")
    assert table.code == 0, table.err
    assert "Type:       transformation" in table.lines
    assert table_rows_after(table, "KEY")["regex"][1:3] == ["STRING", "(required)"]
    missing = ctl("describe", "plugin", "RegexRoutr")
    assert missing.code == 3
    assert "Unknown plugin RegexRoutr. Did you mean RegexRouter?" in missing.err


def table_rows_after(run: Run, header: str) -> dict[str, list[str]]:
    """The rows of the table under the line starting with ``header``, by their first cell."""
    lines = run.lines
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return {row.split()[0]: row.split() for row in lines[start + 1:] if row.strip()}


# ---------------------------------------------------------------------------- apply


def test_apply_creates_with_initial_state_and_offsets_then_replaces_the_config(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path, tmp_path: Path
) -> None:
    offsets = [{"partition": {"task": 0}, "offset": {"seq": LONG_MAX}},
               {"partition": {"task": 1}, "offset": {"seq": 7}}]
    path = write("c.json", connector_file(name, source_config(events), initial_state="stopped",
                                          initial_offsets=offsets))
    created = ctl("apply", "-f", str(path))
    assert created.code == 0, created.err
    assert created.lines[0] == f"connector {name} created (STOPPED)"
    assert len(created.lines) == 2 and "offsets" in created.lines[1].lower()
    assert ctl("offsets", "get", name, "-o", "json").json() == {"offsets": offsets}
    wait_for_states(ctl, name, ("STOPPED", []))

    path = write("c.json", connector_file(name, source_config(events, tasks=1),
                                          initial_state="STOPPED", initial_offsets=[]))
    updated = ctl("apply", "-f", str(path))
    assert updated.code == 0, updated.err
    assert updated.lines == [f"connector {name} configured"]
    assert "initial_state and initial_offsets apply only when a connector is created" in (
        updated.err)
    assert ctl("describe", "connector", name, "-o", "json").json()["config"]["tasks.max"] == "1"
    assert ctl("offsets", "get", name, "-o", "json").json() == {"offsets": offsets}

    properties = write("p.properties", f"name={name}-p\nconnector.class=InstrumentedSource\n"
                                       f"tasks.max=1\ntest.events.file={events}\n")
    assert ctl("apply", "-f", str(properties)).lines == [f"connector {name}-p created (RUNNING)"]
    wait_for_states(ctl, f"{name}-p", ("RUNNING", ["RUNNING"]))
    assert ctl("delete", name, f"{name}-p").code == 0


def test_apply_dry_run_shows_every_error_and_changes_nothing(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    bad = write("bad.json", connector_file(name, {
        "connector.class": "SequenceSource", "tasks.max": "two", "sequence.rate": "fast"}))
    checked = ctl("apply", "-f", str(bad), "--dry-run")
    assert checked.code == 4, checked.err
    errors = checked.err.splitlines()
    assert errors[0] == (f"Error: INVALID_ARGUMENT: {bad}: connector {name} has 3 invalid "
                         "config values")
    assert sorted(line.split(":")[0].strip() for line in errors[1:]) == [
        "config.sequence.rate", "config.tasks.max", "config.topic"]
    assert ctl("describe", "connector", name).code == 3

    not_dry = ctl("apply", "-f", str(bad))
    assert not_dry.code == 4
    assert "Error: INVALID_ARGUMENT" in not_dry.err and "config.tasks.max" in not_dry.err
    # each error once (the worker's message lists them too, as Kafka Connect's does)
    assert not_dry.err.count("Invalid value two for configuration tasks.max") == 1, not_dry.err

    # several files after one -f, as README.md writes `apply -f FILE…`
    other = write("other.json", connector_file(f"{name}-other", source_config(events)))
    both = ctl("apply", "-f", str(bad), str(other))
    assert both.code == 4 and f"connector {name}-other created" in both.out, both.err
    assert ctl("delete", f"{name}-other").code == 0

    good = write("good.json", connector_file(name, source_config(events)))
    assert ctl("apply", "-f", str(good), "--dry-run").lines == [
        f"connector {name} is valid: apply would create it (dry run)"]
    assert ctl("describe", "connector", name).code == 3
    assert ctl("apply", "-f", str(good)).code == 0
    assert ctl("apply", "-f", str(good), "--dry-run").lines == [
        f"connector {name} is valid: apply would update it (dry run)"]
    assert ctl("delete", name).code == 0


def test_patch_sets_and_unsets_keys_and_an_invalid_patch_exits_4_changing_nothing(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    path = write("c.json", connector_file(name, source_config(events, **{"test.poll.ms": "5"})))
    assert ctl("apply", "-f", str(path)).code == 0
    patched = ctl("patch", name, "--set", "tasks.max=1", "--unset", "test.poll.ms")
    assert patched.lines == [f"connector {name} patched"], patched.err
    config = ctl("describe", "connector", name, "-o", "json").json()["config"]
    assert config == {**source_config(events, tasks=1), "name": name}

    refused = ctl("patch", name, "--set", "tasks.max=none")
    assert refused.code == 4
    assert "Error: INVALID_ARGUMENT" in refused.err and "config.tasks.max" in refused.err
    assert ctl("describe", "connector", name, "-o", "json").json()["config"] == config
    assert ctl("patch", f"{name}-missing", "--set", "tasks.max=1").code == 3
    assert ctl("delete", name).code == 0


# ---------------------------------------------------------------------------- bulk


def test_pause_resume_stop_delete_by_name_and_regex(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    files = [write(f"{suffix}.json", connector_file(f"{name}-{suffix}",
                                                    source_config(events, tasks=1)))
             for suffix in ("a1", "a2", "b")]
    assert ctl("apply", *(arg for f in files for arg in ("-f", str(f)))).code == 0
    a_names = f"{name}-a.*"

    paused = ctl("pause", "-e", a_names)
    assert paused.lines == [f"connector {name}-a1 paused", f"connector {name}-a2 paused"]
    watched = ctl("watch", f"{name}-a1", f"{name}-a2", "--until", "PAUSED", "--timeout", "60")
    assert watched.code == 0, watched.err
    wait_for_states(ctl, f"{name}-b", ("RUNNING", ["RUNNING"]))

    stopped = ctl("stop", f"{name}-b", "-e", a_names)
    assert stopped.lines == [f"connector {name}-{s} stopped" for s in ("b", "a1", "a2")]
    for suffix in ("a1", "a2", "b"):
        wait_for_states(ctl, f"{name}-{suffix}", ("STOPPED", []))

    partial = ctl("resume", f"{name}-missing", f"{name}-a1")
    assert partial.code == 3
    assert partial.lines == [f"connector {name}-a1 resumed"]
    assert f"Error: NOT_FOUND: Connector {name}-missing not found" in partial.err
    wait_for_states(ctl, f"{name}-a1", ("RUNNING", ["RUNNING"]))

    deleted = ctl("delete", "-e", f"{name}-.*")
    assert deleted.lines == [f"connector {name}-{s} deleted" for s in ("a1", "a2", "b")]
    assert ctl("get", "connectors", "-o", "json", "-e", f"{name}-.*").json() == {
        "connectors": []}
    nothing = ctl("pause", "-e", f"{name}-.*")
    assert nothing.code == 3
    assert "no connector name matches the regular expression" in nothing.err


# ---------------------------------------------------------------------------- restart


def _starts(events: Path, name: str) -> tuple[int, list[int]]:
    seen = read_events(events)
    return (count(seen, "connector_start", connector=name),
            [count(seen, "task_start", task=t, connector=name) for t in (0, 1)])


def test_restart_follows_every_instance_to_running(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path, worker: WorkerProcess
) -> None:
    assert ctl("apply", "-f", str(write("c.json", connector_file(name, source_config(events))))
               ).code == 0
    assert ctl("watch", name, "--until", "RUNNING", "--timeout", "60").code == 0
    assert _starts(events, name) == (1, [1, 1])

    restarted = ctl("restart", name, "--include-tasks")
    assert restarted.code == 0, restarted.err
    assert restarted.lines[0] == f"restarting {name}: connector, task 0, task 1"
    last: dict[str, str] = {}  # each instance's last transition (they arrive as they happen)
    for line in restarted.lines[1:]:
        words = line.split()
        assert words[0] == name and words[-1] == f"worker-{worker.port}", line
        last[" ".join(words[1:-2])] = words[-2]
    assert last == {"connector": "RUNNING", "task 0": "RUNNING", "task 1": "RUNNING"}
    wait_until(lambda: _starts(events, name) == (2, [2, 2]), timeout=30)

    plain = ctl("restart", name)
    assert plain.code == 0, plain.err
    assert plain.lines[0] == f"restarting {name}: connector"
    assert plain.lines[1].startswith(f"{name} connector RUNNING")
    one_task = ctl("restart", name, "--task", "1")
    assert one_task.code == 0, one_task.err
    assert one_task.lines[1].startswith(f"{name} task 1 RUNNING")
    wait_until(lambda: _starts(events, name) == (3, [2, 3]), timeout=30)
    assert ctl("delete", name).code == 0


def test_restart_only_failed_follows_the_failed_task_and_exits_9(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    config = source_config(events, **{"test.fail.task.start": "1"})
    assert ctl("apply", "-f", str(write("c.json", connector_file(name, config)))).code == 0
    wait_for_states(ctl, name, ("RUNNING", ["RUNNING", "FAILED"]))

    restarted = ctl("restart", name, "--include-tasks", "--only-failed")
    assert restarted.code == 9, restarted.err
    assert restarted.lines[0] == f"restarting {name}: task 1"
    assert restarted.lines[-1].startswith(f"{name} task 1 FAILED worker-")
    assert restarted.lines[-1].endswith("InjectedFailureError: task 1 start failed on purpose")
    assert not any(" task 0 " in line or " connector " in line for line in restarted.lines[1:])
    assert f"Error: {name}: task 1 ended FAILED" in restarted.err
    assert _starts(events, name) == (1, [1, 2])

    nothing = ctl("restart", name, "--only-failed")
    assert (nothing.code, nothing.lines) == (
        0, [f"nothing to restart: no instance of {name} is FAILED"])
    assert ctl("delete", name).code == 0


# ---------------------------------------------------------------------------- offsets


def test_offsets_round_trip_through_get_alter_and_reset(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path, tmp_path: Path,
    env: dict[str, str], worker: WorkerProcess,
) -> None:
    config = source_config(events, tasks=1, **{"test.source.records": "5",
                                               "topic": f"ctl-{name}"})
    assert ctl("apply", "-f", str(write("c.json", connector_file(name, config)))).code == 0
    committed = {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 4}}]}
    wait_until(lambda: ctl("offsets", "get", name, "-o", "json").json() == committed,
               timeout=90, interval=0.5)
    assert table_rows(ctl("offsets", "get", name))['{"task":0}'] == ['{"task":0}', '{"seq":4}']

    running = ctl("offsets", "reset", name)
    assert running.code == 5
    assert running.err.startswith("Error: FAILED_PRECONDITION: ")
    assert f"STATE {name}: " in running.err

    assert ctl("stop", name).code == 0
    saved = tmp_path / "offsets.json"
    shell = f"{shlex.quote(EXECUTABLE)} ctl --target {worker.address} offsets get {name} -o json"
    subprocess.run(f"{shell} > {shlex.quote(str(saved))}", shell=True, env=env, check=True,
                   timeout=60)
    document = json.loads(saved.read_text())
    assert document == committed
    document["offsets"][0]["offset"]["seq"] = LONG_MAX
    document["offsets"].append({"partition": {"task": 9}, "offset": {"seq": 1, "note": "x"}})
    saved.write_text(json.dumps(document))
    altered = ctl("offsets", "alter", name, "-f", str(saved))
    assert altered.code == 0, altered.err
    assert "altered" in altered.out
    back = ctl("offsets", "get", name, "-o", "json").json()["offsets"]
    assert sorted(back, key=json.dumps) == sorted(document["offsets"], key=json.dumps)

    reset = ctl("offsets", "reset", name)
    assert reset.code == 0 and "reset" in reset.out
    assert ctl("offsets", "get", name, "-o", "json").json() == {"offsets": []}
    assert ctl("delete", name).code == 0


def test_if_match_makes_writes_conditional_and_a_stale_etag_exits_10(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    path = write("c.json", connector_file(name, source_config(events, tasks=1),
                                          initial_state="STOPPED"))
    assert ctl("apply", "-f", str(path)).code == 0
    etag = ctl("describe", "connector", name, "-o", "json").json()["etag"]
    assert table_rows(ctl("get", "connectors", "-o", "wide", "-e", name))[name][-1] == etag

    patched = ctl("patch", name, "--set", "test.poll.ms=7", "--if-match", etag)
    current = ctl("describe", "connector", name, "-o", "json").json()["etag"]
    assert patched.lines == [f"connector {name} patched (etag {current})"], patched.err
    assert current != etag
    stale = ctl("pause", name, "--if-match", etag)
    assert stale.code == 10
    assert stale.err.startswith("Error: ABORTED (ETAG_MISMATCH): etag: "), stale.err
    assert f"  current etag: {current}" in stale.err.splitlines()
    assert ctl("describe", "connector", name, "-o", "json").json()["status"]["connector"][
        "state"] == "STOPPED"

    offsets = write("o.json", {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 3}}]})
    altered = ctl("offsets", "alter", name, "-f", str(offsets), "--if-match", current)
    assert altered.code == 0, altered.err
    after_alter = ctl("describe", "connector", name, "-o", "json").json()["etag"]
    assert altered.out.rstrip().endswith(f"(etag {after_alter})") and after_alter != current
    assert ctl("offsets", "reset", name, "--if-match", current).code == 10
    assert ctl("delete", name, "--if-match", current).code == 10
    assert ctl("describe", "connector", name, "-o", "json").json()["etag"] == after_alter
    assert ctl("pause", name, f"{name}-2", "--if-match", after_alter).code == 2
    assert ctl("delete", name, "--if-match", after_alter).code == 0


# ---------------------------------------------------------------------------- topics


def test_topics_get_shows_the_tracked_topic_and_reset_forgets_it(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    topic = f"ctl-{name}"
    config = source_config(events, tasks=1, **{"test.source.records": "3", "topic": topic})
    assert ctl("apply", "-f", str(write("c.json", connector_file(name, config)))).code == 0
    tracked = {name: {"topics": [topic]}}
    wait_until(lambda: ctl("topics", "get", name, "-o", "json").json() == tracked,
               timeout=90, interval=0.5)
    assert table_rows(ctl("topics", "get", name)) == {topic: [topic]}
    every_record_sent = {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 2}}]}
    wait_until(lambda: ctl("offsets", "get", name, "-o", "json").json() == every_record_sent,
               timeout=90, interval=0.5)

    reset = ctl("topics", "reset", name)  # running: nothing more to send, so it stays empty
    assert (reset.code, reset.lines) == (0, [f"topics of {name} reset"])
    assert ctl("topics", "get", name, "-o", "json").json() == {name: {"topics": []}}
    assert ctl("delete", name).code == 0


# ---------------------------------------------------------------------------- watch


def test_watch_follows_the_stream_live_until_the_state(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path, worker: WorkerProcess,
    env: dict[str, str],
) -> None:
    path = write("c.json", connector_file(name, source_config(events), initial_state="PAUSED"))
    assert ctl("apply", "-f", str(path)).code == 0
    wait_for_states(ctl, name, ("PAUSED", []))
    watch = subprocess.Popen(
        [EXECUTABLE, "ctl", "--target", worker.address, "watch", name, "--until", "RUNNING",
         "--timeout", "90"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # the status now: PAUSED, no tasks yet
        assert first == f"{name} connector PAUSED worker-{worker.port}\n"
        assert ctl("resume", name).code == 0
        out, err = watch.communicate(timeout=90)
    finally:
        watch.kill()
    assert watch.returncode == 0, err
    assert {f"{name} {instance} RUNNING worker-{worker.port}"
            for instance in ("connector", "task 0", "task 1")} <= set(out.splitlines())

    bounded = ctl("watch", name, "--timeout", "1")
    assert bounded.code == 0 and len(bounded.lines) == 3  # the connector and its two tasks
    not_reached = ctl("watch", name, "--until", "PAUSED", "--timeout", "1")
    assert not_reached.code == 7
    assert "Error: DEADLINE_EXCEEDED: timed out after 1 s" in not_reached.err

    deleting = subprocess.Popen(
        [EXECUTABLE, "ctl", "--target", worker.address, "watch", name, "--timeout", "90"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert deleting.stdout is not None
        assert deleting.stdout.readline().startswith(f"{name} connector RUNNING")
        assert ctl("delete", name).code == 0
        out, err = deleting.communicate(timeout=60)
    finally:
        deleting.kill()
    assert deleting.returncode == 0, err
    assert out.splitlines()[-3:] == [f"{name} connector gone", f"{name} task 0 gone",
                                     f"{name} task 1 gone"]


def test_watch_until_running_ends_with_9_when_a_task_fails(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path
) -> None:
    config = source_config(events, **{"test.fail.task.start": "0"})
    assert ctl("apply", "-f", str(write("c.json", connector_file(name, config)))).code == 0
    failed = ctl("watch", name, "--until", "RUNNING", "--timeout", "60")
    assert failed.code == 9, failed.err
    assert f"Error: {name} task 0 FAILED before every connector was RUNNING" in failed.err
    assert ctl("delete", name).code == 0


# ---------------------------------------------------------------------------- errors, contexts


def test_exit_codes_follow_the_grpc_code(ctl: Ctl, name: str) -> None:
    for args in (["describe", "connector", name], ["offsets", "get", name],
                 ["restart", name, "--include-tasks"], ["watch", name], ["delete", name]):
        missing = ctl(*args)
        assert missing.code == 3, args
        assert missing.err == f"Error: NOT_FOUND: Connector {name} not found\n", args
    blank = ctl("describe", "connector", " ")
    assert blank.code == 4
    assert blank.err.startswith("Error: INVALID_ARGUMENT: ") and "name" in blank.err

    closed = ctl("get", "connectors", target=f"127.0.0.1:{free_port()}")
    assert closed.code == 7
    assert closed.err.startswith("Error: UNAVAILABLE: ")


def test_contexts_choose_the_worker(ctl: Ctl, worker: WorkerProcess, env: dict[str, str]) -> None:
    closed = f"127.0.0.1:{free_port()}"
    assert ctl("config", "set-context", "live", "--target", worker.address, target=None).code == 0
    assert ctl("config", "set-context", "dead", "--target", closed, target=None).code == 0
    assert ctl("cluster", "-o", "json", target=None).json()["workers"][0]["address"] == (
        worker.address)
    assert ctl("plugins", "--context", "dead", target=None).code == 7
    assert ctl("config", "use-context", "dead", target=None).code == 0
    assert ctl("plugins", target=None).code == 7
    assert ctl("plugins", target=worker.address).code == 0  # --target wins
    assert ctl("plugins", "--context", "nope", target=None).code == 3


def test_shell_completion_offers_the_workers_connectors(
    ctl: Ctl, write: Callable[[str, Any], Path], name: str, events: Path, worker: WorkerProcess,
    env: dict[str, str],
) -> None:
    script = ctl("completion", "bash", target=None)
    assert script.code == 0 and "_CONNECT_GRPC_COMPLETE=bash_complete" in script.out
    assert ctl("apply", "-f", str(write("c.json", connector_file(name, source_config(events))))
               ).code == 0
    typed = f"connect-grpc ctl --target {worker.address} describe connector {name[:-3]}"
    result = subprocess.run(
        [EXECUTABLE], env={**env, COMPLETE_VAR: "bash_complete", "COMP_WORDS": typed,
                           "COMP_CWORD": str(len(typed.split()) - 1)},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"plain,{name}" in result.stdout.split()
    assert ctl("delete", name).code == 0

