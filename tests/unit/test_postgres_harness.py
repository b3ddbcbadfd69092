"""The PostgreSQL test harness's pure parts (connect_grpc.testing.postgres): where PostgreSQL's
programs are found, the account the server runs as, the command lines, psql's output, the
connection settings, and the errors a machine without PostgreSQL gets. No server runs here:
tests/integration/test_postgres_harness.py starts real ones."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from connect_grpc.testing.postgres import (
    PostgresBinaries,
    PostgresError,
    PostgresNotInstalledError,
    PostgresServer,
    commands,
    find_binaries,
    server,
)
from connect_grpc.testing.postgres import __main__ as cli

FAKE = PostgresBinaries(Path("/pg/bin/initdb"), Path("/pg/bin/pg_ctl"), Path("/pg/bin/psql"))


def _programs(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        program = directory / name
        program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        program.chmod(0o755)
    return directory


# ---- where the programs are ---------------------------------------------------------------


def test_programs_on_the_search_path_are_used(tmp_path: Path) -> None:
    bin_dir = _programs(tmp_path / "bin", "initdb", "pg_ctl", "psql")
    found = find_binaries(str(bin_dir), debian_root=tmp_path / "none")
    assert found == PostgresBinaries(bin_dir / "initdb", bin_dir / "pg_ctl", bin_dir / "psql")
    assert found.bin_dir == bin_dir


def test_a_linked_initdb_leads_to_the_directory_it_points_into(tmp_path: Path) -> None:
    # Debian's layout with a link on PATH: /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin
    real = _programs(tmp_path / "lib" / "15" / "bin", "initdb", "pg_ctl", "psql")
    on_path = tmp_path / "local-bin"
    on_path.mkdir()
    (on_path / "initdb").symlink_to(real / "initdb")
    found = find_binaries(str(on_path), debian_root=tmp_path / "none")
    assert found.pg_ctl == real / "pg_ctl"
    assert found.psql == real / "psql"


def test_debians_directories_are_searched_newest_major_first(tmp_path: Path) -> None:
    root = tmp_path / "postgresql"
    for major in ("9", "15", "10"):
        _programs(root / major / "bin", "initdb", "pg_ctl", "psql")
    found = find_binaries("", debian_root=root)
    assert found.bin_dir == root / "15" / "bin"  # numerically newest, not "9"


def test_an_incomplete_directory_on_path_gives_way_to_a_complete_one(tmp_path: Path) -> None:
    half = _programs(tmp_path / "half", "initdb")  # no pg_ctl beside it
    root = tmp_path / "postgresql"
    _programs(root / "15" / "bin", "initdb", "pg_ctl", "psql")
    found = find_binaries(str(half), debian_root=root)
    assert found.bin_dir == root / "15" / "bin"


def test_psql_from_the_search_path_when_not_beside_the_server_programs(
    tmp_path: Path,
) -> None:
    server_dir = _programs(tmp_path / "server", "initdb", "pg_ctl")
    client_dir = _programs(tmp_path / "client", "psql")
    found = find_binaries(f"{server_dir}{os.pathsep}{client_dir}", debian_root=tmp_path)
    assert found.psql == client_dir / "psql"
    assert found.initdb == server_dir / "initdb"


def test_no_postgresql_is_an_error_naming_what_is_missing_and_where(tmp_path: Path) -> None:
    root = tmp_path / "postgresql"
    with pytest.raises(PostgresNotInstalledError) as missing:
        find_binaries(str(tmp_path / "empty"), debian_root=root)
    message = str(missing.value)
    assert "initdb and pg_ctl" in message
    assert f"on PATH nor in {root}/*/bin" in message
    assert "apt-get install postgresql" in message


def test_server_programs_without_psql_is_an_error_naming_psql(tmp_path: Path) -> None:
    server_dir = _programs(tmp_path / "server", "initdb", "pg_ctl")
    with pytest.raises(PostgresNotInstalledError, match=r"^psql \(PostgreSQL's client\)"):
        find_binaries(str(server_dir), debian_root=tmp_path)


def test_a_server_without_postgresql_fails_to_start_with_that_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(commands, "DEBIAN_ROOT", tmp_path / "postgresql")
    before = set(Path(server.tempfile.gettempdir()).glob(server.TEMP_PREFIX + "*"))
    postgres = PostgresServer()
    with pytest.raises(PostgresNotInstalledError, match="initdb and pg_ctl"):
        postgres.start()
    assert set(Path(server.tempfile.gettempdir()).glob(server.TEMP_PREFIX + "*")) == before
    assert not postgres.is_running()
    postgres.stop()  # nothing started: nothing to do, no error


# ---- the account the server runs as ------------------------------------------------------


def test_a_non_root_user_runs_the_server_itself() -> None:
    assert commands.server_account(euid=1000) is None
    assert commands.as_account(["initdb"], None) == ["initdb"]


def test_root_runs_it_as_the_postgres_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands.shutil, "which", lambda name, path=None: f"/usr/sbin/{name}")
    assert commands.server_account(euid=0, lookup=lambda name: object()) == "postgres"
    assert commands.as_account(["pg_ctl", "status"], "postgres") == [
        "runuser", "-u", "postgres", "--", "pg_ctl", "status"]


def test_root_without_a_postgres_account_is_told_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_account(name: str) -> object:
        raise KeyError(name)

    with pytest.raises(PostgresError, match="refuses to run as root and there is no `postgres`"):
        commands.server_account(euid=0, lookup=no_account)
    monkeypatch.setattr(commands.shutil, "which", lambda name, path=None: None)
    with pytest.raises(PostgresError, match="`runuser`"):
        commands.server_account(euid=0, lookup=lambda name: object())


# ---- command lines ------------------------------------------------------------------------


def test_server_settings_are_loopback_private_socket_and_logical_wal() -> None:
    settings = commands.server_settings(5433, Path("/tmp/s"), 8, {"fsync": "on", "a": "b"})
    assert settings["listen_addresses"] == "127.0.0.1"
    assert settings["port"] == "5433"
    assert settings["unix_socket_directories"] == "/tmp/s"
    assert settings["wal_level"] == "logical"
    assert settings["max_replication_slots"] == settings["max_wal_senders"] == "8"
    assert settings["fsync"] == "on"  # the caller's settings win
    assert settings["a"] == "b"
    assert commands.server_settings(1, Path("/s"), 1)["fsync"] == "off"
    with pytest.raises(ValueError, match="replication_slots"):
        commands.server_settings(5433, Path("/tmp/s"), 0)


def test_initdb_trusts_everyone_or_asks_tcp_clients_for_the_password() -> None:
    trusted = commands.initdb_command(FAKE, Path("/d/data"), "postgres", None)
    assert trusted == ["/pg/bin/initdb", "-D", "/d/data", "-U", "postgres", "--auth=trust",
                       "-E", "UTF8", "--locale=C", "--no-sync"]
    with_password = commands.initdb_command(FAKE, Path("/d/data"), "admin", "postgres",
                                            Path("/d/.pwfile"))
    assert with_password[:4] == ["runuser", "-u", "postgres", "--"]
    assert {"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=/d/.pwfile"} <= set(
        with_password)
    assert "--auth=trust" not in with_password


def test_start_command_hands_pg_ctl_each_setting_quoted() -> None:
    settings = commands.server_settings(5433, Path("/tmp/a dir/socket"), 4)
    command = commands.start_command(FAKE, Path("/d/data"), Path("/d/server.log"), settings,
                                     None, 59.6)
    options = command[command.index("-o") + 1]
    assert command[-1] == "start"
    assert command[command.index("-t") + 1] == "60"
    assert "-w" in command
    assert command[command.index("-l") + 1] == "/d/server.log"
    # pg_ctl gives the options to a shell: split as a shell would, they are the settings.
    words = shlex.split(options)
    assert words[::2] == ["-c"] * len(settings)
    assert dict(word.split("=", 1) for word in words[1::2]) == settings


def test_stop_is_a_fast_waited_shutdown_and_status_asks_pg_ctl() -> None:
    assert commands.stop_command(FAKE, Path("/d/data"), "postgres", 30) == [
        "runuser", "-u", "postgres", "--", "/pg/bin/pg_ctl", "-D", "/d/data", "-m", "fast",
        "-w", "-t", "30", "stop"]
    assert commands.stop_command(FAKE, Path("/d"), None, 5, mode="immediate")[3:5] == [
        "-m", "immediate"]
    assert commands.status_command(FAKE, Path("/d/data"), None) == [
        "/pg/bin/pg_ctl", "-D", "/d/data", "status"]


def test_psql_reads_stdin_stops_at_the_first_error_and_prints_csv_rows() -> None:
    command = commands.psql_command(FAKE, Path("/d/socket"), 5433, "postgres", "shop")
    assert command[0] == "/pg/bin/psql"
    assert {"-X", "--csv", "-t", "-q"} <= set(command)
    assert command[command.index("-v") + 1] == "ON_ERROR_STOP=1"
    assert command[command.index("-h") + 1] == "/d/socket"
    assert command[command.index("-d") + 1] == "shop"
    assert command[-2:] == ["-f", "-"]


def test_psql_rows_keep_nulls_empty_strings_commas_and_newlines_apart() -> None:
    text = '1,,\\N,"a,b","x\ny"\n2,"say ""hi""",\\N,,z\n'
    assert commands.parse_rows(text) == [
        ("1", "", None, "a,b", "x\ny"),
        ("2", 'say "hi"', None, "", "z"),
    ]
    assert commands.parse_rows("") == []


def test_client_environment_drops_the_callers_libpq_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PGDATA", "/elsewhere")
    monkeypatch.setenv("PGOPTIONS", "-c search_path=x")
    environment = commands.client_environment("secret")
    assert "PGDATA" not in environment and "PGOPTIONS" not in environment
    assert environment["PGPASSWORD"] == "secret"
    assert "PGPASSWORD" not in commands.client_environment()


def test_sql_quoting() -> None:
    assert commands.quote_identifier('My "Table"') == '"My ""Table"""'
    assert commands.quote_literal("it's") == "'it''s'"
    with pytest.raises(ValueError):
        commands.quote_identifier("")
    with pytest.raises(ValueError):
        commands.quote_literal("a\x00b")


def test_socket_path_must_fit_a_unix_socket_address(tmp_path: Path) -> None:
    assert commands.socket_path_fits(Path("/tmp/connect-grpc-pg-x/socket"), 65535)
    assert not commands.socket_path_fits(Path("/tmp") / ("d" * 100), 5432)


# ---- the server's settings and checks, before anything runs ----------------------------


def test_connection_settings() -> None:
    postgres = PostgresServer(port=5433, user="admin", password="p@ss:/word")
    assert postgres.host == "127.0.0.1"
    assert postgres.dsn == "postgresql://admin:p%40ss%3A%2Fword@127.0.0.1:5433/postgres"
    assert postgres.dsn_for("shop").endswith("@127.0.0.1:5433/shop")
    assert postgres.environment("shop") == {
        "PGHOST": "127.0.0.1", "PGPORT": "5433", "PGUSER": "admin", "PGDATABASE": "shop",
        "PGPASSWORD": "p@ss:/word"}
    assert postgres.debezium_connection("shop") == {
        "database.hostname": "127.0.0.1", "database.port": "5433", "database.user": "admin",
        "database.password": "p@ss:/word", "database.dbname": "shop"}
    trusted = PostgresServer(port=5434)
    assert trusted.dsn == "postgresql://postgres@127.0.0.1:5434/postgres"
    assert "database.password" not in trusted.debezium_connection()
    assert "PGPASSWORD" not in trusted.environment()


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_a_port_out_of_range_is_refused(port: int) -> None:
    with pytest.raises(ValueError, match="port must be between 1 and 65535"):
        PostgresServer(port=port)


def test_a_directory_of_other_things_is_refused_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    postgres = PostgresServer(tmp_path, port=5433, binaries=FAKE)
    with pytest.raises(PostgresError, match="neither empty nor a server's directory"):
        postgres.start()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_orphans_are_the_temp_servers_whose_owner_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server.tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    orphan = tmp_path / f"{server.TEMP_PREFIX}orphan"
    owned = tmp_path / f"{server.TEMP_PREFIX}owned"
    unmarked = tmp_path / f"{server.TEMP_PREFIX}unmarked"
    for directory in (orphan, owned, unmarked):
        (directory / "data").mkdir(parents=True)
    (orphan / server.OWNER_FILE).write_text(dead.stdout, encoding="utf-8")
    (owned / server.OWNER_FILE).write_text(f"{os.getpid()}\n", encoding="utf-8")
    # No postmaster.pid in the orphan: nothing to stop, only the directory to remove.
    assert server.reap_orphans(FAKE, None) == [orphan]
    assert not orphan.exists()
    assert owned.exists() and unmarked.exists()


# ---- the command line ---------------------------------------------------------------------


def test_cli_status_and_stop_of_a_directory_without_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["status", "--dir", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().out == "not running\n"
    assert cli.main(["stop", "--dir", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out == ""


def test_cli_needs_an_action_and_a_directory() -> None:
    with pytest.raises(SystemExit) as no_action:
        cli.main([])
    assert no_action.value.code == 2
    with pytest.raises(SystemExit) as no_directory:
        cli.main(["start"])
    assert no_directory.value.code == 2
