"""Hosted tasks: a task's plugin lives in one long-running Spark task, which moves every
batch in its own Python worker (poll and produce, or read and put) with clients it keeps.

The driver keeps the task's state machine (``TaskRunner``: statuses, pause, retries, the
source offsets and the sink group's commits) and drives the host through a connection of
its own: the Spark task connects back to a listener the driver opened for it, proving it
with a one-off key (``multiprocessing.connection``'s HMAC handshake) before anything is
unpickled. Each batch is then one round trip, not one Spark job, and the records never
travel through the driver or the Spark JVM; two hosted tasks run in two interpreters.

Messages (tuples): the host first says where it runs, ``("host", hostname, pid,
executor id)``; the
driver answers ``("build", HostBuild)``: everything task-specific (the host factory's name
and arguments, pickled so that they are read once the plugin path is on ``sys.path``: the
task's client configs travel over this connection, never in the Spark job's closure; the
plugin path; the values resolved from config references that the host's logs must mask,
see ``config_providers.redaction``). Then it sends ``("call", name, args)``, ``("mask",
values)`` before a plugin starts, ``("levels", table)`` before a call once the worker's
log levels changed (``loggers.LEVELS_SET``) and, from any thread, ``("interrupt",)`` (the
task is stopping: the host gives up its current wait); the host answers a call with ``("ok",
value)`` or ``("error", trace, retriable)``, and may first ask the driver something with
``("ask", name, args)`` (a source's offset reader), which the driver answers with
``("answer", value)`` or ``("error", trace, False)``.

Warm hosts: a task whose plugin stopped cleanly (its ``stop`` returned in time) leaves its
host *parked*: the Spark job goes on, its Spark task waits for the driver's next
``("build", ...)``, and the next task that this worker hosts adopts it (``WarmHosts``)
instead of launching a Spark job, which costs most of a task's start. A parked host sits
on a Spark task slot that ``HostSlots`` counts as free, so the next task given that slot
adopts it rather than launching a job that would wait for it; it is ended when it stayed
unused for PARKED_IDLE_S, when the slots have no room for it, or when the worker stops. A
host that was lost, or whose plugin's stop failed or timed out, is never reused: its job
is ended.

Its modules: ``slots`` (which tasks hold a Spark task slot, and the watcher that moves
waiting tasks into hosts), ``jobs`` (launching a hosting Spark job, the warm hosts between
tasks), ``link`` (the driver's end of one hosted task), ``serving`` (the host's end, in the
executor's Python worker).
"""
