"""No request can wedge the control plane: a mutation waiting on slow I/O (Kafka, a plugin)
holds up only its own connector, reads never wait for it, and a caller that would have to
wait past its deadline gets UNAVAILABLE with a retry hint (item 2 of the hardening issue)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from connect_grpc.herder.health_checks import LoopHeartbeats
from connect_grpc.herder.standalone import CONTROL_PLANE, StandaloneHerder
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import ConnectorOffset, OffsetsChange, State, TargetState
from connect_grpc.kernel.errors import UnavailableError

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


def _config(tmp_path: Path) -> dict[str, str]:
    return {
        "connector.class": SOURCE,
        "tasks.max": "1",
        "topic": "t",
        "test.events.file": str(tmp_path / "events.jsonl"),
    }


@pytest.fixture
def blocked_alter(herder: StandaloneHerder, tmp_path: Path) -> Iterator[threading.Event]:
    """Connector "slow" is STOPPED and an AlterOffsets on it is stuck in (stand-in) Kafka
    I/O until the event is set; connector "other" runs."""
    herder.create_connector("slow", _config(tmp_path), TargetState.STOPPED)
    herder.create_connector("other", _config(tmp_path), TargetState.STARTED)
    release, entered = threading.Event(), threading.Event()

    def stuck_alter(
        name: str,
        config: Mapping[str, str],
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
    ) -> OffsetsChange:
        entered.set()
        release.wait(30)
        return OffsetsChange("altered")

    herder._offset_manager.alter = stuck_alter  # type: ignore[method-assign]
    offsets = [ConnectorOffset({"p": 1}, {"o": 1})]
    caller = threading.Thread(target=herder.alter_offsets, args=("slow", offsets))
    caller.start()
    assert entered.wait(5)
    yield release
    release.set()
    caller.join(5)


def test_reads_and_other_connectors_do_not_wait(
    herder: StandaloneHerder, blocked_alter: threading.Event
) -> None:
    with deadline.scope(1.0):
        assert herder.connectors() == ["other", "slow"]
        assert herder.connector_status("slow").connector.state is State.STOPPED
        herder.pause_connector("other")
        assert herder.connector_status("other").connector.state is State.PAUSED
        assert herder.health().serving


def test_a_change_to_the_busy_connector_is_unavailable_within_the_deadline(
    herder: StandaloneHerder, blocked_alter: threading.Event
) -> None:
    with deadline.scope(0.5), pytest.raises(UnavailableError) as caught:
        herder.resume_connector("slow")
    assert caught.value.retry_after_seconds > 0
    blocked_alter.set()
    with deadline.scope(5.0):
        herder.resume_connector("slow")
    assert herder.connector_status("slow").connector.state is State.RUNNING


def test_health_is_not_serving_while_the_herder_lock_is_stuck(herder: StandaloneHerder) -> None:
    """Not live once the lock has not been free for ``health.liveness.timeout.ms`` (60 s by
    default: seconds of an injected clock, not slept)."""
    now = [0.0]
    herder._heartbeats = LoopHeartbeats(60_000, lambda: now[0])
    herder._heartbeats.loop(CONTROL_PLANE).beat()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with herder._lock:
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(5)
    try:
        now[0] = 61.0
        report = herder.health()
        assert not report.serving and "control-plane for 61 s" in report.reason
        assert report.cause == "loop_stuck"
    finally:
        release.set()
        thread.join(5)
    assert herder.health().serving
