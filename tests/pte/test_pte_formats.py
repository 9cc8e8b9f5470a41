"""The CI formats (github, gitlab, json-lines, junit) on real lowered programs: each parses
as its consumer expects and carries every finding and input error of the JSON report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from xferlint.cli import main


@pytest.fixture(scope="module")
def inputs(pte_file):
    return [pte_file("addsin-noelide"), pte_file("shared-input"), "missing.pte"]


def _run(capsys, inputs, fmt):
    code = main(["check", *inputs, "--isolated", "--output-format", fmt])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err  # one input is missing: exit 2, the rest reported
    return out


def test_every_format_carries_the_json_findings(capsys, inputs):
    report = json.loads(_run(capsys, inputs, "json"))
    codes = sorted(f["code"] for f in report["findings"])
    assert codes and len(report["errors"]) == 1

    github = _run(capsys, inputs, "github").splitlines()
    annotations = [line for line in github if line.startswith(("::warning ", "::error ", "::notice "))]
    assert len(annotations) == len(codes) + 1
    assert sorted(line.split("title=")[1].split(" ")[0] for line in annotations if "title=XF" in line) == codes
    assert all("\n" not in line and "::" in line[2:] for line in annotations)
    assert any(line.startswith("::error title=xferlint::missing.pte: no such file") for line in github)

    gitlab = json.loads(_run(capsys, inputs, "gitlab"))
    (failed,) = [issue for issue in gitlab if issue["check_name"] == "xferlint input error"]
    assert failed["description"].startswith("error: missing.pte: no such file") and failed["severity"] == "blocker"
    assert failed["location"] == {"path": "missing.pte", "lines": {"begin": 1}}
    gitlab.remove(failed)
    assert sorted(issue["check_name"].split()[0] for issue in gitlab) == codes
    for issue in gitlab:
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(issue)
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert isinstance(issue["location"]["path"], str) and issue["location"]["lines"]["begin"] >= 1
    assert len({issue["fingerprint"] for issue in gitlab}) == len(gitlab)

    rows = [json.loads(line) for line in _run(capsys, inputs, "json-lines").splitlines()]
    assert [r for r in rows if "error" not in r] == sorted(report["findings"], key=lambda f: rows.index(f))
    assert [r["error"] for r in rows if "error" in r] == report["errors"]

    junit = ET.fromstring(_run(capsys, inputs, "junit"))
    assert junit.tag == "testsuites" and int(junit.get("failures")) == len(codes)
    assert int(junit.get("errors")) == 1
    assert sorted(f.get("type") for f in junit.iter("failure")) == codes


def test_json_text_is_json_dumps_byte_for_byte(capsys, inputs):
    """The JSON reporter writes its text in one walk (serialize.to_json_text); it must be
    what json.dumps(indent=2) makes of the same report, and of the awkward values too."""
    import enum
    from dataclasses import dataclass, field

    from xferlint.serialize import to_json_text, to_jsonable

    text = _run(capsys, inputs, "json")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"

    class Colour(enum.Enum):
        RED = "red"

    class Size(enum.IntEnum):
        BIG = 3

    class Name(str):
        pass

    @dataclass(frozen=True)
    class Leaf:
        name: str = 'quote " back\\slash \n tab\t ünï \u2028 \x00'
        ratio: float = 0.1
        big: int = 10**30
        nothing: None = None
        flag: bool = False
        colour: Colour = Colour.RED

    @dataclass(frozen=True)
    class Tree:
        leaves: tuple = (Leaf(), Leaf(ratio=float("nan")), Leaf(ratio=float("-inf")))
        empty_list: list = field(default_factory=list)
        empty_dict: dict = field(default_factory=dict)
        nested: dict = field(default_factory=lambda: {"a": [[], {}, [1, [2.5e-300, True]]], 3: "int key"})
        # lists the writer takes in one pass (all strings, all one dataclass) and ones it cannot
        mixed: list = field(default_factory=lambda: ["a", "b", None, 1, Colour.RED, [Colour.RED, "c"], Size.BIG,
                                                     Name("n"), [Name("m"), "o"], (True, 2.0)])
        leaf_list: list = field(default_factory=lambda: [Leaf(), Leaf(name="x"), None, "leaf", Leaf()])
        strings: tuple = ("p", "q")

    tree = Tree()
    assert to_json_text(tree) == json.dumps(to_jsonable(tree), indent=2, ensure_ascii=False)
    # one object met again, at its own depth and deeper, reuses its text; fresh objects in
    # a later call (ids of dead ones reused) get their own
    for k in range(3):
        shared = Leaf(name=f"shared {k}")
        tree = Tree(leaves=(shared, shared), leaf_list=[shared, Leaf(name=str(k))], nested={"deeper": [shared]})
        assert to_json_text(tree) == json.dumps(to_jsonable(tree), indent=2, ensure_ascii=False)
    # a top-level list of objects of one dataclass is written in parts (`_flat_text`): the
    # same bytes, objects met twice (in it and elsewhere) included
    shared = Leaf(name="twice")
    flat = Tree(leaves=(shared,), leaf_list=[Leaf(), shared, Leaf(name="y", ratio=float("nan")), shared],
                mixed=[Tree(leaves=(), leaf_list=[shared])], nested={"l": [shared]})
    trees = [flat, Tree(leaf_list=[]), Tree(leaf_list=[Leaf()]), Tree(leaf_list=[Leaf(), Tree()]),
             Tree(leaf_list=[Leaf(), None]), Tree(mixed=[Tree(), Tree(leaf_list=[shared])])]
    # a text that ends the output (the report and its newline in one join), and what is no dataclass
    for obj, end in ((tree, "\n"), (Leaf(), "\n\n"), (Tree(leaves=()), "x"), ([Leaf(), "a"], "\n"), ("s", "\n"),
                     *((t, "\n") for t in trees), *((t, "") for t in trees)):
        assert to_json_text(obj, end=end) == json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False) + end
        assert to_json_text(obj) == json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False)


def test_junit_is_well_formed_whatever_the_file_names(capsys, tmp_path, pte_bytes):
    """XML 1.0 cannot hold most control characters: a file name with ESC or a newline is
    written with its escapes, as the text output writes it, and the report still parses."""
    names = ["esc\x1b[31m.pte", "new\nline.pte", "missing\x07.pte"]
    for name in names[:2]:
        (tmp_path / name).write_bytes(pte_bytes("addsin-noelide"))
    junit = ET.fromstring(_run(capsys, [str(tmp_path / n) for n in names], "junit"))
    suites = sorted(s.get("name") for s in junit.iter("testsuite"))
    assert suites == sorted(str(tmp_path / n).encode("unicode_escape").decode() for n in names), suites
    assert int(junit.get("failures")) == 2 and int(junit.get("errors")) == 1


def test_github_messages_show_a_names_escape_not_act_on_it(capsys, tmp_path, pte_bytes):
    """A file name holding ESC reaches the job's log as `\\x1b` in each message (the `file=`
    property keeps the name, escaped as workflow commands escape it, to find the file)."""
    name = tmp_path / "esc\x1bname.pte"
    name.write_bytes(pte_bytes("addsin-noelide"))
    out = _run(capsys, [str(name), str(tmp_path / "missing\x1b.pte")], "github")
    for line in out.splitlines():
        assert "\x1b" not in line.split("::", 2)[2], line
    assert "missing\\x1b.pte: no such file" in out


def test_html_shows_a_names_escape(capsys, tmp_path, pte_bytes):
    """A name holding ESC is its escape wherever the page has it: shown, and in the data
    attributes that name the input."""
    name = tmp_path / "esc\x1bname.pte"
    name.write_bytes(pte_bytes("addsin-noelide"))
    page = _run(capsys, [str(name), "missing.pte"], "html")
    assert "esc\\x1bname.pte" in page
    assert f'data-input="{tmp_path}/esc\\x1bname.pte"' in page
    assert "\x1b" not in page
