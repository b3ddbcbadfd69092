"""Exactly-once source settings: the worker's ``exactly.once.source.support`` and a source
connector's ``exactly.once.support``, ``transaction.boundary``,
``transaction.boundary.interval.ms`` and ``offsets.storage.topic``, checked as Kafka
Connect's DistributedHerder checks them, plus the worker where exactly-once is disabled."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import ConnectorTransactionBoundaries, ExactlyOnceSupport
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.connectors.sequence import SequenceSourceConnector
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.errors import InvalidArgumentError

WORKER = {"bootstrap.servers": "localhost:9092"}


class DeclaringSource(SequenceSourceConnector):
    """A SequenceSource whose declarations the config chooses (``declare.*``)."""

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        declared = config.get("declare.exactly.once", "supported")
        if declared == "raise":
            raise RuntimeError("cannot tell without the database")
        return None if declared == "none" else ExactlyOnceSupport(declared)

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries(config.get("declare.boundaries", "unsupported"))


DECLARING = f"{__name__}.{DeclaringSource.__qualname__}"


def _validator(mode: str) -> ConfigValidator:
    return ConfigValidator(Plugins(include_testing=True, registered=(DeclaringSource,)), 8, mode)


def _errors(validator: ConfigValidator, **config: str) -> dict[str, list[str]]:
    full = {"connector.class": "SequenceSource", "topic": "t", **config}
    errors: dict[str, list[str]] = {}
    for key, message in validator.validate(full).all_errors():
        errors.setdefault(key, []).append(message)
    return errors


def test_required_on_a_worker_without_exactly_once_names_the_worker_property() -> None:
    for mode in ("disabled", "preparing"):
        errors = _errors(_validator(mode), **{"exactly.once.support": "required"})
        assert list(errors) == ["exactly.once.support"]
        (message,) = errors["exactly.once.support"]
        assert "This worker does not have exactly-once source support enabled" in message
        assert "exactly.once.source.support=enabled" in message


def test_required_on_an_enabled_worker_passes_for_a_plugin_that_declares_support() -> None:
    assert _errors(_validator("enabled"), **{"exactly.once.support": " REQUIRED "}) == {}


@pytest.mark.parametrize(
    ("declared", "says"),
    [
        ("none", "does not declare whether it supports exactly-once delivery"),
        ("unsupported", "does not support exactly-once semantics with the provided"),
        ("raise", "An unexpected error occurred during validation: cannot tell without"),
    ],
)
def test_required_on_a_plugin_without_declared_support_is_an_error(
    declared: str, says: str
) -> None:
    errors = _errors(
        _validator("enabled"),
        **{
            "connector.class": DECLARING,
            "exactly.once.support": "required",
            "declare.exactly.once": declared,
        },
    )
    assert list(errors) == ["exactly.once.support"]
    assert says in errors["exactly.once.support"][0]


def test_requested_never_asks_the_plugin() -> None:
    config = {"connector.class": DECLARING, "declare.exactly.once": "raise"}
    assert _errors(_validator("enabled"), **config) == {}
    assert _errors(_validator("disabled"), **config) == {}


def test_a_plugin_without_a_declaration_is_rejected_only_when_required() -> None:
    config = {"connector.class": "InstrumentedSource"}
    assert _errors(_validator("enabled"), **config) == {}
    required = {**config, "exactly.once.support": "required"}
    assert "does not declare" in _errors(_validator("enabled"), **required)[
        "exactly.once.support"
    ][0]


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("exactly.once.support", "always",
         "String must be one of (case insensitive): requested, required"),
        ("transaction.boundary", "batch",
         "String must be one of (case insensitive): poll, interval, connector"),
        ("transaction.boundary.interval.ms", "-1", "Value must be at least 0"),
        ("transaction.boundary.interval.ms", "1s", "Not a number of type LONG"),
        ("offsets.storage.topic", " ", "String must be non-empty"),
        ("offsets.storage.topic", "my offsets", "is illegal"),
    ],
)
def test_malformed_settings_are_errors_on_their_field(key: str, value: str, says: str) -> None:
    errors = _errors(_validator("enabled"), **{key: value})
    assert list(errors) == [key]
    assert says in errors[key][0]
    assert f"Invalid value {value} for configuration {key}" in errors[key][0]


def test_connector_boundaries_need_a_plugin_that_can_define_them() -> None:
    errors = _errors(_validator("enabled"), **{"transaction.boundary": "Connector"})
    assert list(errors) == ["transaction.boundary"]
    assert "does not support connector-defined transaction boundaries" in errors[
        "transaction.boundary"
    ][0]
    config = {
        "connector.class": DECLARING,
        "transaction.boundary": "connector",
        "declare.boundaries": "supported",
    }
    assert _errors(_validator("enabled"), **config) == {}


@pytest.mark.parametrize("boundary", ["interval", "connector"])
def test_a_transaction_boundary_on_a_worker_with_exactly_once_disabled_is_an_error(
    boundary: str,
) -> None:
    config = {
        "connector.class": DECLARING,
        "transaction.boundary": boundary,
        "declare.boundaries": "supported",
    }
    errors = _errors(_validator("disabled"), **config)
    assert list(errors) == ["transaction.boundary"]
    assert "does not have exactly-once source support enabled" in errors[
        "transaction.boundary"
    ][0]
    assert _errors(_validator("preparing"), **config) == {}  # set before turning it on


def test_a_connectors_own_offsets_topic_is_accepted_in_every_mode() -> None:
    config = {"offsets.storage.topic": "my-offsets"}
    for mode in ("disabled", "preparing", "enabled"):
        assert _errors(_validator(mode), **config) == {}


def test_validate_config_shows_the_settings_of_sources_only() -> None:
    validator = _validator("enabled")
    source = validator.validate({"connector.class": "SequenceSource", "topic": "t"})
    assert "Exactly Once Support" in source.groups
    shown = {info.value.name: info for info in source.configs}
    assert shown["exactly.once.support"].definition is not None
    assert shown["exactly.once.support"].definition.default_value == "requested"
    assert shown["transaction.boundary"].definition is not None
    assert shown["transaction.boundary"].definition.default_value == "poll"
    assert "transaction.boundary.interval.ms" in shown
    assert "offsets.storage.topic" in shown
    sink = validator.validate(
        {"connector.class": "FileStreamSink", "file": "/tmp/x", "topics": "t"}
    )
    assert "Exactly Once Support" not in sink.groups
    assert not any(info.value.name == "exactly.once.support" for info in sink.configs)


def test_create_is_refused_with_the_field_named() -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        _validator("disabled").ensure_valid(
            {"connector.class": "SequenceSource", "topic": "t", "exactly.once.support": "required"}
        )
    assert [v.field for v in raised.value.violations] == ["config.exactly.once.support"]


def test_the_worker_property_is_disabled_by_default_and_parsed_like_kafka() -> None:
    assert WorkerConfig.from_properties(WORKER).exactly_once_source == "disabled"
    for value in ("disabled", "preparing", "enabled"):
        parsed = WorkerConfig.from_properties(
            {**WORKER, "exactly.once.source.support": f" {value} "}
        )
        assert parsed.exactly_once_source == value
    assert WorkerConfig.from_properties(
        {**WORKER, "exactly.once.source.support": "enabled"}
    ).exactly_once_source_enabled
    for bad in ("Enabled", "on", ""):
        with pytest.raises(InvalidArgumentError) as raised:
            WorkerConfig.from_properties({**WORKER, "exactly.once.source.support": bad})
        assert [v.field for v in raised.value.violations] == ["exactly.once.source.support"]


def test_a_standalone_worker_refuses_exactly_once_source_support(tmp_path: Path) -> None:
    offsets = str(tmp_path / "offsets")
    base = {**WORKER, "offset.storage.file.filename": offsets}
    enabled = WorkerConfig.from_properties({**base, "exactly.once.source.support": "enabled"})
    with pytest.raises(InvalidArgumentError) as raised:
        enabled.standalone_offset_file()
    assert [v.field for v in raised.value.violations] == ["exactly.once.source.support"]
    assert "only in distributed mode" in raised.value.message
    preparing = WorkerConfig.from_properties(
        {**base, "exactly.once.source.support": "preparing"}
    )
    assert preparing.standalone_offset_file() == Path(offsets)


