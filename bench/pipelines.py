"""The record pipelines of ``bench/filestream.py --pipeline`` (issue 24's benchmark), shared
with ``bench/pipeline_micro.py``, which measures the same chains on one core."""

from __future__ import annotations

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
SMT = "org.apache.kafka.connect.transforms."
#: The connector configs of each ``--pipeline`` (added to the FileStream configs): the
#: source's, then the sink's.
PIPELINES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "none": ({}, {}),
    "json-smts": (
        {
            "value.converter": JSON_CONVERTER,
            "value.converter.schemas.enable": "true",
            "transforms": "hoist,insert,rename,mask",
            "transforms.hoist.type": SMT + "HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.insert.type": SMT + "InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "bench",
            "transforms.rename.type": SMT + "ReplaceField$Value",
            "transforms.rename.renames": "line:text",
            "transforms.mask.type": SMT + "MaskField$Value",
            "transforms.mask.fields": "origin",
        },
        {
            "value.converter": JSON_CONVERTER,
            "value.converter.schemas.enable": "true",
            "transforms": "insert,drop,mask",
            "transforms.insert.type": SMT + "InsertField$Value",
            "transforms.insert.static.field": "stage",
            "transforms.insert.static.value": "sink",
            "transforms.drop.type": SMT + "ReplaceField$Value",
            "transforms.drop.exclude": "origin",
            "transforms.mask.type": SMT + "MaskField$Value",
            "transforms.mask.fields": "stage",
            "transforms.mask.replacement": "***",
        },
    ),
}
