"""ConfigDef: parsing by type, per-key validation messages, defaults and descriptions."""

from __future__ import annotations

import pytest

from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    at_least,
    define_all,
    non_empty_list,
    non_empty_string,
)

DEF = define_all(
    [
        ConfigKey("host", ConfigType.STRING, "Host.", importance=Importance.HIGH,
                  validator=non_empty_string, group="Conn", order_in_group=1),
        ConfigKey("port", ConfigType.INT, "Port.", default=8080, validator=at_least(1),
                  group="Conn", order_in_group=2),
        ConfigKey("ratio", ConfigType.DOUBLE, "Ratio.", default=0.5),
        ConfigKey("enabled", ConfigType.BOOLEAN, "Enabled.", default=False, group="Misc"),
        ConfigKey("tags", ConfigType.LIST, "Tags.", default=["a", "b"], validator=non_empty_list),
        ConfigKey("secret", ConfigType.PASSWORD, "Secret.", default=None),
        ConfigKey("big", ConfigType.LONG, "Big.", default=0),
    ]
)


def test_valid_config_has_no_errors_for_any_key() -> None:
    assert DEF.validate({"host": "h"}) == {
        "host": [], "port": [], "ratio": [], "enabled": [], "tags": [], "secret": [], "big": []
    }


def test_missing_required_key() -> None:
    assert DEF.validate({})["host"] == [
        'Missing required configuration "host" which has no default value.'
    ]


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("port", "eighty", "Invalid value eighty for configuration port: Not a number of type INT"),
        ("big", "1.5", "Invalid value 1.5 for configuration big: Not a number of type LONG"),
        ("ratio", "half",
         "Invalid value half for configuration ratio: Not a number of type DOUBLE"),
        ("enabled", "yes", "Invalid value yes for configuration enabled: Expected value to be "
                           "either true or false"),
        ("port", "0", "Invalid value 0 for configuration port: Value must be at least 1"),
        ("host", "  ", "Invalid value    for configuration host: String must be non-empty"),
        ("tags", " , ", "Invalid value  ,  for configuration tags: List must be non-empty"),
    ],
)
def test_invalid_values_have_kafka_like_messages(key: str, raw: str, message: str) -> None:
    assert DEF.validate({"host": "h", key: raw})[key] == [message]


def test_parse_fills_defaults_and_converts_types() -> None:
    parsed = DEF.parse({"host": " h ", "port": "9092", "enabled": "TRUE", "tags": "x, y,,",
                        "big": str(2**63 - 1), "secret": " s "})
    assert parsed == {"host": "h", "port": 9092, "ratio": 0.5, "enabled": True,
                      "tags": ["x", "y"], "secret": " s ", "big": 2**63 - 1}


def test_parse_raises_with_every_problem() -> None:
    with pytest.raises(ValueError) as caught:
        DEF.parse({"port": "x"})
    assert "Missing required configuration \"host\"" in str(caught.value)
    assert "Not a number of type INT" in str(caught.value)


def test_describe_keys() -> None:
    infos = {info.name: info for info in DEF.describe()}
    assert infos["host"].required and infos["host"].default_value is None
    assert infos["host"].importance == "HIGH"
    assert infos["port"].default_value == "8080"
    assert infos["enabled"].default_value == "false"
    assert infos["tags"].default_value == "a,b"
    assert infos["secret"].default_value is None and not infos["secret"].required
    assert infos["port"].group == "Conn" and infos["port"].order_in_group == 2
    assert infos["port"].display_name == "port"
    assert DEF.groups() == ["Conn", "Misc"]


def test_define_twice_is_an_error() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        ConfigDef().define(ConfigKey("a", ConfigType.STRING, "A.")).define(
            ConfigKey("a", ConfigType.INT, "A again.")
        )


def test_merged_keeps_the_first_definition() -> None:
    first = define_all([ConfigKey("a", ConfigType.STRING, "first")])
    second = define_all([ConfigKey("a", ConfigType.INT, "second"),
                         ConfigKey("b", ConfigType.INT, "b")])
    merged = first.merged(second)
    assert list(merged.keys) == ["a", "b"]
    assert merged.keys["a"].documentation == "first"
    assert list(first.keys) == ["a"]
