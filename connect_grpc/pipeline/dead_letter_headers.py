"""The ``__connect.errors.*`` headers of a record in a dead-letter queue
(``errors.deadletterqueue.context.headers.enable``): where and why it failed, under Kafka
Connect's names, which the tools reading a queue rely on. ``pipeline.dead_letter`` writes
them; ``ctl dlq`` and ``ctl preview`` show them."""

from __future__ import annotations

HEADER_PREFIX = "__connect.errors."
ERROR_HEADER_ORIG_TOPIC = HEADER_PREFIX + "topic"
ERROR_HEADER_ORIG_PARTITION = HEADER_PREFIX + "partition"
ERROR_HEADER_ORIG_OFFSET = HEADER_PREFIX + "offset"
ERROR_HEADER_CONNECTOR_NAME = HEADER_PREFIX + "connector.name"
ERROR_HEADER_TASK_ID = HEADER_PREFIX + "task.id"
ERROR_HEADER_STAGE = HEADER_PREFIX + "stage"
ERROR_HEADER_EXECUTING_CLASS = HEADER_PREFIX + "class.name"
ERROR_HEADER_EXCEPTION = HEADER_PREFIX + "exception.class.name"
ERROR_HEADER_EXCEPTION_MESSAGE = HEADER_PREFIX + "exception.message"
ERROR_HEADER_EXCEPTION_STACK_TRACE = HEADER_PREFIX + "exception.stacktrace"

#: Every header, in the order they are written: a sink record's failure with an exception
#: has them all (a source record's has no offset, nor a partition unless it names one).
CONTEXT_HEADERS = (
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_ORIG_PARTITION,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_CONNECTOR_NAME,
    ERROR_HEADER_TASK_ID,
    ERROR_HEADER_STAGE,
    ERROR_HEADER_EXECUTING_CLASS,
    ERROR_HEADER_EXCEPTION,
    ERROR_HEADER_EXCEPTION_MESSAGE,
    ERROR_HEADER_EXCEPTION_STACK_TRACE,
)
