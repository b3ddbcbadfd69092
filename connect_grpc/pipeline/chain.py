"""The transformation stages of a task's pipeline, each behind its predicate, and their
fast path: a chain of SideTransformations of one side, without predicates, runs on the
side's (schema, value) pairs, compiled once per input schema where it can be, and makes one
record at the end instead of one a stage.

A stage that raises is handed to the task's error handling (``_recover``, which
``record_stages.RecordStages`` gives to the RetryWithToleranceOperator); the stages after it
then run one by one.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from typing import Any

from connect_grpc.data.record import ConnectRecord
from connect_grpc.data.transforms._support import (
    CompiledChain,
    SideTransformation,
    compile_chain,
)
from connect_grpc.pipeline.build import TransformStage
from connect_grpc.pipeline.tolerance import Stage, class_name

__all__ = ["CHAINS_CACHE_SIZE", "TransformChain", "predicate_allows"]

#: How many input schemas a task's chain of SideTransformations keeps compiled steps for.
CHAINS_CACHE_SIZE = 64
_NO_SCHEMA: Any = object()


def predicate_allows(stage: TransformStage, record: ConnectRecord) -> bool:
    """Whether the stage's transformation applies to the record: no predicate, or the
    predicate's test XOR ``negate`` (Kafka Connect's TransformationStage)."""
    predicate = stage.predicate
    return predicate is None or stage.negate != bool(predicate.test(record))


def _apply_stage(stage: TransformStage, record: ConnectRecord) -> ConnectRecord | None:
    if predicate_allows(stage, record):
        result: ConnectRecord | None = stage.transformation.apply(record)
        return result
    return record


class TransformChain(abc.ABC):
    """A task's transformation stages; the base of its RecordStages, which gives it its
    error handling (``_recover``) and runs its records through ``_transform``."""

    def __init__(self, stages: Sequence[TransformStage]) -> None:
        self._stages = list(stages)
        #: Each stage's call (the transformation's own apply when it has no predicate)
        #: with its class name.
        self._appliers: list[tuple[Callable[[Any], Any], str]] = [
            (
                stage.transformation.apply
                if stage.predicate is None
                else functools.partial(_apply_stage, stage),
                class_name(stage.transformation),
            )
            for stage in self._stages
        ]
        #: With every stage a SideTransformation of one side and without predicate: the
        #: stages' ``apply_side``, run on (schema, value) pairs (see ``_transform_side``).
        self._side_steps: list[Callable[[Any, Any, Any], tuple[Any, Any]]] | None = None
        self._side_is_key = False
        transformations = [stage.transformation for stage in self._stages]
        if (
            transformations
            and all(stage.predicate is None for stage in self._stages)
            and all(isinstance(t, SideTransformation) for t in transformations)
            and len({t.side.is_key for t in transformations}) == 1  # type: ignore[attr-defined]
        ):
            self._side_steps = [t.apply_side for t in transformations]  # type: ignore[attr-defined]
            self._side_is_key = transformations[0].side.is_key  # type: ignore[attr-defined]
        #: The chain's compiled steps per input schema (``_compiled_chain``).
        self._chains: dict[Any, CompiledChain | None] = {}
        self._last_chain: tuple[Any, CompiledChain | None] = (_NO_SCHEMA, None)

    @abc.abstractmethod
    def _recover(
        self,
        original: Any,
        operation: Callable[[], Any],
        stage: Stage,
        name: str,
        error: Exception,
        target_topic: str | None = None,
    ) -> Any:
        """The stage's result after its first failure (retried, tolerated or raised, as the
        task's error handling decides); None if the record failed."""

    def _transform(self, record: Any, original: Any = None) -> Any:
        """The record through every stage (None once one drops it or fails); ``original``
        is what a failure reports (the record itself when None: a source's polled record)."""
        if self._side_steps is not None:
            return self._transform_side(record, original)
        return self._transform_from(0, record, record if original is None else original)

    def _transform_side(self, record: Any, original: Any) -> Any:
        """``_transform`` for a chain of SideTransformations on one side: the chain's steps
        compiled for the record's schema when they take its value, else each stage's
        ``apply_side`` on the (schema, value) the stage before made; one record made at the
        end, with what each stage's ``apply`` would have made in turn. A stage that raises
        gets the record it would have had, and the stages after it run as
        ``_transform_from`` runs them."""
        result = self._side_result(record, original)
        if result.__class__ is not tuple:
            return result
        is_key = self._side_is_key
        if is_key:
            return self._with_side(record, True, record.key_schema, record.key, *result)
        return self._with_side(record, False, record.value_schema, record.value, *result)

    def _side_result(self, record: Any, original: Any) -> Any:
        """What the chain of SideTransformations makes of the record's side: (schema,
        value) when no stage raised, else what ``_transform_from`` made of the record (a
        record, or None)."""
        is_key = self._side_is_key
        if is_key:
            schema, value = record.key_schema, record.key
        else:
            schema, value = record.value_schema, record.value
        first_schema, first_value = schema, value
        last = self._last_chain
        chain = last[1] if last[0] is schema else self._compiled_chain(schema)
        if chain is not None:
            try:
                for compiled in chain[1]:
                    value = compiled(record, value)
            except Exception:
                value = first_value  # apply_side decides below, and raises what it raises
            else:
                return chain[0], value
        for index, step in enumerate(self._side_steps or ()):
            try:
                schema, value = step(record, schema, value)
            except Exception:
                current = self._with_side(record, is_key, first_schema, first_value, schema, value)
                return self._transform_from(
                    index, current, record if original is None else original
                )
        return schema, value

    def _compiled_chain(self, schema: Any) -> CompiledChain | None:
        """The output schema and the compiled steps of the chain for values of ``schema``
        (``compile_chain``), or None (then each stage's ``apply_side`` runs); worked out
        once per schema, a schema the chain cannot be compiled for included."""
        if schema in self._chains:
            chain = self._chains[schema]
        else:
            transformations: Any = [stage.transformation for stage in self._stages]
            chain = compile_chain(transformations, schema)
            if len(self._chains) >= CHAINS_CACHE_SIZE:
                self._chains.clear()  # a stream of ever-new schemas: start afresh
            self._chains[schema] = chain
        self._last_chain = (schema, chain)
        return chain

    @staticmethod
    def _with_side(
        record: Any, is_key: bool, old_schema: Any, old_value: Any, schema: Any, value: Any
    ) -> Any:
        """The record with its key or value side replaced (itself when nothing changed)."""
        if value is old_value and schema is old_schema:
            return record
        if is_key:
            return record.new_record(key_schema=schema, key=value)
        return record.new_record(value_schema=schema, value=value)

    def _transform_from(self, start: int, record: Any, first: Any) -> Any:
        """The record through the stages from ``start`` on, each called in turn; ``first``
        is what a failure reports."""
        for apply, name in self._appliers[start:]:
            try:
                record = apply(record)
            except Exception as error:
                record = self._recover(
                    first,
                    functools.partial(apply, record),
                    Stage.TRANSFORMATION,
                    name,
                    error,
                )
            if record is None:
                return None
        return record
