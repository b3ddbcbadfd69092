"""Which tasks hold a Spark task slot (``HostSlots``), and the watcher that moves the tasks
that run on the driver for want of one into hosts of their own (``SlotWatcher``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from connect_grpc.kernel.domain import TaskId

log = structlog.get_logger(__name__)

#: Seconds between two looks for a free slot while tasks wait for one on the driver.
SLOT_CHECK_INTERVAL_S = 1.0
#: Seconds ``SlotWatcher.stop`` gives a move under way (as long as a hosted plugin's stop
#: may take, ``link.STOP_TIMEOUT_S``).
MOVE_WAIT_S = 10.0


class HostSlots:
    """Which tasks hold a Spark task slot: a hosted task keeps its slot until it stops, so
    a task is hosted only while one is free (its job would otherwise wait for ever). The
    parked hosts (``WarmHosts``) hold the free slots they sit on: a task given a slot adopts
    one of them before any new job is launched."""

    def __init__(self, capacity: Callable[[], int]) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._held: set[TaskId] = set()

    def try_acquire(self, task: TaskId) -> bool:
        capacity = self._capacity()
        with self._lock:
            if task in self._held:
                return True
            if len(self._held) >= capacity:
                return False
            self._held.add(task)
            return True

    def release(self, task: TaskId) -> None:
        with self._lock:
            self._held.discard(task)

    def free(self) -> int:
        """How many more tasks could be hosted now."""
        capacity = self._capacity()
        with self._lock:
            return max(0, capacity - len(self._held))

    def held(self) -> set[TaskId]:
        with self._lock:
            return set(self._held)


class SlotWatcher:
    """Moves the tasks that run on the driver for want of a slot into hosts of their own
    once slots are free: on a Spark cluster, the executors register some seconds after the
    application starts (tasks started before run on the driver until then), and a hosted
    task that stops frees its slot. ``move`` stops the task and starts it again (it is then
    hosted if it gets the slot); tasks are moved one at a time, in id order."""

    def __init__(
        self,
        slots: HostSlots,
        move: Callable[[TaskId], None],
        new_thread: Callable[[Callable[[], None], str], threading.Thread],
        interval: float = SLOT_CHECK_INTERVAL_S,
    ) -> None:
        self._slots = slots
        self._move = move
        self._new_thread = new_thread
        self._interval = interval
        self._lock = threading.Lock()
        self._waiting: set[TaskId] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def wait_for_slot(self, task: TaskId) -> None:
        with self._lock:
            self._waiting.add(task)

    def forget(self, task: TaskId) -> None:
        with self._lock:
            self._waiting.discard(task)

    def waiting(self) -> set[TaskId]:
        with self._lock:
            return set(self._waiting)

    def check(self) -> list[TaskId]:
        """Moves as many waiting tasks as there are free slots; returns them."""
        waiting = sorted(self.waiting())
        if not waiting:
            return []
        moved = []
        for task in waiting[: self._slots.free()]:
            if self._stopping.is_set():
                break
            self.forget(task)
            self._move(task)
            moved.append(task)
        return moved

    def start(self) -> None:
        """Checks every ``interval`` seconds in a thread of its own until ``stop``."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = self._new_thread(self._run, "connect-slot-watcher")
        self._thread.start()

    def stop(self, timeout: float = MOVE_WAIT_S) -> None:
        """Ends the checks: no move starts after this; one under way is given ``timeout``
        seconds (a host that has not connected by then is cancelled when Spark stops)."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("slot_watcher_still_moving", waited_s=timeout)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self.check()
            except Exception:  # Spark stopping under us, a move that failed: look again later
                log.warning("slot_check_failed", exc_info=True)
