"""Argument schemas: JSON Schema 2020-12, compiled once at registration, never fetching a
resource; what the check refuses is said as ``<kind> @ <path>`` in host words."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl, tool
from nr_llm_core._schema import MAX_SCHEMA_REFERENCES
from nr_llm_core.errors import ToolLoadError


class Echo:
    """A tool with the given schema that records the arguments it was called with."""

    def __init__(self, parameters: dict[str, Any], name: str = "echo") -> None:
        self.parameters = parameters
        self.name = name
        self.calls: list[Any] = []

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(self.name, "Echo.", self.parameters)

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult.text("ok")


def obj(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **more}


def host_for(parameters: dict[str, Any]) -> tuple[ToolHost, Echo]:
    echo = Echo(parameters)
    host = ToolHost()
    host.register(echo)
    return host, echo


def reason(host: ToolHost, arguments: Any) -> str:
    """The invalid-arguments reason (the text after the tool name)."""
    content = host.invoke("echo", arguments).content
    prefix = 'Error: invalid arguments for tool "echo": '
    assert content.startswith(prefix), content
    return content[len(prefix) :]


def refusal(parameters: dict[str, Any]) -> str:
    with pytest.raises(ToolLoadError) as raised:
        ToolHost().register(Echo(parameters))
    return raised.value.reason


# -- no resource outside the schema is fetched ----------------------------------------------------


class Recorder:
    """An HTTP server on 127.0.0.1 that records every request, whatever its method."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the stdlib's name
                recorder.paths.append(self.path)
                body = b'{"type": "string"}'
                self.send_response(200)
                self.send_header("content-type", "application/schema+json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_HEAD = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


OUTSIDE = (
    "refer to a schema outside themselves ({}); remote and file references are refused: "
    'use local ones ("#/$defs/...")'
)


def test_a_ref_to_a_local_http_server_is_refused_and_never_requested(recorder: Recorder) -> None:
    schema = obj({"a": {"$ref": f"{recorder.url}/schema.json"}})
    assert refusal(schema) == "parameters of 'echo' " + OUTSIDE.format("http URI")
    assert recorder.paths == []


def test_an_unknown_meta_schema_is_refused_and_never_requested(recorder: Recorder) -> None:
    schema = {"$schema": f"{recorder.url}/meta", **obj({})}
    assert refusal(schema) == (
        """parameters of 'echo' declare an unknown "$schema" (a published JSON Schema """
        "draft, or none for 2020-12; nothing is fetched)"
    )
    assert recorder.paths == []


@pytest.mark.parametrize(
    ("ref", "where"),
    [
        ("https://schemas.example.org/person.json", "https URI"),
        ("file:///etc/passwd", "file URI"),
        ("other.json", "json-schema URI"),  # relative: resolved against the default base
    ],
)
def test_every_ref_outside_the_schema_is_refused_at_registration(ref: str, where: str) -> None:
    assert refusal(obj({"a": {"$ref": ref}})) == "parameters of 'echo' " + OUTSIDE.format(where)


def test_a_base_uri_cannot_turn_a_relative_ref_into_a_file_read() -> None:
    schema = {"$id": "file:///etc/", **obj({"a": {"$ref": "passwd"}})}
    assert refusal(schema) == "parameters of 'echo' " + OUTSIDE.format("file URI")


def test_a_dynamic_ref_outside_the_schema_is_refused(recorder: Recorder) -> None:
    schema = obj({"a": {"$dynamicRef": f"{recorder.url}/tree#node"}})
    assert refusal(schema) == (
        "parameters of 'echo' hold a reference that does not resolve inside them "
        '(remote and file references are refused; local ones look like "#/$defs/...")'
    )
    assert recorder.paths == []


def test_a_file_ref_never_opens_the_file(tmp_path: Path) -> None:
    """The file is a FIFO: a writer thread waits for a reader and writes a marker. If
    registration opened it, the registration read (or dropped) the marker; the test reads it
    whole itself only if nothing else opened the file first."""
    fifo = tmp_path / "schema.json"
    os.mkfifo(fifo)
    marker = b'{"type": "string"}'

    def write() -> None:
        with open(fifo, "wb") as out:  # blocks until some reader opens the FIFO
            out.write(marker)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert refusal(obj({"a": {"$ref": fifo.as_uri()}})) == (
        "parameters of 'echo' " + OUTSIDE.format("file URI")
    )
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the writer's open returns now
    try:
        writer.join(10)  # the marker is in the pipe (or was taken by an earlier reader)
        got = os.read(reader, 64)
    finally:
        os.close(reader)
    assert got == marker


# -- local references -----------------------------------------------------------------------------


def test_local_references_work() -> None:
    host, echo = host_for(
        {
            "$defs": {"positive": {"type": "integer", "minimum": 1}},
            **obj({"n": {"$ref": "#/$defs/positive"}}),
        }
    )
    assert reason(host, {"n": 0}) == "below the minimum @ $.n"
    assert host.invoke("echo", {"n": 3}) == ToolResult.text("ok")
    assert echo.calls == [{"n": 3}]


def test_a_recursive_local_schema_checks_every_level() -> None:
    tree = {
        "$defs": {
            "node": obj({"value": {"type": "integer"}, "children": {"$ref": "#/$defs/children"}}),
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
        },
        "type": "object",
        "$ref": "#/$defs/node",
    }
    host, _ = host_for(tree)
    good = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert not host.invoke("echo", good).is_error
    bad = {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}
    assert reason(host, bad) == "expected integer, got string @ $.children[0].children[0].value"


# -- JSON Schema 2020-12 --------------------------------------------------------------------------


def test_dependent_required_is_enforced() -> None:
    host, _ = host_for(obj({"card": {}, "cvc": {}}, dependentRequired={"card": ["cvc"]}))
    assert reason(host, {"card": "4111"}) == "missing required property @ $.cvc"
    assert not host.invoke("echo", {"card": "4111", "cvc": "123"}).is_error
    assert not host.invoke("echo", {}).is_error


def test_unevaluated_properties_is_enforced() -> None:
    schema = {
        "type": "object",
        "allOf": [{"properties": {"a": {"type": "integer"}}}],
        "unevaluatedProperties": False,
    }
    host, _ = host_for(schema)
    assert not host.invoke("echo", {"a": 1}).is_error
    assert reason(host, {"a": 1, "b": 2}) == "unexpected property @ $.b"


PAIR = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False}


def test_prefix_items_has_its_2020_12_meaning_when_no_schema_is_declared() -> None:
    host, _ = host_for(obj({"pair": PAIR}))
    assert not host.invoke("echo", {"pair": [1, "a"]}).is_error
    assert reason(host, {"pair": [1, 2]}) == "expected string, got integer @ $.pair[1]"
    assert reason(host, {"pair": [1, "a", 3]}) == "not allowed here @ $.pair[2]"


def test_a_declared_draft_is_honoured() -> None:
    # Draft 7 does not know prefixItems, and reads "items": false as "no items at all".
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **obj({"pair": PAIR})}
    host, _ = host_for(schema)
    assert (
        reason(host, {"pair": [1, "a"]})
        == "not allowed here @ $.pair[0]; not allowed here @ $.pair[1]"
    )


# -- behaviours kept from before ------------------------------------------------------------------


def test_validation_never_writes_defaults_into_the_arguments() -> None:
    host, echo = host_for(obj({"n": {"type": "integer", "default": 5}}))
    arguments: dict[str, Any] = {}
    assert not host.invoke("echo", arguments).is_error
    assert arguments == {} and echo.calls == [{}]


def test_an_integral_float_is_an_integer_for_the_schema_and_for_tool() -> None:
    host, echo = host_for(obj({"n": {"type": "integer"}}))
    assert not host.invoke("echo", {"n": 5.0}).is_error
    assert echo.calls == [{"n": 5.0}]  # the arguments as sent
    assert reason(host, {"n": 5.5}) == "expected integer, got number @ $.n"

    @tool
    def count(n: int) -> str:
        """Count."""
        return repr(n)

    tools = ToolHost()
    tools.register(count)
    assert tools.invoke("count", {"n": 5.0}).content == "5"  # @tool gets an int


def test_a_tool_schema_from_describe_type_validates_as_before() -> None:
    from tests.kit.test_decorator import sink

    host = ToolHost()
    host.register(sink)
    arguments = {
        "text": "t",
        "tags": ["x"],
        "counts": {"k": 1},
        "mode": "b",
        "color": "blue",
        "level": None,
        "point": {"x": 1, "y": 2},
    }
    assert not host.invoke("kitchen-sink", arguments).is_error
    bad = host.invoke("kitchen-sink", {"text": "t", "level": 3, "point": {"x": 1, "z": 0}})
    assert bad.content == (
        'Error: invalid arguments for tool "kitchen-sink": not one of the allowed values @ '
        "$.level; unexpected property @ $.point.z"
    )


# -- wording --------------------------------------------------------------------------------------


def test_the_validators_own_message_never_reaches_the_content() -> None:
    """jsonschema-rs' messages quote the instance ("'…' is not of type 'integer'"): the
    content is built from the error's kind and path only."""
    host, _ = host_for(obj({"n": {"type": "integer"}, "s": {"maxLength": 2}}))
    canary = "CANARYvalue7c1d"
    assert reason(host, {"n": canary, "s": canary}) == (
        "expected integer, got string @ $.n; too long @ $.s"
    )


def test_several_problems_show_the_first_three_and_a_count() -> None:
    host, _ = host_for(obj({k: {"type": "integer"} for k in "abcde"}, required=["z"]))
    assert reason(host, dict.fromkeys("abcde", "x")) == (
        "missing required property @ $.z; expected integer, got string @ $.a; expected "
        "integer, got string @ $.b; and 3 more"
    )


def test_property_names_in_a_path_are_bounded_and_escaped() -> None:
    host, _ = host_for({"type": "object", "additionalProperties": {"type": "integer"}})
    odd = 'a\x1b[31m\u202e"key"' + "x" * 100
    assert reason(host, {odd: "x"}) == (
        # The key is cut to 40 characters ("…" included), then JSON-escaped as ASCII.
        'expected integer, got string @ $["a\\u001b[31m\\u202e\\"key\\"' + "x" * 27 + '\\u2026"]'
    )


def test_a_missing_property_and_an_unexpected_one_are_named_at_their_place() -> None:
    host, _ = host_for(obj({"owner": obj({"id": {}}, required=["id"], additionalProperties=False)}))
    assert reason(host, {"owner": {"idx": 1}}) == (
        "unexpected property @ $.owner.idx; missing required property @ $.owner.id"
    )


def test_values_the_validator_cannot_read_are_named_not_plain_json() -> None:
    host, echo = host_for(obj({"x": {"type": "array"}}))
    assert reason(host, {"x": {1, 2}}) == "not plain JSON @ $.x"
    assert echo.calls == []


def test_a_schema_with_too_many_references_is_refused() -> None:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(MAX_SCHEMA_REFERENCES)}
    defs[f"d{MAX_SCHEMA_REFERENCES}"] = {"type": "integer"}
    assert refusal({"$defs": defs, **obj({"n": {"$ref": "#/$defs/d0"}})}) == (
        f"parameters of 'echo' hold {MAX_SCHEMA_REFERENCES + 1} references "
        f"(at most {MAX_SCHEMA_REFERENCES})"
    )


def test_the_allowed_depth_shrinks_with_a_schemas_references() -> None:
    """Depth times references stays within the budget: with 64 references, 16 levels."""
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(62)}
    defs["d62"] = {"type": "object", "additionalProperties": {"$ref": "#/$defs/d0"}}
    host, _ = host_for({"$defs": defs, "type": "object", "$ref": "#/$defs/d0"})  # 64
    nested: dict[str, Any] = {}
    for _ in range(15):
        nested = {"a": nested}
    assert not host.invoke("echo", nested).is_error  # 16 levels
    assert reason(host, {"a": nested}) == "nested too deeply @ $" + ".a" * 12 + "…"
