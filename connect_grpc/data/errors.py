"""Errors of the data model and of the pipeline's plugins."""

from __future__ import annotations


class DataError(Exception):
    """A value does not fit its schema, or data cannot be converted (Kafka Connect's
    DataException). Raised by schemas, structs, converters and transformations."""


class SchemaBuilderError(DataError):
    """A schema builder was used wrongly (Kafka Connect's SchemaBuilderException)."""


class RetriableError(Exception):
    """A failure expected to pass (Kafka Connect's RetriableException).

    Raised by a task's ``poll``, ``put`` or ``flush``: the task shows RETRYING and the call
    is made again after a back-off (``put`` with the same records), within
    ``task.retry.timeout.ms``. Raised by a converter, transformation or predicate: the
    record's stage is retried within ``errors.retry.timeout`` and then skipped (even with
    ``errors.tolerance=none``, as Kafka Connect does). Any other exception fails the task,
    or, in a converter or transformation, is handled by ``errors.tolerance``.
    """
