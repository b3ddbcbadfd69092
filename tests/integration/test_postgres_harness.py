"""The PostgreSQL test harness (connect_grpc.testing.postgres) on the machine's real PostgreSQL:
the session's server answers SQL, decodes its WAL logically with pgoutput (what Debezium
streams from), loads 100k rows; a second server runs beside it; stop is idempotent; the
command line starts one a shell can use; and a server left by a killed process is cleaned
up by the next start, never in the way."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.kafka.ports import port_is_free
from connect_grpc.testing.postgres import PostgresError, PostgresServer, SqlError, find_binaries
from connect_grpc.testing.postgres.commands import client_environment
from connect_grpc.testing.postgres.server import OWNER_FILE, TEMP_PREFIX
from tests.integration.conftest import POSTGRES_PASSWORD

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _psql_over_tcp(
    postgres: PostgresServer, sql: str, password: str | None, database: str = "postgres"
) -> subprocess.CompletedProcess[str]:
    """psql as an outside client would connect: TCP to 127.0.0.1, not the harness's socket."""
    environment = {**client_environment(), **postgres.environment(database)}
    environment.pop("PGPASSWORD")
    if password is not None:
        environment["PGPASSWORD"] = password
    return subprocess.run(
        [str(postgres.binaries.psql), "-X", "-A", "-t", "-c", sql], env=environment,
        capture_output=True, text=True, timeout=60, check=False,
    )


@pytest.fixture
def scratch_dir() -> Iterator[Path]:
    """A directory the ``postgres`` account can reach when the tests run as root (pytest's
    ``tmp_path`` is under a root-only directory)."""
    directory = Path(tempfile.mkdtemp(prefix="connect-grpc-test-pgdir-"))
    directory.chmod(0o755)  # mkdtemp's 0700 would close it to the postgres account
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_the_server_answers_sql_as_postgres_writes_it(
    postgres: PostgresServer, postgres_database: str
) -> None:
    assert postgres.scalar("SHOW wal_level") == "logical"
    assert postgres.scalar("SHOW listen_addresses") == "127.0.0.1"
    assert postgres.scalar("SHOW port") == str(postgres.port)
    assert int(postgres.scalar("SHOW max_replication_slots") or 0) >= 4
    postgres.execute(
        "CREATE TABLE notes (id int PRIMARY KEY, body text);\n"
        "INSERT INTO notes VALUES (1, 'plain'), (2, NULL), (3, ''), (4, 'a,b \"c\"\nd');",
        postgres_database,
    )
    assert postgres.query("SELECT id, body FROM notes ORDER BY id", postgres_database) == [
        ("1", "plain"), ("2", None), ("3", ""), ("4", 'a,b "c"\nd')]
    with pytest.raises(SqlError, match='relation "missing" does not exist'):
        postgres.query("SELECT * FROM missing", postgres_database)


def test_tcp_clients_need_the_password(postgres: PostgresServer) -> None:
    good = _psql_over_tcp(postgres, "SELECT current_user", POSTGRES_PASSWORD)
    assert (good.returncode, good.stdout.strip()) == (0, "postgres"), good.stderr
    wrong = _psql_over_tcp(postgres, "SELECT 1", "not-the-password")
    assert wrong.returncode != 0
    assert 'password authentication failed for user "postgres"' in wrong.stderr


def test_logical_replication_with_pgoutput_sees_the_changes(
    postgres: PostgresServer, postgres_database: str
) -> None:
    db = postgres_database
    postgres.execute(
        "CREATE TABLE orders (id int PRIMARY KEY, item text);\n"
        "CREATE PUBLICATION orders_pub FOR TABLE orders;", db,
    )
    slot = f"test_slot_{uuid.uuid4().hex[:8]}"
    postgres.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')", db)
    made = postgres.wait_for_replication_slot(slot, timeout=10, active=False)
    assert (made.plugin, made.slot_type, made.database) == ("pgoutput", "logical", db)
    postgres.execute("INSERT INTO orders VALUES (1, 'first-item'), (2, 'second-item')", db)
    postgres.execute("UPDATE orders SET item = 'changed-item' WHERE id = 1", db)
    rows = postgres.query(
        f"SELECT data FROM pg_logical_slot_peek_binary_changes('{slot}', NULL, NULL, "
        "'proto_version', '1', 'publication_names', 'orders_pub')", db,
    )
    messages = [bytes.fromhex((data or "").removeprefix("\\x")) for (data,) in rows]
    # pgoutput's messages: Begin, Relation, Insert, Insert, Commit; Begin, Update, Commit.
    assert [m[:1] for m in messages] == [b"B", b"R", b"I", b"I", b"C", b"B", b"U", b"C"]
    assert b"orders" in messages[1]
    assert b"first-item" in messages[2] and b"second-item" in messages[3]
    assert b"changed-item" in messages[6]
    # A peek leaves the changes in the slot; a get consumes them.
    assert len(postgres.query(
        f"SELECT lsn FROM pg_logical_slot_get_binary_changes('{slot}', NULL, NULL, "
        "'proto_version', '1', 'publication_names', 'orders_pub')", db)) == len(messages)
    assert postgres.drop_replication_slot(slot) is True
    assert postgres.replication_slot(slot) is None
    assert postgres.drop_replication_slot(slot) is False


def test_an_active_slot_is_released_and_dropped(
    postgres: PostgresServer, postgres_database: str
) -> None:
    """A slot held by a WAL sender (a Debezium task streaming) is dropped all the same."""
    slot = f"held_{uuid.uuid4().hex[:8]}"
    postgres.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'test_decoding')",
                     postgres_database)
    receiver = subprocess.Popen(
        [str(postgres.binaries.bin_dir / "pg_recvlogical"), "-h", str(postgres.socket_dir),
         "-p", str(postgres.port), "-U", postgres.user, "-d", postgres_database,
         "--slot", slot, "--start", "-f", "/dev/null"],
        env=client_environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        held = postgres.wait_for_replication_slot(slot, timeout=30, active=True)
        assert held.active_pid is not None
        assert postgres.drop_replication_slot(slot) is True
        assert postgres.replication_slots(postgres_database) == []
    finally:
        receiver.kill()
        receiver.wait(10)


def test_a_hundred_thousand_rows_load(postgres: PostgresServer, postgres_database: str) -> None:
    assert postgres.load_rows("customers", 100_000, database=postgres_database) == 100_000
    assert postgres.count_rows("customers", postgres_database) == 100_000
    postgres.load_rows("customers", 10, database=postgres_database, start=100_001)
    assert postgres.query("SELECT min(id), max(id), count(*) FROM customers",
                          postgres_database) == [("1", "100010", "100010")]
    assert postgres.query("SELECT name, score FROM customers WHERE id = 1234",
                          postgres_database) == [("row-1234", "234")]


def test_two_servers_side_by_side_and_stop_is_idempotent(postgres: PostgresServer) -> None:
    second = PostgresServer()
    with second:
        assert second.port != postgres.port
        assert second.directory != postgres.directory
        second.execute("CREATE TABLE only_here (id int)")
        assert second.count_rows("only_here") == 0
        with pytest.raises(SqlError):
            postgres.count_rows("only_here")
        directory = second.directory
        second.stop()
        assert not directory.exists()
        assert not second.is_running()
        second.stop()  # stopped already: nothing to do
    assert postgres.scalar("SELECT 1") == "1"  # the session's server is untouched


def test_a_directory_too_long_for_a_socket_path_gets_its_socket_elsewhere(
    scratch_dir: Path,
) -> None:
    directory = scratch_dir / ("d" * 90)
    with PostgresServer(directory) as server:
        assert not server.socket_dir.is_relative_to(directory)
        assert server.scalar("SELECT 1") == "1"
        socket_dir = server.socket_dir
    assert not socket_dir.exists()
    assert (directory / "data" / "PG_VERSION").exists()  # a given directory is kept


def test_the_command_line_starts_a_server_a_shell_can_use(scratch_dir: Path) -> None:
    directory = scratch_dir / "pg"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "connect_grpc.testing.postgres", *args, "--dir",
             str(directory)], capture_output=True, text=True, timeout=120, check=False,
        )

    try:
        started = run("start", "--password", "walk-through")
        assert started.returncode == 0, started.stderr
        exported = dict(
            line.removeprefix("export ").split("=", 1) for line in started.stdout.splitlines()
        )
        assert set(exported) == {"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD",
                                 "POSTGRES_DSN"}
        assert "postgres_started" in started.stderr  # the log, apart from the answer
        shell = subprocess.run(
            ["bash", "-c", f'eval "$1" && {find_binaries().psql} -X -A -t -c "SELECT 40 + 2"',
             "-", started.stdout],
            capture_output=True, text=True, timeout=60, check=False,
            env=client_environment(),
        )
        assert shell.stdout.strip() == "42", shell.stderr
        status = run("status")
        assert (status.returncode, status.stdout.split()[0]) == (0, "running")
        again = run("start")  # already running: the same server, the same port
        assert again.returncode == 0, again.stderr
        assert f"export PGPORT={exported['PGPORT']}" in again.stdout
        assert run("stop").returncode == 0
        assert run("stop").returncode == 0  # idempotent
        assert run("status").returncode == 1
        restarted = run("start")  # the same cluster again, on its recorded port
        assert restarted.returncode == 0, restarted.stderr
        assert f"export PGPORT={exported['PGPORT']}" in restarted.stdout
    finally:
        run("stop")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another account")
def test_a_directory_the_postgres_account_cannot_reach_is_refused_clearly(
    tmp_path: Path,
) -> None:
    # pytest's tmp_path is under /tmp/pytest-of-root, which only root may enter.
    with pytest.raises(PostgresError, match="not reachable by the `postgres` account"):
        PostgresServer(tmp_path / "pg").start()


def test_a_server_left_by_a_killed_process_is_reaped_by_the_next_start() -> None:
    script = (
        "import sys, time\n"
        "from connect_grpc.testing.postgres import PostgresServer\n"
        "server = PostgresServer().start()\n"
        "print('SERVER', server.directory, server.port, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        assert owner.stdout is not None
        # Lines before the marker are the harness's log (structlog's default is stdout).
        line = next((ln.split() for ln in owner.stdout if ln.startswith("SERVER ")), [])
        assert line, "the owning process did not start its server"
        orphan, port = Path(line[1]), int(line[2])
        assert (orphan / OWNER_FILE).read_text().strip() == str(owner.pid)
    finally:
        owner.send_signal(signal.SIGKILL)  # kill -9: its server keeps running, orphaned
        owner.wait(10)
    assert orphan.name.startswith(TEMP_PREFIX) and (orphan / "data" / "postmaster.pid").exists()
    assert not port_is_free(port)  # the orphan still serves
    with PostgresServer() as after:
        assert not orphan.exists()  # stopped and removed
        assert port_is_free(port)
        assert after.scalar("SELECT 1") == "1"
