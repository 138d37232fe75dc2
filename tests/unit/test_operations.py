"""The operation declarations: one input path for forms and JSON, and the document they give."""

from __future__ import annotations

import json

import pytest
from django.http import QueryDict
from django.test import RequestFactory

from dashboard.operations.declare import read_form, read_json
from dashboard.operations.dlq import Export, Replay
from dashboard.operations.groups import Move
from dashboard.operations.openapi import document
from dashboard.operations.registry import OPERATIONS


def test_a_form_reads_as_json_would_send_it() -> None:
    form = QueryDict("reason=why&force=on&target_topic=&target_partition=")
    assert read_form(form, Replay) == {"reason": "why", "force": True, "target_topic": ""}
    assert read_form(QueryDict("ids=1-0&ids=2-0"), Export) == {"ids": ["1-0", "2-0"]}


def test_a_json_body_is_strictly_typed_with_a_clear_error() -> None:
    def body(data: object) -> object:
        request = RequestFactory().post("/", json.dumps(data), content_type="application/json")
        return read_json(request, Replay)

    assert body({"reason": "r", "target_partition": 2}) == Replay(reason="r", target_partition=2)
    with pytest.raises(ValueError, match=r"^reason: Expected `str`, got `int`"):
        body({"reason": 5})
    with pytest.raises(ValueError, match=r"^target_partition: Expected `int` >= 0"):
        body({"target_partition": -1})
    with pytest.raises(ValueError, match="body must be a JSON object"):
        body([1])
    request = RequestFactory().post("/", "{}", content_type="application/json")
    with pytest.raises(ValueError, match="missing required field `target`"):
        read_json(request, Move)


def test_every_page_has_a_twin_and_every_name_is_unique() -> None:
    names = [p.name for op in OPERATIONS for p in op.pages]
    names += [op.api.name for op in OPERATIONS if op.api is not None]
    assert len(names) == len(set(names))
    assert all(op.api is not None or op.twin for op in OPERATIONS)
    inputs = {op.input for op in OPERATIONS}
    assert len({i.__name__ for i in inputs}) == len(inputs)  # one schema name per input


def test_the_document_comes_from_the_declarations() -> None:
    doc = document()
    move = doc["paths"]["/api/v1/clusters/{cluster}/topics/{topic}/groups/{group}/position"]
    op = move["post"]
    assert op["operationId"] == "api-group-position"
    assert op["description"] == "Role: Admin or above."
    assert op["tags"] == ["groups"]
    ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(schema["properties"]) == {"target", "partitions", "reason", "confirm", "force"}
    hot = doc["paths"]["/api/v1/clusters/{cluster}/topics/{topic}/partitions/{partition}/hot-keys"]
    params = {p["name"]: p for p in hot["get"]["parameters"]}
    assert params["partition"]["schema"] == {"type": "integer"}
    assert params["count"]["in"] == "query"
    assert "sampled" in params["count"]["description"]
    replay = doc["paths"]["/api/v1/clusters/{cluster}/topics/{topic}/dlq/{dlq_id}/replay"]
    assert replay["post"]["description"] == "Role: Operator or above."


def test_a_declared_name_replaces_its_hand_written_row() -> None:
    ids = [op["operationId"] for ops in document()["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
