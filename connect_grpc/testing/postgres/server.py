"""The server of :mod:`connect_grpc.testing.postgres`: :class:`PostgresServer` (start, stop,
SQL, replication slots) and :func:`reap_orphans`. The package's docstring says how it is laid
out and run."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import structlog

from connect_grpc.kafka.ports import free_port
from connect_grpc.testing.postgres.commands import (
    HOST,
    PostgresBinaries,
    PostgresError,
    client_environment,
    find_binaries,
    initdb_command,
    parse_rows,
    psql_command,
    quote_identifier,
    quote_literal,
    server_account,
    server_settings,
    socket_path_fits,
    start_command,
    status_command,
    stop_command,
)

log = structlog.get_logger(__name__)

DEFAULT_USER = "postgres"
DEFAULT_DATABASE = "postgres"
#: Replication slots (and WAL senders): one per Debezium connector, and room for several.
DEFAULT_REPLICATION_SLOTS = 16
#: The prefix of the temp directories of servers started without a directory.
TEMP_PREFIX = "connect-grpc-pg-"
#: In a temp directory: the id of the process that owns the server.
OWNER_FILE = "owner.pid"
STATE_FILE = "server.json"
#: Ports tried when the one chosen was taken before the server bound it.
_PORT_ATTEMPTS = 3
_LOG_TAIL = 3000
_POLL_S = 0.2


class SqlError(PostgresError):
    """A statement failed; the message carries psql's error."""


@dataclass(frozen=True, slots=True)
class ReplicationSlot:
    """One row of ``pg_replication_slots``; LSNs as PostgreSQL writes them (``0/1528E00``)."""

    name: str
    plugin: str | None
    slot_type: str
    database: str | None
    active: bool
    active_pid: int | None
    restart_lsn: str | None
    confirmed_flush_lsn: str | None


def _tail(path: Path, offset: int = 0) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_LOG_TAIL:]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run(
    command: Sequence[str], cwd: Path, timeout: float, input_text: str | None = None,
    environment: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(command), cwd=cwd, input=input_text, capture_output=True, text=True,
            timeout=timeout, check=False,
            env=dict(environment) if environment is not None else client_environment(),
            stdin=None if input_text is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        program = command[4] if command[0] == "runuser" else command[0]
        raise PostgresError(f"{Path(program).name}: no answer in {timeout:.0f} s") from exc


class PostgresServer:
    """A private PostgreSQL server (see the package's docstring). Not thread-safe to start or
    stop; the SQL helpers may be called from several threads (each runs its own psql). A
    temp-directory server started again after :meth:`stop` gets a fresh directory.

    Args:
        directory: where the server lives; a fresh temp directory (removed at stop) if None.
            A directory that already holds a cluster is started again, not initialised.
        port: the TCP port; a free one if None (or the one a previous start recorded).
        user: the superuser's name.
        password: with one, TCP connections need it (scram-sha-256); without, all are
            trusted. Set when the cluster is initialised.
        replication_slots: ``max_replication_slots`` and ``max_wal_senders``.
        settings: more server settings (``postgres -c key=value``), applied last.
        binaries: PostgreSQL's programs; found by :func:`find_binaries` if None.
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        port: int | None = None,
        user: str = DEFAULT_USER,
        password: str | None = None,
        replication_slots: int = DEFAULT_REPLICATION_SLOTS,
        settings: Mapping[str, str] | None = None,
        binaries: PostgresBinaries | None = None,
    ) -> None:
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"port must be between 1 and 65535, not {port}")
        self._given_directory = directory
        self._directory: Path | None = directory
        self._requested_port = port
        self.port = port or 0
        self.user = user
        self.password = password
        self.max_replication_slots = replication_slots
        self._settings = dict(settings or {})
        self._binaries = binaries
        self._account: str | None = None
        self._external_socket_dir: Path | None = None
        self._running = False

    # ---- where it is ----------------------------------------------------------------------

    @property
    def host(self) -> str:
        return HOST

    @property
    def directory(self) -> Path:
        if self._directory is None:
            raise PostgresError("the server has no directory before it is started")
        return self._directory

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        return self._external_socket_dir or self.directory / "socket"

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    @property
    def binaries(self) -> PostgresBinaries:
        if self._binaries is None:
            self._binaries = find_binaries()
        return self._binaries

    def dsn_for(self, database: str = DEFAULT_DATABASE) -> str:
        """A libpq URI of ``database`` over TCP (with the password, when there is one)."""
        user = urllib.parse.quote(self.user, safe="")
        if self.password is not None:
            user += ":" + urllib.parse.quote(self.password, safe="")
        return f"postgresql://{user}@{HOST}:{self.port}/{urllib.parse.quote(database, safe='')}"

    @property
    def dsn(self) -> str:
        """:meth:`dsn_for` the ``postgres`` database."""
        return self.dsn_for()

    def environment(self, database: str = DEFAULT_DATABASE) -> dict[str, str]:
        """libpq's variables (``PGHOST``, ``PGPORT``, ...) that point psql and other clients
        at ``database`` over TCP."""
        variables = {"PGHOST": HOST, "PGPORT": str(self.port), "PGUSER": self.user,
                     "PGDATABASE": database}
        if self.password is not None:
            variables["PGPASSWORD"] = self.password
        return variables

    def debezium_connection(self, database: str = DEFAULT_DATABASE) -> dict[str, str]:
        """Debezium PostgreSQL's connection keys (``database.hostname``, ``.port``,
        ``.user``, ``.password`` when there is one, ``.dbname``) for ``database``."""
        config = {"database.hostname": HOST, "database.port": str(self.port),
                  "database.user": self.user, "database.dbname": database}
        if self.password is not None:
            config["database.password"] = self.password
        return config

    # ---- start and stop -------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> PostgresServer:
        """Initialises the cluster (unless the directory has one), starts the server and
        waits until it answers a query. Returns at once if it is running. Raises
        PostgresError (PostgresNotInstalledError without PostgreSQL) naming what failed,
        after stopping what had started (and removing a temp directory)."""
        if self._running:
            return self
        started = time.monotonic()
        deadline = started + timeout
        binaries = self.binaries
        self._account = server_account()
        if self._given_directory is None:
            reap_orphans(binaries, self._account)
        try:
            self._prepare_directory()
            self._recall_port()
            if self.is_running():  # a previous start of this directory, still serving
                self._running = True
            else:
                if not (self.data_dir / "PG_VERSION").exists():
                    self._initdb(deadline)
                self._start_server(deadline)
            self._write_state()
            self.wait_ready(max(1.0, deadline - time.monotonic()))
        except BaseException:
            with contextlib.suppress(PostgresError):
                self.stop()
            raise
        log.info("postgres_started", port=self.port, directory=str(self.directory),
                 account=self._account or "current user",
                 seconds=round(time.monotonic() - started, 2))
        return self

    def _prepare_directory(self) -> None:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
            (self._directory / OWNER_FILE).write_text(f"{os.getpid()}\n", encoding="utf-8")
        directory = self._directory
        if (
            directory.is_dir()
            and not (directory / "data").exists()
            and any(p.name != OWNER_FILE for p in directory.iterdir())
        ):
            # Handed over to the server's account below: never a directory of other things.
            raise PostgresError(
                f"{directory} is neither empty nor a server's directory: give a new or empty one"
            )
        directory.mkdir(parents=True, exist_ok=True)
        port_for_check = self._requested_port or 65535
        if not socket_path_fits(directory / "socket", port_for_check):
            # A long directory: the socket in a short one of its own (removed at stop).
            self._external_socket_dir = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX + "socket-"))
        self.socket_dir.mkdir(exist_ok=True)
        if self._account is not None:
            for path in (directory, self.socket_dir):
                shutil.chown(path, user=self._account, group=self._account)
            reachable = _run(["runuser", "-u", self._account, "--", "test", "-w", str(directory),
                              "-a", "-x", str(directory)], cwd=Path("/"), timeout=30)
            if reachable.returncode != 0:
                raise PostgresError(
                    f"{directory} is not reachable by the `{self._account}` account PostgreSQL "
                    f"runs as (a parent directory is closed to it): use a directory under "
                    f"{tempfile.gettempdir()}, or open its parents to that account"
                )

    def _recall_port(self) -> None:
        """The port: the one asked for, else the one a previous start of the directory
        recorded, else a free one."""
        if self._requested_port is not None:
            self.port = self._requested_port
            return
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            state = json.loads((self.directory / STATE_FILE).read_text(encoding="utf-8"))
            self.port = int(state["port"])
            return
        self.port = free_port(HOST)

    def _initdb(self, deadline: float) -> None:
        password_file: Path | None = None
        if self.password is not None:
            password_file = self.directory / ".pwfile"
            password_file.write_text(self.password + "\n", encoding="utf-8")
            password_file.chmod(0o600)
            if self._account is not None:
                shutil.chown(password_file, user=self._account, group=self._account)
        started = time.monotonic()
        try:
            result = _run(
                initdb_command(self.binaries, self.data_dir, self.user, self._account,
                               password_file),
                cwd=self.directory, timeout=max(1.0, deadline - started),
            )
        finally:
            if password_file is not None:
                password_file.unlink(missing_ok=True)
        if result.returncode != 0:
            raise PostgresError(
                f"initdb of {self.data_dir} failed (exit {result.returncode}):\n"
                f"{(result.stderr or result.stdout)[-_LOG_TAIL:]}"
            )
        log.info("postgres_initialised", data_dir=str(self.data_dir),
                 seconds=round(time.monotonic() - started, 2))

    def _start_server(self, deadline: float) -> None:
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            offset = self.log_file.stat().st_size if self.log_file.exists() else 0
            settings = server_settings(
                self.port, self.socket_dir, self.max_replication_slots, self._settings
            )
            left = max(1.0, deadline - time.monotonic())
            result = _run(
                start_command(self.binaries, self.data_dir, self.log_file, settings,
                              self._account, left),
                cwd=self.directory, timeout=left + 10,
            )
            if result.returncode == 0:
                self._running = True
                return
            server_log = _tail(self.log_file, offset)
            if (
                "Address already in use" in server_log
                and self._requested_port is None
                and attempt < _PORT_ATTEMPTS
            ):
                log.info("postgres_port_taken", port=self.port, attempt=attempt)
                self.port = free_port(HOST)
                continue
            raise PostgresError(
                f"pg_ctl start of {self.data_dir} on port {self.port} failed (exit "
                f"{result.returncode}): {(result.stderr or result.stdout).strip()}\n"
                f"server.log: {server_log}"
            )

    def _write_state(self) -> None:
        state = {"port": self.port, "user": self.user, "socket_dir": str(self.socket_dir)}
        (self.directory / STATE_FILE).write_text(json.dumps(state) + "\n", encoding="utf-8")

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Returns once the server answers a query; PostgresError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.execute("SELECT 1", timeout=max(1.0, deadline - time.monotonic()))
                return
            except PostgresError as exc:
                if time.monotonic() >= deadline:
                    raise PostgresError(
                        f"the server on port {self.port} did not answer within {timeout:.0f} s "
                        f"({exc})\nserver.log: {_tail(self.log_file)}"
                    ) from exc
            time.sleep(_POLL_S)

    def is_running(self) -> bool:
        """Whether a server runs on this directory's cluster (``pg_ctl status``)."""
        if self._directory is None or not (self.data_dir / "PG_VERSION").exists():
            return False
        result = _run(status_command(self.binaries, self.data_dir, self._account_for_stop()),
                      cwd=self.directory, timeout=30)
        return result.returncode == 0

    def _account_for_stop(self) -> str | None:
        return self._account if self._account is not None else server_account()

    def stop(self, timeout: float = 60.0) -> None:
        """``pg_ctl -m fast -w stop``, then the temp directory removed. Idempotent: a server
        that is not running (never started, stopped, or gone) is left as it is."""
        self._running = False
        if self._directory is None:
            return
        if self.is_running():
            result = _run(
                stop_command(self.binaries, self.data_dir, self._account_for_stop(), timeout),
                cwd=self.directory, timeout=timeout + 10,
            )
            if result.returncode != 0 and self.is_running():
                raise PostgresError(
                    f"pg_ctl stop of {self.data_dir} failed (exit {result.returncode}): "
                    f"{(result.stderr or result.stdout).strip()}"
                )
            log.info("postgres_stopped", port=self.port, directory=str(self.directory))
        if self._external_socket_dir is not None:
            shutil.rmtree(self._external_socket_dir, ignore_errors=True)
            self._external_socket_dir = None
        if self._given_directory is None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- SQL ------------------------------------------------------------------------------

    def _psql(self, sql: str, database: str | None, timeout: float) -> str:
        result = _run(
            psql_command(self.binaries, self.socket_dir, self.port, self.user,
                         database or DEFAULT_DATABASE),
            cwd=Path("/"), timeout=timeout, input_text=sql,
            environment=client_environment(self.password),
        )
        if result.returncode != 0:
            shown = " ".join(sql.split())
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise SqlError(f"{result.stderr.strip() or f'psql exit {result.returncode}'} "
                           f"(in: {shown})")
        return result.stdout

    def execute(self, sql: str, database: str | None = None, timeout: float = 300.0) -> None:
        """Runs ``sql`` (one or more statements, outside a transaction unless it opens one)
        in ``database`` (``postgres`` by default). Raises SqlError with PostgreSQL's error."""
        self._psql(sql, database, timeout)

    def query(
        self, sql: str, database: str | None = None, timeout: float = 300.0
    ) -> list[tuple[str | None, ...]]:
        """The rows of one query, each value as PostgreSQL's text (NULL as None)."""
        return parse_rows(self._psql(sql, database, timeout))

    def scalar(self, sql: str, database: str | None = None) -> str | None:
        """The first value of the first row of a query; SqlError if it has no row."""
        rows = self.query(sql, database)
        if not rows or not rows[0]:
            raise SqlError(f"no row from: {sql}")
        return rows[0][0]

    def create_database(self, name: str) -> str:
        """Creates database ``name``; returns its name. SqlError if it exists."""
        self.execute(f"CREATE DATABASE {quote_identifier(name)}")
        return name

    def drop_database(self, name: str) -> None:
        """Drops database ``name`` if it exists, with its replication slots (which would
        otherwise prevent it) and whatever sessions it has."""
        self.drop_replication_slots(database=name)
        self.execute(f"DROP DATABASE IF EXISTS {quote_identifier(name)} WITH (FORCE)")

    def load_rows(
        self,
        table: str,
        count: int,
        database: str | None = None,
        start: int = 1,
        timeout: float = 600.0,
    ) -> int:
        """Adds ``count`` rows to ``table`` (created if missing) with ``generate_series``:
        ``id bigint`` primary key from ``start``, ``name text`` (``row-<id>``), ``score
        integer`` (``id % 1000``), ``updated_at timestamptz`` (now). Returns ``count``.
        100 000 rows take well under a second."""
        if count < 0:
            raise ValueError(f"count must be 0 or more, not {count}")
        quoted = quote_identifier(table)
        self.execute(
            f"CREATE TABLE IF NOT EXISTS {quoted} (id bigint PRIMARY KEY, name text NOT NULL, "
            "score integer NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());\n"
            f"INSERT INTO {quoted} (id, name, score) SELECT i, 'row-' || i, i % 1000 "
            f"FROM generate_series({int(start)}::bigint, {int(start) + count - 1}::bigint) AS i;",
            database, timeout,
        )
        return count

    def count_rows(self, table: str, database: str | None = None) -> int:
        return int(self.scalar(f"SELECT count(*) FROM {quote_identifier(table)}", database) or 0)

    # ---- replication slots ----------------------------------------------------------------

    def replication_slots(self, database: str | None = None) -> list[ReplicationSlot]:
        """The server's replication slots (those of ``database`` only, if given), by name."""
        where = "" if database is None else f" WHERE database = {quote_literal(database)}"
        rows = self.query(
            "SELECT slot_name, plugin, slot_type, database, active, active_pid, restart_lsn, "
            f"confirmed_flush_lsn FROM pg_replication_slots{where} ORDER BY slot_name"
        )
        return [
            ReplicationSlot(
                name=row[0] or "", plugin=row[1], slot_type=row[2] or "", database=row[3],
                active=row[4] == "t", active_pid=int(row[5]) if row[5] else None,
                restart_lsn=row[6], confirmed_flush_lsn=row[7],
            )
            for row in rows
        ]

    def replication_slot(self, name: str) -> ReplicationSlot | None:
        return next((s for s in self.replication_slots() if s.name == name), None)

    def wait_for_replication_slot(
        self, name: str, timeout: float = 60.0, active: bool | None = None
    ) -> ReplicationSlot:
        """Waits until slot ``name`` exists (and, if ``active`` is given, is or is not in
        use by a WAL sender, e.g. a Debezium task streaming); returns it. PostgresError
        after ``timeout`` s, naming the slots there are."""
        deadline = time.monotonic() + timeout
        while True:
            slots = self.replication_slots()
            slot = next((s for s in slots if s.name == name), None)
            if slot is not None and (active is None or slot.active == active):
                return slot
            if time.monotonic() >= deadline:
                state = "" if active is None else (" active" if active else " inactive")
                raise PostgresError(
                    f"no{state} replication slot {name!r} after {timeout:.0f} s; slots: "
                    f"{[(s.name, s.active) for s in slots]}"
                )
            time.sleep(_POLL_S)

    def drop_replication_slot(self, name: str, timeout: float = 30.0) -> bool:
        """Drops slot ``name``, ending the WAL sender that uses it first (a Debezium task
        being stopped may still hold it); False if there was no such slot. A deleted
        Debezium connector leaves its slot behind, holding WAL: tests drop it."""
        deadline = time.monotonic() + timeout
        found = False
        literal = quote_literal(name)
        while True:
            slot = self.replication_slot(name)
            if slot is None:
                return found
            found = True
            try:
                if slot.active_pid is not None:
                    self.execute(f"SELECT pg_terminate_backend({slot.active_pid})")
                self.execute(f"SELECT pg_drop_replication_slot({literal})")
                log.info("postgres_replication_slot_dropped", slot=name)
                return True
            except SqlError:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(_POLL_S)

    def drop_replication_slots(self, database: str | None = None) -> list[str]:
        """Drops every replication slot (of ``database`` only, if given); their names."""
        names = [slot.name for slot in self.replication_slots(database)]
        for name in names:
            self.drop_replication_slot(name)
        return names


def reap_orphans(binaries: PostgresBinaries, account: str | None) -> list[Path]:
    """Stops and removes the temp-directory servers whose owning process is gone (a test
    process killed before its ``stop``); returns their directories. Servers of a directory
    given by the caller are never touched."""
    reaped: list[Path] = []
    for directory in Path(tempfile.gettempdir()).glob(TEMP_PREFIX + "*"):
        try:
            owner = int((directory / OWNER_FILE).read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            continue  # not a server's directory, or one being made
        if _alive(owner):
            continue
        data_dir = directory / "data"
        if (data_dir / "postmaster.pid").exists():
            with contextlib.suppress(PostgresError):
                _run(stop_command(binaries, data_dir, account, 30, mode="immediate"),
                     cwd=Path("/"), timeout=40)
        shutil.rmtree(directory, ignore_errors=True)
        log.info("postgres_orphan_reaped", directory=str(directory), owner_pid=owner)
        reaped.append(directory)
    return reaped
