"""The driver's end of one hosted task: ``HostLink`` takes a host (``jobs.WarmHosts``),
has it build the task and calls it; ``HostedPlugin`` is the driver's stand-in for the plugin
that lives there."""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog

from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.connectors.api import SinkRecord, SinkTask, Task
from connect_grpc.kernel.domain import TaskId, TaskPlacement
from connect_grpc.logs.levels import LEVELS_SET
from connect_grpc.runtime.hosting.jobs import (
    CONNECT_TIMEOUT_S,
    HostJob,
    HostLostError,
    WarmHosts,
    hosted_error,
    receive,
)
from connect_grpc.runtime.hosting.serving import HostBuild
from connect_grpc.runtime.placement import executor_placement

log = structlog.get_logger(__name__)

#: Seconds a hosted plugin's ``stop`` may take before its host is given up.
STOP_TIMEOUT_S = 10.0

#: Answers a host's question: (name, args) → value.
Answerer = Callable[[str, tuple[Any, ...]], Any]


class HostLink:
    """The driver's end of a hosted task: takes a host (``WarmHosts``), has it build the
    task, then calls the host; hands the host back when the task is done with it."""

    def __init__(
        self,
        hosts: WarmHosts,
        task_id: TaskId,
        factory: str,
        args: tuple[Any, ...],
        answer: Answerer,
        sys_path: tuple[str, ...] = (),
    ) -> None:
        self._hosts = hosts
        self._id = task_id
        self._factory = factory
        self._args = args
        self._answer = answer
        self._sys_path = sys_path
        self._calls = threading.Lock()
        self._sends = threading.Lock()
        #: The version of the worker's log levels (``loggers.LEVELS_SET``) the host has.
        self._levels = 0
        self._job: HostJob | None = None
        #: Whether the plugin's ``stop`` returned in time (the host may then serve another).
        self._stopped_cleanly = False
        #: Whether the host was lost (a new ``open`` is needed).
        self.broken = False
        #: The host name of the executor whose Spark task hosts the task, once connected.
        self.host = ""
        #: That executor's Spark id, once connected.
        self.executor = ""
        self._log = log.bind(connector=task_id.connector, task=task_id.task)

    def connected(self) -> bool:
        """Whether a host serves the task now: connected, not lost, its job running."""
        job = self._job
        return job is not None and not self.broken and job.alive()

    @property
    def job_tag(self) -> str:
        """The cancel tag of the hosting job serving the task ("" while it has none)."""
        job = self._job
        return "" if job is None else job.tag

    def open(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """Takes a host (a parked one, else a new job that connects within ``timeout``) and
        sends it what the task needs. Raises HostLostError if none connected in time."""
        self.broken = True  # until connected
        self._stopped_cleanly = False
        self._levels = 0
        job, adopted = self._hosts.take(self._id, timeout)
        try:
            build = HostBuild(
                self._id,
                self._factory,
                self._sys_path,
                SECRETS.among(_strings_in(self._args)),
                pickle.dumps(self._args, protocol=pickle.HIGHEST_PROTOCOL),
            )
            self._job = job
            self._send(("build", build))
        except BaseException:
            self._job = None
            job.end()
            raise
        self.host = job.hostname
        self.executor = job.executor
        self.broken = False
        self._log.info(
            "task_host_connected",
            host=job.hostname,
            pid=job.pid,
            adopted=adopted,
            job_tag=job.tag,
            executor=job.executor,
        )

    def call(self, name: str, *args: Any, timeout: float | None = None) -> Any:
        """Runs ``name`` on the host and returns its value; raises what it raised
        (``hosted_error``), or HostLostError if the host is gone or (with a ``timeout``)
        did not answer in time."""
        job = self._job
        if job is None:
            raise HostLostError("the task's host is not connected")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._calls.acquire(timeout=-1 if timeout is None else timeout):
            raise HostLostError(f"the task's host was busy for {timeout} s")
        try:
            return self._call(job, name, args, deadline)
        except HostLostError:
            self.broken = True
            raise
        finally:
            self._calls.release()

    def _call(self, job: HostJob, name: str, args: tuple[Any, ...], deadline: float | None) -> Any:
        version, levels = LEVELS_SET.snapshot()
        if version != self._levels:  # the levels first: the call may log at them
            self._send(("levels", levels))
            self._levels = version
        self._send(("call", name, args))
        while True:
            message = receive(job, deadline)
            kind = message[0]
            if kind == "ok":
                return message[1]
            if kind == "error":
                raise hosted_error(message[1], message[2])
            if kind == "ask":
                self._serve_question(message[1], message[2])

    def stop_plugin(self, connector_deleted: bool) -> None:
        """Runs the plugin's ``stop`` on the host (given up after STOP_TIMEOUT_S); only a
        stop that returned leaves the host fit for another task."""
        self.call("stop", connector_deleted, timeout=STOP_TIMEOUT_S)
        self._stopped_cleanly = True

    def _serve_question(self, name: str, args: tuple[Any, ...]) -> None:
        try:
            answer: tuple[Any, ...] = ("answer", self._answer(name, args))
        except Exception:
            answer = ("error", traceback.format_exc(), False)
        self._send(answer)

    def _send(self, message: tuple[Any, ...]) -> None:
        job = self._job
        if job is None:
            raise HostLostError("the task's host is not connected")
        try:
            with self._sends:
                job.conn.send(message)
        except OSError as exc:
            raise HostLostError(f"{job.ended()} ({exc!r})") from exc

    def mask(self, texts: Iterable[str]) -> None:
        """Tells the host which resolved config values occur in ``texts``, for its logs to
        mask them (nothing is sent when there are none)."""
        values = SECRETS.among(texts)
        if values:
            self._send(("mask", values))

    def interrupt(self) -> None:
        """Tells the host to give up its current wait (the task is stopping)."""
        with contextlib.suppress(HostLostError):
            self._send(("interrupt",))

    def close(self) -> None:
        """Lets go of the host: parked for the next task if the plugin stopped cleanly and
        the host was not lost, else its job is ended (cancelled if it does not end)."""
        job, self._job = self._job, None
        if job is None:
            return
        if self._stopped_cleanly and not self.broken:
            self._hosts.park(job, self._id)
        else:
            job.end()


class HostedPlugin(Task):
    """The driver's stand-in for a plugin that lives in its host: start and stop are run
    there (a stop that takes longer than STOP_TIMEOUT_S is abandoned)."""

    def __init__(self, link: HostLink) -> None:
        self._link = link
        self._config: dict[str, str] = {}

    def placement(self) -> TaskPlacement | None:
        """The executor the plugin lives on; None while it lives nowhere: before its host
        connected, and from the moment the driver learns the host is lost (its Spark job
        ended or failed, its connection broke) until a new host connected."""
        if not self._link.connected():
            return None
        return executor_placement(self._link.executor, self._link.host)

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._link.mask(self._config.values())
        self._link.call("start", self._config)

    def rehost_if_lost(self) -> bool:
        """After its host was lost: a new host, and a new plugin instance started there
        with the same config (the lost one could not be stopped, as after a crash).
        Returns whether it did; raises HostLostError if the new host is lost too."""
        if not self._link.broken:
            return False
        self._link.close()
        self._link.open()
        self._link.mask(self._config.values())
        self._link.call("start", self._config)
        return True

    def stop(self, connector_deleted: bool = False) -> None:
        self._link.stop_plugin(connector_deleted)

    def job_tag(self) -> str:
        """The cancel tag of the hosting job serving the plugin ("" while it has none)."""
        return self._link.job_tag


class HostedSinkPlugin(HostedPlugin, SinkTask):
    """A hosted sink plugin: its records are put by its host, never by the driver."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        raise TypeError("a hosted sink task's records are put by its host")


class ExecutorHost:
    """A ``task_host.TaskHost`` in an executor: the plugin lives in a long-running Spark
    task with an interpreter of its own (``serving``), reached through ``link``; a batch is
    one ``call`` there."""

    def __init__(self, link: HostLink, plugin: HostedPlugin) -> None:
        self.link = link
        self.plugin: HostedPlugin = plugin

    def open(self) -> None:
        self.link.open()

    def placement(self) -> TaskPlacement | None:
        return self.plugin.placement()

    def recover(self) -> bool:
        return self.plugin.rehost_if_lost()

    def interrupt(self) -> None:
        self.link.interrupt()

    def close(self) -> None:
        self.link.close()

    @property
    def broken(self) -> bool:
        """Whether the host was lost (a call now raises HostLostError)."""
        return self.link.broken

    def call(self, name: str, *args: Any) -> Any:
        """Runs ``name`` on the host (``HostLink.call``)."""
        return self.link.call(name, *args)

    def job_tag(self) -> str:
        """The cancel tag of the hosting job serving the task ("" while it has none)."""
        return self.plugin.job_tag()


def _strings_in(value: Any) -> list[str]:
    """The strings in ``value`` and in its tuples, lists, mappings (keys and values) and
    dataclass fields (a pipeline factory carries the resolved connector config)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.items() for text in _strings_in(item)]
    if isinstance(value, tuple | list):
        return [text for item in value for text in _strings_in(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            text
            for item in dataclasses.fields(value)
            for text in _strings_in(getattr(value, item.name))
        ]
    return []


def plugin_sys_path(plugin_path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(str(p) for p in plugin_path)


#: What a hosted exactly-once source asks the driver before it reads its offsets.
REFRESH_OFFSETS = "refresh_offsets"


def offset_answerer(
    get: Callable[[Mapping[str, Any]], Any], refresh: Callable[[], None]
) -> Answerer:
    """Answers a hosted source's offset reader from the driver's offset store: ``offset``
    (one partition's), and ``refresh_offsets`` (waits until the store has read every offset
    written so far)."""

    def answer(name: str, args: tuple[Any, ...]) -> Any:
        if name == "offset":
            return get(args[0])
        if name == REFRESH_OFFSETS:
            refresh()
            return None
        raise ValueError(f"unknown question {name!r}")

    return answer
