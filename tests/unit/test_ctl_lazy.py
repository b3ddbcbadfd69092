"""``connect-grpc`` imports only what the command run needs: ``ctl`` imports the module of the
command it runs and no other command's, ``ctl --help`` none, and a worker neither ctl nor
(standalone) the distributed herder. The registry of ``ctl``'s lazy commands is checked
against the commands themselves, so that a wrong module, name or summary fails here rather
than when a user runs the command.

The imports are checked in a fresh interpreter, since this test process has imported much more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from connect_grpc.ctl.root import COMMANDS, ctl

CTL = "connect_grpc.ctl"
#: The modules that define ctl's commands, and those only some commands use.
COMMAND_MODULES = sorted({lazy.module for lazy in COMMANDS.values()} | {
    f"{CTL}.apply_state", f"{CTL}.apply_specs", f"{CTL}.apply_diff",
})

#: Runs the entry point as ``connect-grpc ARGS`` would, then lists what got imported.
PROGRAM = """
import contextlib, io, json, sys
from connect_grpc.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported_by(*args: str) -> tuple[int, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=120,
        check=True,
    )
    report = json.loads(result.stdout)
    return report["code"], set(report["modules"])


def _under(modules: set[str], *packages: str) -> list[str]:
    return sorted(name for name in modules
                  if any(name == package or name.startswith(f"{package}.")
                         for package in packages))


def test_ctl_help_imports_no_command_module() -> None:
    code, modules = _imported_by("ctl", "--help")
    assert code == 0
    assert f"{CTL}.root" in modules  # the absences below are not those of a failed import
    assert _under(modules, *COMMAND_MODULES) == []


@pytest.mark.parametrize(("args", "module"), [
    (("ctl", "get", "--help"), f"{CTL}.cmd_read"),
    (("ctl", "config", "--help"), f"{CTL}.cmd_config"),
    (("ctl", "--target", "127.0.0.1:1", "loggers", "--help"), f"{CTL}.cmd_loggers"),
])
def test_a_ctl_command_imports_its_module_only(args: tuple[str, ...], module: str) -> None:
    code, modules = _imported_by(*args)
    assert code == 0
    assert module in modules
    assert _under(modules, *(other for other in COMMAND_MODULES if other != module)) == []


def test_the_top_level_help_imports_no_ctl_client() -> None:
    code, modules = _imported_by("--help")
    assert code == 0
    assert "connect_grpc.cli" in modules
    assert _under(modules, f"{CTL}.root", f"{CTL}.session", "connect_grpc.client", "grpc",
                  "click", "rich") == []


def test_a_standalone_worker_imports_neither_ctl_nor_the_distributed_herder(
    tmp_path: Path,
) -> None:
    worker = tmp_path / "worker.properties"  # no offsets file: refused before anything starts
    worker.write_text("bootstrap.servers=127.0.0.1:9\n")
    code, modules = _imported_by("standalone", str(worker))
    assert code == 2
    assert "connect_grpc.config.worker" in modules
    assert _under(modules, f"{CTL}.root", f"{CTL}.session", "connect_grpc.client", "click",
                  "connect_grpc.herder", "connect_grpc.app", "pyspark") == []


def test_the_standalone_process_does_not_import_the_distributed_herder() -> None:
    program = ("import sys, connect_grpc.app; "
               "print('connect_grpc.herder.distributed' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_lazy_command_is_what_the_registry_says(name: str) -> None:
    lazy = COMMANDS[name]
    command = lazy.load()
    assert isinstance(command, click.Command)
    assert command.name == name
    assert not command.hidden and not command.deprecated and command.short_help is None
    stand_in = click.Command(name, help=lazy.summary)
    # the listing of `ctl --help` is the same, whatever the terminal's width
    assert [stand_in.get_short_help_str(limit) for limit in range(0, 300)] == [
        command.get_short_help_str(limit) for limit in range(0, 300)
    ]
    assert command.get_short_help_str(10_000) == lazy.summary


def test_the_connection_options_follow_the_commands_that_take_them() -> None:
    for name, lazy in COMMANDS.items():
        command = ctl.get_command(click.Context(ctl), name)
        assert command is not None
        assert ctl.get_command(click.Context(ctl), name) is command
        for leaf in _leaves(command):
            options = [opt for param in leaf.params for opt in param.opts]
            # added once, however often the command is looked up
            assert len(options) == len(set(options)), (name, leaf.name)
            assert ("--target" in options) >= lazy.connection_options, (name, leaf.name)


def _leaves(command: click.Command) -> list[click.Command]:
    if isinstance(command, click.Group):
        return [leaf for sub in command.commands.values() for leaf in _leaves(sub)]
    return [command]


def test_the_help_lists_every_command_before_and_after_they_are_loaded() -> None:
    def help_text(program: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
            check=True, env={**os.environ, "COLUMNS": "80"},
        ).stdout

    fresh = help_text("from connect_grpc.cli import main; main(['ctl', '--help'])")
    loaded = help_text(
        "import click\n"
        "from connect_grpc.cli import main\n"
        "from connect_grpc.ctl.root import COMMANDS, ctl\n"
        "for name in COMMANDS:\n"
        "    ctl.get_command(click.Context(ctl), name)\n"
        "main(['ctl', '--help'])\n"
    )
    assert loaded == fresh
    listed = fresh.split("Commands:\n", 1)[1].split("\n\n", 1)[0].split("\n")
    assert [row.split()[0] for row in listed] == sorted([*COMMANDS, "completion"])


def test_an_unknown_command_is_matched_against_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", "ctl", "desribe"], capture_output=True,
        text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "No such command 'desribe'." in result.stderr
    if hasattr(click.exceptions, "NoSuchCommand"):  # click 8.4 on suggests close names
        assert "No such command 'desribe'. Did you mean 'describe'?" in result.stderr
