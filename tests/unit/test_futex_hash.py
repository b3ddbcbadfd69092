"""The worker's move to the kernel's global futex hash table (runtime/futex_hash.py).

The move is one-way and process-wide, so each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from connect_grpc.runtime.futex_hash import FutexHash, futex_hash_slots, use_global_futex_hash

SUPPORTED = futex_hash_slots() is not None


def _run(body: str) -> dict[str, object]:
    """Runs ``body`` in a new interpreter; it prints one JSON object, returned here."""
    script = textwrap.dedent(
        """
        import json, threading
        from connect_grpc.runtime.futex_hash import futex_hash_slots, use_global_futex_hash
        release = threading.Event()
        def park(count):
            for _ in range(count):
                threading.Thread(target=release.wait, daemon=True).start()
        """
    ) + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_threaded_process_moves_to_the_global_table_and_stays_there() -> None:
    """A second move finds the kernel's refusal (EBUSY) is only "already global": no warning
    is logged."""
    result = _run(
        """
        from structlog.testing import capture_logs
        park(50)
        before = futex_hash_slots()
        with capture_logs() as logged:
            first = use_global_futex_hash().value
            again = use_global_futex_hash().value
        park(50)
        print(json.dumps({"before": before, "first": first, "again": again,
                          "after": futex_hash_slots(), "logged": logged}))
        """
    )
    if SUPPORTED:
        # Linux 6.16+ gives a threaded process a table of its own, sized for its CPUs
        assert isinstance(result["before"], int) and result["before"] >= 16, result
        assert result == {**result, "first": "global", "again": "global", "after": 0,
                          "logged": []}
    else:
        assert result == {"before": None, "first": "no_private_tables",
                          "again": "no_private_tables", "after": None, "logged": []}


def test_a_move_before_the_first_thread_holds_for_the_threads_started_after() -> None:
    result = _run(
        """
        outcome = use_global_futex_hash().value
        park(50)
        print(json.dumps({"outcome": outcome, "after": futex_hash_slots()}))
        """
    )
    expected = {"outcome": "global", "after": 0} if SUPPORTED else {
        "outcome": "no_private_tables", "after": None}
    assert result == expected


def test_elsewhere_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert use_global_futex_hash() is FutexHash.NOT_LINUX
    assert futex_hash_slots() is None
