"""The task classes a Java connector's stand-in names: a Java task is not a Python object,
so the worker is given one of these as the connector's ``task_class()``, and runs the task
(its class is the task config's ``task.class``) in a JVM host instead of a Python one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect_grpc.connectors.api import SinkRecord, SinkTask, SourceRecord, SourceTask

__all__ = ["JavaSinkTask", "JavaSourceTask", "is_java_task"]

#: The task config key naming a task's Java class, as Kafka Connect writes it.
TASK_CLASS = "task.class"


class _NotInPython:
    """Refuses to run in Python: the task lives in a JVM."""

    def version(self) -> str:
        return ""

    def start(self, config: Mapping[str, str]) -> None:
        raise TypeError(
            f"the Java task {config.get(TASK_CLASS, '')} runs in a JVM host, not in Python"
        )

    def stop(self, connector_deleted: bool = False) -> None:
        return None


class JavaSourceTask(_NotInPython, SourceTask):
    """Stands for a Java connector's source task."""

    def poll(self, max_records: int) -> list[SourceRecord]:
        raise TypeError("a Java source task is polled in its JVM host")


class JavaSinkTask(_NotInPython, SinkTask):
    """Stands for a Java connector's sink task."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        raise TypeError("a Java sink task is given records in its JVM host")


def is_java_task(task_class: type) -> bool:
    """Whether a connector's task class stands for a Java task."""
    return issubclass(task_class, (JavaSourceTask, JavaSinkTask))
