"""A connector whose config's values expire is restarted when they do, once per start: the
timer of the last start only, none after a stop, none with ``config.action.reload=none``."""

from __future__ import annotations

import threading
import time

import pytest

from connect_grpc.runtime import expiry_reloads
from connect_grpc.runtime.expiry_reloads import ExpiryReloads


class Expired:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.event = threading.Event()

    def __call__(self, name: str) -> None:
        self.names.append(name)
        self.event.set()


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expiry_reloads, "MIN_RELOAD_DELAY_S", 0.01)


def test_a_connector_is_restarted_once_its_values_expire() -> None:
    expired = Expired()
    reloads = ExpiryReloads(expired)
    reloads.schedule("orders", 50, restarts=True)
    assert expired.event.wait(5)
    time.sleep(0.2)
    assert expired.names == ["orders"]


def test_only_the_last_starts_timer_fires_and_a_stop_cancels_it() -> None:
    expired = Expired()
    reloads = ExpiryReloads(expired)
    reloads.schedule("orders", 100, restarts=True)
    reloads.schedule("orders", 1500, restarts=True)  # started again: its values read anew
    reloads.schedule("stopped", 100, restarts=True)
    reloads.cancel("stopped")
    time.sleep(0.4)  # both 100 ms timers would have fired by now
    assert expired.names == []
    assert expired.event.wait(5)
    time.sleep(0.3)
    assert expired.names == ["orders"]


def test_no_restart_without_a_time_to_live_or_with_reload_none() -> None:
    expired = Expired()
    reloads = ExpiryReloads(expired)
    reloads.schedule("forever", None, restarts=True)
    reloads.schedule("kept", 10, restarts=False)
    time.sleep(0.3)
    assert expired.names == []


def test_a_provider_whose_values_expire_at_once_restarts_after_the_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(expiry_reloads, "MIN_RELOAD_DELAY_S", 0.4)
    expired = Expired()
    reloads = ExpiryReloads(expired)
    started = time.monotonic()
    reloads.schedule("eager", 0, restarts=True)
    assert expired.event.wait(5)
    assert time.monotonic() - started >= 0.4
