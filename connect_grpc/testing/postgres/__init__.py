"""A private PostgreSQL server for tests, benchmarks and local use: ``initdb`` into a directory
of its own, ``pg_ctl`` start on a free loopback port with a private unix socket directory and
``wal_level=logical`` (what Debezium's PostgreSQL connector needs), SQL through ``psql``.

    with PostgresServer(password="secret") as server:
        server.create_database("shop")
        server.load_rows("orders", 100_000, database="shop")
        config = {**server.debezium_connection("shop"), "plugin.name": "pgoutput", ...}

PostgreSQL's programs are found on ``PATH`` or in Debian's ``/usr/lib/postgresql/<major>/bin``
(where Debian puts ``initdb``); without them, :class:`PostgresNotInstalledError` says what is
missing. SQL goes through ``psql`` over the server's private socket: it comes with the server,
and no database driver is needed by the package or its tests.

As root, ``initdb`` and the server run as the ``postgres`` account (``runuser -u postgres``;
PostgreSQL refuses root), which then owns the server's directory: a directory given here must
be reachable by that account (``/tmp`` is; pytest's ``tmp_path``, under a root-only
``/tmp/pytest-of-root``, is not). Otherwise they run as the current user.

Layout of a server's directory: ``data/`` (the cluster), ``socket/`` (the unix socket),
``server.log`` (the server's log), ``server.json`` (its port and socket, for a later start of
the same directory). Without a directory, a fresh ``connect-grpc-pg-*`` one under the temp
directory, removed by :meth:`PostgresServer.stop`. A server whose process was killed (a test
killed -9) is never in the way of the next: each has its own directory and port, and the next
start of a temp-directory server stops and removes the servers whose owning process is gone.

``python -m connect_grpc.testing.postgres start|stop|status --dir DIR [--port N]`` does the
same from a shell (:mod:`.__main__`); ``start`` prints the connection settings as ``export
PG...=...`` lines.

Public API
----------
``PostgresServer``
    The server: ``start``/``stop`` (or a ``with`` block), ``dsn``, ``host``, ``port``,
    ``user``, ``password``, SQL helpers, and the replication-slot helpers CDC tests need
    (wait for a connector's slot, drop the slot a deleted connector leaves behind).
``ReplicationSlot``
    One row of ``pg_replication_slots``.
``PostgresBinaries``, ``find_binaries``
    PostgreSQL's programs, and where they are looked for (:mod:`.commands`).
``PostgresError``, ``PostgresNotInstalledError``, ``SqlError``
    What goes wrong: a server that cannot be set up, started or stopped; PostgreSQL missing;
    a statement's failure.
"""

from connect_grpc.testing.postgres.commands import (
    PostgresBinaries,
    PostgresError,
    PostgresNotInstalledError,
    find_binaries,
)
from connect_grpc.testing.postgres.server import PostgresServer, ReplicationSlot, SqlError

__all__ = [
    "PostgresBinaries",
    "PostgresError",
    "PostgresNotInstalledError",
    "PostgresServer",
    "ReplicationSlot",
    "SqlError",
    "find_binaries",
]
