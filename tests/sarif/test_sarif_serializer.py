"""The serializer keeps every field we set, including values equal to a schema default,
and writes nothing we did not set."""

from __future__ import annotations

import json

import pytest
from sarif_om import Message, ReportingConfiguration, Result, Run, SarifLog, Tool, ToolComponent

from xferlint.reporters.sarif_serialize import dumps, new, shared, to_dict


def test_explicit_defaults_survive():
    result = new(Result, message=new(Message, text="x"), level="warning", rule_id="XF001")
    assert to_dict(result) == {"message": {"text": "x"}, "level": "warning", "ruleId": "XF001"}
    config = new(ReportingConfiguration, level="warning", enabled=True)
    assert to_dict(config) == {"enabled": True, "level": "warning"}


def test_unset_defaults_are_not_written():
    # Result.kind/rank/ruleIndex and Run.language/newlineSequences have attrs defaults
    run = new(Run, tool=new(Tool, driver=new(ToolComponent, name="xferlint")),
              results=[new(Result, message=new(Message, text="x"))])
    assert to_dict(run) == {"tool": {"driver": {"name": "xferlint"}}, "results": [{"message": {"text": "x"}}]}


def test_objects_built_directly_keep_every_value():
    # No record of what was set: write all non-None values rather than guess.
    data = to_dict(Result(message=Message(text="x"), level="warning"))
    assert data["level"] == "warning" and data["kind"] == "fail" and data["ruleIndex"] == -1


def test_dicts_lists_and_schema_names():
    log = new(SarifLog, version="2.1.0", schema_uri="https://json.schemastore.org/sarif-2.1.0.json",
              runs=[new(Run, tool=new(Tool, driver=new(ToolComponent, name="t")),
                        original_uri_base_ids={"%SRCROOT%": {"uri": "file:///r/"}}, results=[])])
    text = dumps(log)
    assert text.startswith('{\n  "$schema": "https://json.schemastore.org/sarif-2.1.0.json",\n  "version": "2.1.0",')
    assert text.endswith("}\n")
    assert json.loads(text)["runs"][0]["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///r/"}}


def test_unknown_values_are_refused():
    with pytest.raises(TypeError, match="cannot serialize a set"):
        to_dict(new(Message, text="x", arguments={"a"}))


def test_schema_rejects_what_github_would_misread(schema_validate):
    """The validator is live: a result level outside the enum fails."""
    log = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}},
                                         "results": [{"message": {"text": "x"}, "level": "warn"}]}]}
    assert schema_validate(log)
    log["runs"][0]["results"][0]["level"] = "warning"
    assert schema_validate(log) == []
    log["runs"][0]["tool"]["driver"]["informationUri"] = "not a uri"
    assert schema_validate(log)


def test_dumps_writes_what_json_writes_of_to_dict_byte_for_byte():
    """`dumps` walks the objects once; its text is json.dumps' own of `to_dict`."""
    import enum

    class Kind(str, enum.Enum):
        NOTE = "note"

    bag = {"ünïcode ✓": "tab\tquote\" \u2028", "n": 3, "x": 0.1, "big": 1e300, "nan": float("nan"),
           "inf": float("-inf"), "t": True, "f": False, "none": None, "empty": {}, "list": [], "tuple": (1, "a"),
           "nested": [{"a": [[], {}]}, Kind.NOTE], 7: "int key"}
    result = new(Result, message=new(Message, text="m\n", arguments=["a", "ü"]), level=Kind.NOTE, properties=bag,
                 rule_index=0, locations=[])
    log = new(SarifLog, version="2.1.0", schema_uri="https://json.schemastore.org/sarif-2.1.0.json",
              runs=[new(Run, tool=new(Tool, driver=new(ToolComponent, name="t")), results=[result, Result(
                  message=Message(text="built directly"))])])
    data = to_dict(log)
    ordered = {"$schema": data.pop("$schema"), "version": data.pop("version"), **data}
    assert dumps(log) == json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
    with pytest.raises(TypeError, match="cannot serialize a set"):
        dumps(new(SarifLog, version="2.1.0", runs=[], properties={"s": {1}}))


def test_long_lists_are_written_as_json_writes_them():
    """A list of 64 items or more has each item's text joined on its own (a log's 20,000
    results were millions of parts at once): the same bytes as json.dumps, nested too."""
    results = [new(Result, message=new(Message, text=f"r{k}", arguments=[f"a{j}" for j in range(k % 70)]),
                   properties={"k": k, "deep": [[j] for j in range(65)] if k == 3 else []}) for k in range(100)]
    log = new(SarifLog, version="2.1.0", schema_uri="https://json.schemastore.org/sarif-2.1.0.json",
              runs=[new(Run, tool=new(Tool, driver=new(ToolComponent, name="t")), results=results)])
    data = to_dict(log)
    ordered = {"$schema": data.pop("$schema"), "version": data.pop("version"), **data}
    assert dumps(log) == json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"


def test_an_object_named_in_many_places_is_written_the_same_in_each():
    """A `shared` object (a node's logical location) is written once per indentation and
    reused: the text is json.dumps' own wherever it stands, at any depth."""
    message = shared(new(Message, text="shared \u2028 text", arguments=["x"]))
    results = [new(Result, message=message, properties={"again": [message], "deeper": {"m": [[message]]}})
               for _ in range(3)]
    log = new(SarifLog, version="2.1.0", runs=[new(Run, tool=new(Tool, driver=new(ToolComponent, name="t")),
                                                   results=results)])
    data = to_dict(log)
    ordered = {"version": data.pop("version"), **data}
    assert dumps(log) == json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
    assert dumps(log) == dumps(log)  # the memo of one call is not read by the next
