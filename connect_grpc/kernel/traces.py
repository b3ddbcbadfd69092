"""What a failure shows: the trace of a FAILED (or RETRYING) connector or task status, and
the one-line summary the error log gives of a failed record.

A status trace opens on one line that names the failure and, when it wraps another, its
root cause (``Tolerance exceeded in error handler: DataError: no converter for Struct``):
what a user reads in a status listing, where Kafka Connect shows the wrapper's class and
message only and leaves the cause to a ``Caused by:`` deep in the stack trace. Below it
comes the Python traceback of the chain, each exception's last frames only, and never a
frame's local variables (they hold configs and records); a failure reported by another
process (a task's host, Python's or Java's) shows the trace that process made instead.
"""

from __future__ import annotations

import traceback

__all__ = ["MAX_FRAMES", "CarriesTrace", "headline", "root_cause", "status_trace", "summary"]

#: Frames shown of each exception of a chain (its innermost ones: where it was raised).
MAX_FRAMES = 12


class CarriesTrace:
    """Marks an exception whose message is a status trace of its own, made where the
    failure happened (in another process: a task's host): its first line is that
    failure's headline, shown as it is."""


def root_cause(error: BaseException) -> BaseException:
    """The innermost explicit cause (``raise … from``) of ``error``; ``error`` itself if it
    has none. An implicit context (an error raised while handling another) is not a cause:
    the error raised last is then what went wrong, as Java's ``getCause`` chain reads."""
    seen = {id(error)}
    cause = error
    while cause.__cause__ is not None and id(cause.__cause__) not in seen:
        cause = cause.__cause__
        seen.add(id(cause))
    return cause


def type_name(error: BaseException) -> str:
    """``QualName`` for a built-in exception, else ``module.QualName``."""
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def first_line(error: BaseException) -> str:
    """The first line of the error's message (its type's name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type_name(error)


def _described(error: BaseException) -> str:
    """``<type>: <message's first line>``; a carried trace's own first line."""
    if isinstance(error, CarriesTrace):
        return first_line(error)
    text = str(error).strip()
    return f"{type_name(error)}: {text.splitlines()[0]}" if text else type_name(error)


def summary(error: BaseException) -> str:
    """One line: ``<type>: <message>`` of the error, then ``: <type>: <message>`` of its
    root cause when it has one."""
    line = _described(error)
    cause = root_cause(error)
    if cause is not error:
        line += f": {_described(cause)}"
    return line


def headline(error: BaseException) -> str:
    """A status trace's first line: the error's message, followed by its root cause's type
    and message when it wraps one (``Tolerance exceeded in error handler: <type>: <msg>``).
    An error with no cause shows its type and message."""
    cause = root_cause(error)
    if cause is error:
        return _described(error)
    return f"{first_line(error)}: {_described(cause)}"


def status_trace(error: BaseException, context: str = "") -> str:
    """The trace a FAILED or RETRYING status shows for ``error``: the headline (after
    ``context``, what was being done, when given), then the chain's traceback, each
    exception's last MAX_FRAMES frames, with no local variables. An error that carries the
    trace made where the failure happened (:class:`CarriesTrace`), and wraps nothing, shows
    that trace below the headline: the frames that only passed its news on to this process
    would stand between the headline and where the failure is."""
    first = f"{context}: {headline(error)}" if context else headline(error)
    if isinstance(error, CarriesTrace) and root_cause(error) is error:
        carried = str(error).strip().partition("\n")[2].rstrip("\n")
        return f"{first}\n{carried}" if carried else first
    frames = "".join(traceback.format_exception(error, limit=-MAX_FRAMES)).rstrip("\n")
    return f"{first}\n{frames}"
