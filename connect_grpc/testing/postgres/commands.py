"""The pure parts of :mod:`connect_grpc.testing.postgres`: where PostgreSQL's programs are, which
account runs the server, the command lines of ``initdb``, ``pg_ctl`` and ``psql``, and how
psql's output is read.

Nothing here starts a process: each function returns what :class:`~.server.PostgresServer`
runs, so that the unit tests can check the command lines on a machine without PostgreSQL.

Public API
----------
``PostgresError``, ``PostgresNotInstalledError``
    A server that cannot be set up, started or queried; PostgreSQL's programs not found.
``PostgresBinaries``, ``find_binaries(search_path=None, debian_root=None)``
    ``initdb``, ``pg_ctl`` and ``psql``, found on ``PATH`` or in Debian's
    ``/usr/lib/postgresql/<major>/bin``.
``server_account(euid=None, lookup=pwd.getpwnam) -> str | None``
    The account the server runs as: the current user, or ``postgres`` for root.
``as_account(command, account) -> list[str]``
    ``command`` run as ``account`` (``runuser -u <account> --``), or as it is.
``server_settings(port, socket_dir, replication_slots, extra=None) -> dict[str, str]``
    The server's settings: loopback only, a private socket directory, ``wal_level=logical``.
``initdb_command``, ``start_command``, ``stop_command``, ``status_command``, ``psql_command``
    The command lines.
``quote_identifier(name)``, ``quote_literal(value)``
    SQL quoting for names and values put into statements.
``parse_rows(text) -> list[tuple[str | None, ...]]``
    psql's CSV output as rows.
"""

from __future__ import annotations

import csv
import io
import os
import pwd
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where Debian's packages put a major version's server programs (``initdb`` is not on PATH).
DEBIAN_ROOT = Path("/usr/lib/postgresql")
#: The account root runs the server as: ``initdb`` and ``pg_ctl`` refuse to run as root.
SERVER_ACCOUNT = "postgres"
#: The only address the server listens on.
HOST = "127.0.0.1"
#: The server programs, which must come from one installation.
SERVER_PROGRAMS = ("initdb", "pg_ctl")
#: Unix socket paths are limited to 108 bytes (``sun_path``), the terminating NUL included.
MAX_SOCKET_PATH = 107
#: How psql shows NULL in :func:`psql_command`'s CSV output (COPY's notation).
NULL_TEXT = r"\N"
_INSTALL_HINT = "install Debian's package `postgresql` (apt-get install postgresql)"


class PostgresError(RuntimeError):
    """A private PostgreSQL server could not be set up, started, stopped or queried."""


class PostgresNotInstalledError(PostgresError):
    """PostgreSQL's programs are not on this machine."""


@dataclass(frozen=True, slots=True)
class PostgresBinaries:
    """PostgreSQL's programs the harness runs: the server's from one installation."""

    initdb: Path
    pg_ctl: Path
    psql: Path

    @property
    def bin_dir(self) -> Path:
        """The directory of the server programs."""
        return self.initdb.parent


def _major(directory: Path) -> tuple[int, str]:
    """Sort key of a Debian version directory (``/usr/lib/postgresql/15``): numeric first."""
    name = directory.name
    return (int(name), name) if name.isdigit() else (-1, name)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _candidate_dirs(search_path: str, debian_root: Path) -> list[Path]:
    """Directories that may hold the server programs: those of the ``initdb`` commands on
    the search path, each where a symlink points first (``/usr/local/bin/initdb`` may point
    into ``/usr/lib/postgresql/15/bin``, which has the rest of that installation, psql and
    pg_recvlogical included), then Debian's, newest first."""
    candidates: list[Path] = []
    for entry in search_path.split(os.pathsep):
        if entry and _executable(Path(entry) / "initdb"):
            candidates.extend([(Path(entry) / "initdb").resolve().parent, Path(entry)])
    debian = sorted(
        (d for d in debian_root.glob("*") if (d / "bin").is_dir()), key=_major, reverse=True
    ) if debian_root.is_dir() else []
    candidates.extend(d / "bin" for d in debian)
    unique: list[Path] = []
    for candidate in candidates:
        if candidate not in unique:
            unique.append(candidate)
    return unique


def find_binaries(
    search_path: str | None = None, debian_root: Path | None = None
) -> PostgresBinaries:
    """``initdb`` and ``pg_ctl`` from the first directory that has both: one holding an
    ``initdb`` on ``search_path`` (``PATH`` by default), else Debian's
    ``<debian_root>/<major>/bin`` (:data:`DEBIAN_ROOT` by default), the newest major
    first; ``psql`` from the same directory, else from the search path.

    Raises:
        PostgresNotInstalledError: naming the programs missing and where they were looked for.
    """
    path = os.environ.get("PATH", "") if search_path is None else search_path
    debian_root = DEBIAN_ROOT if debian_root is None else debian_root
    where = f"on PATH nor in {debian_root}/*/bin"
    for directory in _candidate_dirs(path, debian_root):
        if all(_executable(directory / program) for program in SERVER_PROGRAMS):
            psql = directory / "psql"
            if not _executable(psql):
                found = shutil.which("psql", path=path)
                if found is None:
                    raise PostgresNotInstalledError(
                        f"psql (PostgreSQL's client) was found neither in {directory} nor on "
                        f"PATH: {_INSTALL_HINT}"
                    )
                psql = Path(found)
            return PostgresBinaries(directory / "initdb", directory / "pg_ctl", psql)
    raise PostgresNotInstalledError(
        f"PostgreSQL's server programs ({' and '.join(SERVER_PROGRAMS)}) were found neither "
        f"{where}: {_INSTALL_HINT}"
    )


def server_account(
    euid: int | None = None, lookup: Callable[[str], object] = pwd.getpwnam
) -> str | None:
    """The account that runs ``initdb`` and the server: None (the current user), or
    :data:`SERVER_ACCOUNT` for root, since PostgreSQL refuses to run as root.

    Raises:
        PostgresError: root, and no such account, or no ``runuser`` to switch to it.
    """
    if (os.geteuid() if euid is None else euid) != 0:
        return None
    try:
        lookup(SERVER_ACCOUNT)
    except KeyError:
        raise PostgresError(
            f"PostgreSQL refuses to run as root and there is no `{SERVER_ACCOUNT}` account to "
            f"run it as: {_INSTALL_HINT} (it creates the account), or run as another user"
        ) from None
    if shutil.which("runuser") is None:
        raise PostgresError(
            f"PostgreSQL refuses to run as root and `runuser` (util-linux), which runs it as "
            f"`{SERVER_ACCOUNT}`, is not on PATH"
        )
    return SERVER_ACCOUNT


def as_account(command: Sequence[str], account: str | None) -> list[str]:
    """``command`` run as ``account`` through ``runuser`` (root only), or as it is."""
    if account is None:
        return list(command)
    return ["runuser", "-u", account, "--", *command]


def socket_path_fits(socket_dir: Path, port: int) -> bool:
    """Whether the server's socket in ``socket_dir`` fits a unix socket address."""
    return len(os.fsencode(socket_dir / f".s.PGSQL.{port}.lock")) <= MAX_SOCKET_PATH


def server_settings(
    port: int,
    socket_dir: Path,
    replication_slots: int,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The server's settings (``postgres -c``): TCP on :data:`HOST` only, the socket in a
    private directory (never the system's ``/var/run/postgresql``), logical decoding on, a
    replication slot and a WAL sender for each of ``replication_slots`` connectors (and
    headroom for a test's own slot), and no flushing to disk: the data is thrown away.
    ``synchronous_commit`` stays on: off, a commit would reach logical decoding only at the
    WAL writer's next flush (up to 0.6 s later), which CDC latency measurements would
    count."""
    if replication_slots < 1:
        raise ValueError(f"replication_slots must be at least 1, not {replication_slots}")
    settings = {
        "listen_addresses": HOST,
        "port": str(port),
        "unix_socket_directories": str(socket_dir),
        "wal_level": "logical",
        "max_replication_slots": str(replication_slots),
        "max_wal_senders": str(replication_slots),
        "fsync": "off",
        "full_page_writes": "off",
    }
    settings.update(extra or {})
    return settings


def initdb_command(
    binaries: PostgresBinaries,
    data_dir: Path,
    user: str,
    account: str | None,
    password_file: Path | None = None,
) -> list[str]:
    """``initdb`` of a cluster whose superuser is ``user``, UTF-8 with the C locale (the
    same collation whatever the machine's environment). Every connection is trusted; with
    ``password_file``, TCP connections need that password (scram-sha-256) and the unix
    socket, which only the harness uses, stays trusted."""
    auth = (
        ["--auth=trust"]
        if password_file is None
        else ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}"]
    )
    command = [
        str(binaries.initdb), "-D", str(data_dir), "-U", user, *auth,
        "-E", "UTF8", "--locale=C", "--no-sync",
    ]
    return as_account(command, account)


def start_command(
    binaries: PostgresBinaries,
    data_dir: Path,
    log_file: Path,
    settings: Mapping[str, str],
    account: str | None,
    timeout: float,
) -> list[str]:
    """``pg_ctl start``, waiting until the server accepts connections (at most ``timeout``
    seconds). pg_ctl hands ``-o`` to a shell, hence each option quoted."""
    options = " ".join(f"-c {shlex.quote(f'{key}={value}')}" for key, value in settings.items())
    command = [
        str(binaries.pg_ctl), "-D", str(data_dir), "-l", str(log_file),
        "-w", "-t", str(max(1, round(timeout))), "-o", options, "start",
    ]
    return as_account(command, account)


def stop_command(
    binaries: PostgresBinaries,
    data_dir: Path,
    account: str | None,
    timeout: float,
    mode: str = "fast",
) -> list[str]:
    """``pg_ctl stop``: ``fast`` ends the sessions and checkpoints; ``immediate`` (for a
    server whose data nobody wants) just ends the processes."""
    command = [
        str(binaries.pg_ctl), "-D", str(data_dir), "-m", mode,
        "-w", "-t", str(max(1, round(timeout))), "stop",
    ]
    return as_account(command, account)


def status_command(binaries: PostgresBinaries, data_dir: Path, account: str | None) -> list[str]:
    """``pg_ctl status``: exit 0 running, 3 not running, 4 no data directory."""
    return as_account([str(binaries.pg_ctl), "-D", str(data_dir), "status"], account)


def psql_command(
    binaries: PostgresBinaries, socket_dir: Path, port: int, user: str, database: str
) -> list[str]:
    """``psql`` over the private socket, reading SQL on stdin, stopping at the first error,
    printing rows only, as CSV (quoted where a value needs it), NULL as :data:`NULL_TEXT`.
    ``-X``: no ``~/.psqlrc``."""
    return [
        str(binaries.psql), "-X", "-q", "--csv", "-t", "-v", "ON_ERROR_STOP=1",
        "-P", f"null={NULL_TEXT}", "-h", str(socket_dir), "-p", str(port),
        "-U", user, "-d", database, "-f", "-",
    ]


def client_environment(password: str | None = None) -> dict[str, str]:
    """The process environment without libpq's ``PG*`` variables (a ``PGDATA``,
    ``PGOPTIONS`` or ``PGSERVICE`` of the caller's must not reach the harness's server),
    with ``PGPASSWORD`` when given."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    if password is not None:
        environment["PGPASSWORD"] = password
    return environment


def quote_identifier(name: str) -> str:
    """``name`` as an SQL identifier, quoted (so its case and characters are kept)."""
    if not name or "\x00" in name:
        raise ValueError(f"not a usable SQL name: {name!r}")
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """``value`` as an SQL string literal (``standard_conforming_strings`` is on)."""
    if "\x00" in value:
        raise ValueError("an SQL string cannot hold a NUL character")
    return "'" + value.replace("'", "''") + "'"


def parse_rows(text: str) -> list[tuple[str | None, ...]]:
    """psql's CSV rows (:func:`psql_command`) as tuples, NULL as None."""
    return [
        tuple(None if value == NULL_TEXT else value for value in row)
        for row in csv.reader(io.StringIO(text))
        if row
    ]
