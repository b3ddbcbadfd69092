"""connect-grpc ctl's command line without a worker: help, contexts, completion, usage and
file errors (each checked before any call is made). The commands against a live worker are
in tests/integration/test_ctl.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from connect_grpc.cli import main
from connect_grpc.ctl.cmd_change import config_patch
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.exit_codes import EXIT_CODE_TABLE
from connect_grpc.ctl.root import COMPLETE_VAR, ctl

#: A target nothing listens on; the commands below fail before they would call it.
NOWHERE = "127.0.0.1:9"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cfg"))
    monkeypatch.delenv("CONNECT_GRPC_TARGET", raising=False)
    return tmp_path / "cfg"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(ctl, list(args), prog_name="connect-grpc ctl")
    return result.exit_code, result.stdout, result.stderr


def test_help_lists_every_command_and_the_exit_codes(config: Path) -> None:
    code, out, _ = run("--help")
    assert code == 0
    for command in ("get", "describe", "apply", "patch", "pause", "resume", "stop", "delete",
                    "restart", "offsets", "watch", "plugins", "cluster", "loggers", "topics",
                    "config", "completion", "preview", "dlq"):
        assert f"  {command} " in out, command
    for exit_code, when in EXIT_CODE_TABLE:
        assert f"{int(exit_code):>4}  {when}" in out


def test_connect_grpc_hands_ctl_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ctl", "config", "--help"]) == 0
    assert "set-context" in capsys.readouterr().out
    assert main(["ctl", "no-such-command"]) == 2
    assert "No such command" in capsys.readouterr().err


def test_contexts_are_created_listed_switched_and_deleted(config: Path) -> None:
    assert run("config", "set-context", "local", "--target", "localhost:8083")[:2] == (
        0, "context local created (current)\n")
    assert run("config", "set-context", "prod", "--target", "prod:8083")[:2] == (
        0, "context prod created\n")
    code, out, _ = run("config", "get-contexts")
    assert (code, out.splitlines()) == (0, [
        "CURRENT  NAME   TARGET          TLS  TOKEN-FILE",
        "*        local  localhost:8083  -    -",
        "         prod   prod:8083       -    -"])
    assert run("config", "use-context", "prod")[:2] == (0, "switched to context prod\n")
    assert run("config", "current-context")[:2] == (0, "prod\n")
    code, out, _ = run("config", "get-contexts", "-o", "json")
    assert json.loads(out) == {"current-context": "prod", "contexts": [
        {"name": "local", "target": "localhost:8083", "current": False},
        {"name": "prod", "target": "prod:8083", "current": True},
    ]}
    assert run("config", "delete-context", "prod")[0] == 0
    code, _, err = run("config", "current-context")
    assert code == 3 and "no current context" in err
    assert json.loads((config / "contexts.json").read_text())["contexts"] == {
        "local": {"target": "localhost:8083"}}


def test_context_errors(config: Path) -> None:
    code, _, err = run("config", "use-context", "nope")
    assert code == 3 and "Error: NOT_FOUND: no context 'nope'" in err
    code, _, err = run("config", "set-context", "x", "--target", "no-port")
    assert code == 4 and "--target: expected HOST:PORT" in err
    config.mkdir()
    (config / "contexts.json").write_text("{")
    code, _, err = run("get", "connectors")
    assert code == 4 and "contexts.json: not valid JSON" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pause"], "name one or more connectors, or give -e REGEX"),
        (["delete", "-e", "("], "not a valid regular expression"),
        (["get", "connectors", "-o", "xml"], "'xml' is not one of"),
        (["restart", "c", "--task", "1", "--include-tasks"], "--task restarts one task"),
        (["restart", "c", "--timeout", "0"], "--timeout"),
        (["watch"], "Missing argument 'NAMES...'"),
        (["watch", "c", "--until", "SLEEPING"], "'SLEEPING' is not one of"),
        (["apply"], "Missing option '-f'"),
        (["apply", "-f", "/no/such/file.json"], "does not exist"),
        (["offsets", "alter", "c"], "Give exactly one of option '-f'"),
        (["offsets", "alter", "c", "--to-time", "1", "-f", "/dev/null"],
         "Give exactly one of option '-f'"),
        (["completion", "powershell"], "'powershell' is not one of"),
        (["patch", "c"], "give at least one --set KEY=VALUE or --unset KEY"),
        (["patch", "c", "--set", "tasks.max"], "'tasks.max' is not KEY=VALUE"),
        (["patch", "c", "--set", "=1"], "'=1' is not KEY=VALUE"),
        (["patch", "c", "--set", "a=1", "--unset", "a", "--unset", "b"], "both set and unset: a"),
    ],
)
def test_usage_errors_exit_2(config: Path, args: list[str], message: str) -> None:
    code, _, err = run("--target", NOWHERE, *args)
    assert code == 2
    assert message in err


def test_patch_options_make_the_patch_a_value_after_the_first_equals_sign_kept() -> None:
    assert config_patch(("a=1", "b=x=y", "c="), ("d",)) == {
        "a": "1", "b": "x=y", "c": "", "d": None
    }


def test_bad_target_is_invalid_argument_before_or_after_the_command(config: Path) -> None:
    for args in (["--target", "x", "plugins"], ["plugins", "--target", "x"]):
        code, _, err = run(*args)
        assert code == 4 and "Error: INVALID_ARGUMENT: --target: expected HOST:PORT" in err


def test_apply_reports_a_bad_file_naming_the_field_before_calling(
    config: Path, tmp_path: Path
) -> None:
    bad_state = tmp_path / "state.json"
    bad_state.write_text(json.dumps({"name": "c", "config": {"connector.class": "X"},
                                     "initial_state": "SLEEPING"}))
    no_name = tmp_path / "no-name.properties"
    no_name.write_text("connector.class=X\n")
    for path, field in ((bad_state, "initial_state"), (no_name, "name")):
        code, _, err = run("--target", NOWHERE, "apply", "-f", str(path), "--dry-run")
        assert code == 4, err
        assert f"Error: INVALID_ARGUMENT: {path}: {field}:" in err


def test_offsets_alter_reports_a_bad_file_before_calling(config: Path, tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"offsets": [{"partition": "task-0"}]}))
    code, _, err = run("--target", NOWHERE, "offsets", "alter", "c", "-f", str(path))
    assert code == 4
    assert f"{path}: offsets[0].partition: must be an object" in err


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o nosort -F _connect_grpc_completion connect-grpc"),
    ("zsh", "compdef _connect_grpc_completion connect-grpc"),
    ("fish", "complete --no-files --command connect-grpc"),
])
def test_completion_prints_a_script(config: Path, shell: str, marker: str) -> None:
    code, out, _ = run("completion", shell)
    assert code == 0
    assert marker in out and COMPLETE_VAR in out


def test_completion_requests_are_answered_by_connect_grpc(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the bash script does on TAB: runs ``connect-grpc`` with the words typed."""
    monkeypatch.setenv(COMPLETE_VAR, "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "connect-grpc ctl off")
    monkeypatch.setenv("COMP_CWORD", "2")
    assert main([]) == 0
    assert capsys.readouterr().out.split() == ["plain,offsets"]
    monkeypatch.setenv("COMP_WORDS", "connect-grpc ctl restart c --inc")
    monkeypatch.setenv("COMP_CWORD", "4")
    assert main([]) == 0
    assert capsys.readouterr().out.split() == ["plain,--include-tasks"]


def test_apply_takes_several_files_after_one_f_or_f_repeated(
    config: Path, tmp_path: Path
) -> None:
    """Both forms read every file (here each refused before any call, so each is named)."""
    paths = []
    for name in ("a", "b", "c"):
        path = tmp_path / f"{name}.properties"
        path.write_text("connector.class=X\n")  # no name: refused before calling
        paths.append(str(path))
    for args in (["-f", *paths], ["-f", paths[0], "-f", paths[1], "-f", paths[2]],
                 ["-f", paths[0], paths[1], "-f", paths[2]]):
        code, _, err = run("--target", NOWHERE, "apply", *args, "--dry-run")
        assert code == 4, err
        for path in paths:
            assert f"Error: INVALID_ARGUMENT: {path}: name:" in err, (args, err)
    code, _, err = run("--target", NOWHERE, "apply", paths[0])
    assert code == 2 and "Missing option '-f'" in err


def test_apply_help_says_which_formats_it_reads(config: Path) -> None:
    code, out, _ = run("apply", "--help")
    assert code == 0
    for word in ("JSON", "YAML", "properties", "-f a.json b.yaml", "repeated"):
        assert word in " ".join(out.split()), word


def test_dlq_help_names_the_topic_key_and_the_brokers(config: Path) -> None:
    code, out, _ = run("dlq", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "errors.deadletterqueue.topic.name" in text and "--bootstrap-server" in text
    assert "--max" in text
