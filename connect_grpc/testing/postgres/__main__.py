"""``python -m connect_grpc.testing.postgres start|stop|status --dir DIR``: a private PostgreSQL
server from a shell, e.g. for a walk-through::

    eval "$(python -m connect_grpc.testing.postgres start --dir /tmp/pg --password secret)"
    psql -c 'CREATE TABLE orders (id int PRIMARY KEY)'
    python -m connect_grpc.testing.postgres stop --dir /tmp/pg

The settings go to stdout (the command's answer, as ``export`` lines a shell can ``eval``);
logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from connect_grpc.logs.output import configure_logging
from connect_grpc.testing.postgres.commands import PostgresError
from connect_grpc.testing.postgres.server import (
    DEFAULT_REPLICATION_SLOTS,
    STATE_FILE,
    PostgresServer,
)

log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m connect_grpc.testing.postgres",
        description="A private PostgreSQL server (wal_level=logical) for tests and local use.",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    start = actions.add_parser("start", help="initialise (once) and start; print the settings")
    start.add_argument("--dir", type=Path, required=True, help="the server's directory")
    start.add_argument("--port", type=int, help="TCP port (default: free, then the same)")
    start.add_argument("--password", help="the password TCP clients need (set at first start)")
    start.add_argument("--replication-slots", type=int, default=DEFAULT_REPLICATION_SLOTS)
    start.add_argument("--timeout", type=float, default=120.0, help="seconds (default 120)")
    for name, text in (("stop", "stop the server (fast shutdown)"), ("status", "is it up?")):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("--dir", type=Path, required=True, help="the server's directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``start`` prints ``export PGHOST=...`` lines (``eval "$(...)"`` points psql at the
    server) and a ``POSTGRES_DSN``; ``stop`` is idempotent; ``status`` prints ``running
    <dsn>`` (exit 0) or ``not running`` (exit 1). Exit 1 on failure, logged (run as a
    module, the log goes to stderr)."""
    args = _parser().parse_args(argv)
    directory: Path = args.dir.expanduser().resolve()
    try:
        if args.action == "start":
            server = PostgresServer(directory, port=args.port, password=args.password,
                                    replication_slots=args.replication_slots)
            server.start(timeout=args.timeout)
            lines = [f"export {key}={shlex.quote(value)}"
                     for key, value in server.environment().items()]
            lines.append(f"export POSTGRES_DSN={shlex.quote(server.dsn)}")
            sys.stdout.write("\n".join(lines) + "\n")
            return 0
        server = PostgresServer(directory)
        if args.action == "stop":
            server.stop()
            return 0
        port = _recorded_port(directory)
        if port is not None and server.is_running():
            server.port = port
            sys.stdout.write(f"running {server.dsn}\n")
            return 0
        sys.stdout.write("not running\n")
        return 1
    except (PostgresError, ValueError) as exc:
        log.error(f"postgres_{args.action}_failed", error=str(exc), directory=str(directory))
        return 1


def _recorded_port(directory: Path) -> int | None:
    """The port the last start of ``directory`` recorded."""
    try:
        return int(json.loads((directory / STATE_FILE).read_text("utf-8"))["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


if __name__ == "__main__":
    configure_logging("console")
    raise SystemExit(main())
