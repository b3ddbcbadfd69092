"""The task pipeline against Kafka Connect's per-stage path, on random cases.

A task's ``TaskPipeline`` runs a chain of SideTransformations compiled per input schema,
falling back to each stage's ``apply_side``/``apply`` when a compiled step raises; with
predicates or other SMTs it calls each stage in turn. Whatever it does, the outcome must be
what Kafka Connect's runtime makes of the same records: each stage's predicate then
``apply``, one call at a time through a RetryWithToleranceOperator (``TransformationChain``),
with the converters around it in WorkerSinkTask's and AbstractWorkerSourceTask's orders.
``_differential_reference.Reference`` is that path, written from the reference (§1.1-§1.4),
with the runtime's own operator and reporters (the log, the dead-letter queue).

Cases (``_differential_cases``, on ``_differential_data``'s records): a chain of 1-5 of the
16 SMTs, their predicates (with ``negate``) and ``errors.*`` (tolerance none or all, the
log, a dead-letter queue), and 2-6 records of one or two random schemas (nested structs,
arrays, maps, every primitive and logical type, optional or not, defaults, names, versions,
docs, parameters; nulls here and there; the compiled chains are kept per schema, so the
records after the first take them).
Two properties: any chain on any records, and a chain the pipeline compiles on records it
takes (structs without a null, MaskField on their fields: a compiled mask that gives what
``apply`` would not, the zero of a type it refuses or the mask of another field, shows).
Each case runs both ways (``apply_source``; ``sink_batch`` on JsonConverter bytes, in two
batches), through a pipeline built as a task builds it and through the reference, each
with plugins of its own. Compared: the records (every field; schemas with their names,
versions, docs, parameters and defaults; values with their Python types; headers), their
JsonConverter bytes, the error the call raises (type, message, cause), what the log gets,
what the dead-letter queue's producer is given, and the error counts.

Hypothesis runs ``EXAMPLES`` cases per property, derandomized (the same cases on every run:
no flaky CI), without an example database; ``PIPELINE_DIFFERENTIAL_EXAMPLES=<n>`` runs
``n`` new random cases instead, to explore.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import BYTES_SCHEMA, INT32_SCHEMA, SchemaBuilder
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._support import compile_chain
from connect_grpc.data.transforms.insert_field import InsertFieldValue
from connect_grpc.data.transforms.mask_field import MaskFieldValue
from connect_grpc.data.transforms.replace_field import ReplaceFieldValue
from tests.unit._differential_cases import Case, Errors, compiled_cases, general_cases, one
from tests.unit._differential_cases import Stage as SmtStage
from tests.unit._differential_data import RecordData
from tests.unit._differential_reference import Outcome, assert_agrees

EXAMPLES = int(os.environ.get("PIPELINE_DIFFERENTIAL_EXAMPLES", "150"))
EXPLORING = "PIPELINE_DIFFERENTIAL_EXAMPLES" in os.environ

DIFFERENTIAL = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not EXPLORING,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)


# ---- the known cases -------------------------------------------------------------------------

A_INT32 = SchemaBuilder.struct().field("a", INT32_SCHEMA).build()
OPTIONAL_A_INT32 = SchemaBuilder.struct().field("a", INT32_SCHEMA).optional().build()
A_INT32_B_BYTES = SchemaBuilder.struct().field("a", INT32_SCHEMA).field("b", BYTES_SCHEMA).build()
LOGGED_TO_DLQ = Errors(tolerate_all=True, log_enable=True, include_messages=False, dlq=True,
                       context_headers=True)
FAILING = dataclasses.replace(LOGGED_TO_DLQ, tolerate_all=False)


def _case(chain: list[SmtStage], errors: Errors, *records: RecordData) -> Case:
    return Case(chain, errors, list(records))


#: InsertField adding a field the struct has: SchemaBuilder refuses the duplicate (a
#: DataException in the operator), so the record is skipped, logged and sent to the queue.
INSERT_EXISTING_FIELD = _case(
    [SmtStage("InsertField$Value", {"static.field": "a", "static.value": "v"})], LOGGED_TO_DLQ,
    one(A_INT32, Struct(A_INT32).put("a", 1)), one(A_INT32, Struct(A_INT32).put("a", 2)),
)
#: The same on a null key of an optional struct: a null passes before any schema is built.
INSERT_KEY_ON_NULL = _case(
    [SmtStage("InsertField$Key", {"static.field": "a", "static.value": "v"})], LOGGED_TO_DLQ,
    one(A_INT32, Struct(A_INT32).put("a", 1), key_schema=OPTIONAL_A_INT32, key=None),
    one(A_INT32, Struct(A_INT32).put("a", 2), key_schema=OPTIONAL_A_INT32, key=None),
)
#: ReplaceField renaming onto a field the struct has, on a null optional struct: passed on.
RENAME_ON_NULL = _case(
    [SmtStage("ReplaceField$Value", {"renames": "a:b"})], LOGGED_TO_DLQ,
    one(SchemaBuilder.struct().field("a", INT32_SCHEMA).field("b", INT32_SCHEMA).optional()
        .build(), None),
    one(OPTIONAL_A_INT32, None),
)
#: MaskField refusing a bytes field that the next stage drops: the record fails at MaskField.
MASK_DROPPED_FIELD = _case(
    [SmtStage("MaskField$Value", {"fields": "b"}),
     SmtStage("ReplaceField$Value", {"exclude": "b"})], LOGGED_TO_DLQ,
    one(A_INT32_B_BYTES, Struct(A_INT32_B_BYTES).put("a", 1).put("b", b"x")),
    one(A_INT32_B_BYTES, Struct(A_INT32_B_BYTES).put("a", 2).put("b", b"y")),
)
KNOWN = {
    "insert_existing_field": INSERT_EXISTING_FIELD,
    "insert_key_on_null": INSERT_KEY_ON_NULL,
    "rename_on_null": RENAME_ON_NULL,
    "mask_dropped_field": MASK_DROPPED_FIELD,
}


def failures(outcome: Outcome) -> list[tuple[bytes | None, ...]]:
    """Each failure as the dead-letter queue's context headers say it: the stage, the
    class, the exception's class and message."""
    wanted = ("stage", "class.name", "exception.class.name", "exception.message")
    return [
        tuple(dict(message["headers"]).get(f"__connect.errors.{name}") for name in wanted)
        for message in outcome.dead_letters
    ]


@pytest.mark.parametrize("is_sink", [False, True], ids=["source", "sink"])
def test_a_schema_an_smt_refuses_skips_the_record_with_tolerance_all(is_sink: bool) -> None:
    outcome = assert_agrees(INSERT_EXISTING_FIELD, is_sink)
    assert outcome.error is None
    assert [r for r in outcome.records if r is not None] == []
    assert failures(outcome) == [
        (b"TRANSFORMATION", b"org.apache.kafka.connect.transforms.InsertField$Value",
         b"org.apache.kafka.connect.errors.SchemaBuilderException",
         b"Cannot create field because of field name duplication a"),
    ] * 2
    assert len([e for e in outcome.logged if ("event", "record_failed") in e]) == 2
    assert outcome.counts[1:3] == (2, 2)  # errors, skipped


@pytest.mark.parametrize("is_sink", [False, True], ids=["source", "sink"])
def test_a_schema_an_smt_refuses_fails_the_task_with_tolerance_none(is_sink: bool) -> None:
    outcome = assert_agrees(dataclasses.replace(INSERT_EXISTING_FIELD, errors=FAILING), is_sink)
    assert outcome.error == (
        "ErrorHandlerError", "Tolerance exceeded in error handler", "SchemaBuilderError",
        "Cannot create field because of field name duplication a")
    assert len(failures(outcome)) == 1  # reported (logged and queued), then raised
    assert len([e for e in outcome.logged if ("event", "record_failed") in e]) == 1


@pytest.mark.parametrize("is_sink", [False, True], ids=["source", "sink"])
@pytest.mark.parametrize("name", ["insert_key_on_null", "rename_on_null"])
def test_a_null_passes_an_smt_whose_schema_it_would_refuse(name: str, is_sink: bool) -> None:
    outcome = assert_agrees(KNOWN[name], is_sink)
    assert outcome.error is None and outcome.logged == [] and outcome.dead_letters == []
    assert len([r for r in outcome.records if r is not None]) == 2


@pytest.mark.parametrize("is_sink", [False, True], ids=["source", "sink"])
def test_a_mask_error_on_a_field_a_later_stage_drops_fails_the_record(is_sink: bool) -> None:
    outcome = assert_agrees(MASK_DROPPED_FIELD, is_sink)
    assert [r for r in outcome.records if r is not None] == []
    assert failures(outcome) == [
        (b"TRANSFORMATION", b"org.apache.kafka.connect.transforms.MaskField$Value",
         b"org.apache.kafka.connect.errors.DataException",
         b"Cannot mask value of type: class bytes"),
    ] * 2


def _configured(cls: type[Any], config: dict[str, str]) -> Any:
    transformation = cls()
    transformation.configure(config)
    return transformation


def test_a_mask_a_later_stage_drops_ends_the_compiled_step_there() -> None:
    chain = [_configured(MaskFieldValue, {"fields": "b"}),
             _configured(ReplaceFieldValue, {"exclude": "b"}),
             _configured(InsertFieldValue, {"static.field": "s", "static.value": "v"})]
    compiled = compile_chain(chain, A_INT32_B_BYTES)
    assert compiled is not None
    output, steps = compiled
    assert [f.name for f in output.fields] == ["a", "s"]
    assert len(steps) == 2  # the mask's step, then the other two stages' plans composed
    value = Struct(A_INT32_B_BYTES).put("a", 1).put("b", b"x")
    with pytest.raises(DataError, match="Cannot mask value of type: class bytes"):
        steps[0](None, value)  # the record fails at MaskField, as its apply makes it


def test_a_schema_a_stage_refuses_compiles_to_no_chain() -> None:
    insert = _configured(InsertFieldValue, {"static.field": "a", "static.value": "v"})
    assert compile_chain([insert], A_INT32) is None
    assert compile_chain([insert], None) is None


# ---- the properties --------------------------------------------------------------------------


def _both_directions(case: Case) -> None:
    assert_agrees(case, is_sink=False)
    assert_agrees(case, is_sink=True)


@DIFFERENTIAL
@given(case=general_cases())
@example(case=INSERT_EXISTING_FIELD)
@example(case=INSERT_KEY_ON_NULL)
@example(case=RENAME_ON_NULL)
@example(case=MASK_DROPPED_FIELD)
def test_the_task_pipeline_makes_what_kafka_connect_s_stages_make(case: Case) -> None:
    _both_directions(case)


@DIFFERENTIAL
@given(case=compiled_cases())
def test_a_compiled_chain_makes_what_kafka_connect_s_stages_make(case: Case) -> None:
    _both_directions(case)
