"""``connect-grpc kafka start|stop|status``: the local development broker from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

import structlog

from connect_grpc.kafka.broker import (
    DEFAULT_BROKER_PORT,
    default_state_dir,
    start_background,
    status,
    stop,
)
from connect_grpc.kafka.processes import KafkaBrokerError

log = structlog.get_logger(__name__)


def run_kafka_command(
    action: str, state_dir: Path | None = None, port: int = DEFAULT_BROKER_PORT
) -> int:
    """Runs one action, writing bootstrap servers to stdout; exit 0, or 1 (not running/failed)."""
    state_dir = state_dir or default_state_dir()
    if action == "start":
        try:
            bootstrap = start_background(state_dir, port=port)
        except KafkaBrokerError as exc:
            log.error("kafka_start_failed", error=str(exc), state_dir=str(state_dir))
            return 1
        sys.stdout.write(bootstrap + "\n")
        return 0
    if action == "stop":
        stop(state_dir)
        return 0
    if action == "status":
        running = status(state_dir)
        sys.stdout.write((running or "not running") + "\n")
        return 0 if running else 1
    raise ValueError(f"unknown kafka action {action!r}")
