"""Suppression comments in a scratch model repository: honoured on the finding's line,
not outside the project, `--add-noqa` (idempotent, other comments and CRLF kept), XF100
unused-noqa and its fix.

In-process (`xferlint.cli.main`): the model is lowered once, when its module is first
imported; the tests change only comments, on the same lines, so the lowered program and
its line numbers stay valid while the comments are read afresh each run.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from xferlint.cli import main

MODEL = textwrap.dedent(
    """\
    import torch

    from xferlint.testing import lower


    class Pair(torch.nn.Module):
        def forward(self, x, y):
            a = x + y{first}
            return torch.sin(a){second}


    program = lower(Pair(), (torch.ones(4, 4), torch.ones(4, 4)), ["cuda:0", "cuda:0"], elide=False)
    """
)
FIRST, SECOND = 8, 9  # XF001 is reported at the line of `a = x + y`


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    """A model repository of its own (a git work tree: the project root)."""
    root = tmp_path_factory.mktemp("repo")
    (root / ".git").mkdir()
    return root


def _write(root, first: str = "", second: str = "", crlf: bool = False) -> bytes:
    text = MODEL.format(first=first, second=second)
    data = (text.replace("\n", "\r\n") if crlf else text).encode("utf-8")
    (root / "model.py").write_bytes(data)
    return data


def _check(capfd, root, monkeypatch, *args):
    monkeypatch.chdir(root)
    capfd.readouterr()
    code = main(["check", "model.py", "--isolated", *args])
    out, err = capfd.readouterr()
    return code, out, err


def _json(capfd, root, monkeypatch, *args):
    code, out, err = _check(capfd, root, monkeypatch, "--format", "json", *args)
    return code, json.loads(out), err


def _codes(report):
    return [f["code"] for f in report["findings"]]


def test_add_noqa_marks_the_line_keeps_comments_and_crlf_and_is_idempotent(capfd, scratch, monkeypatch):
    before = _write(scratch, first="  # the sum  # noqa: E501", crlf=True)
    code, report, _ = _json(capfd, scratch, monkeypatch)
    assert code == 1 and _codes(report) == ["XF001"]
    code, _, err = _check(capfd, scratch, monkeypatch, "--add-noqa")
    assert code == 0 and "model.py: added 1 noqa directive" in err and "Added 1 noqa directive." in err
    after = (scratch / "model.py").read_bytes()
    lines = after.split(b"\r\n")
    assert lines[FIRST - 1] == b"        a = x + y  # the sum  # noqa: E501  # xferlint: noqa: XF001"
    assert after.count(b"\r\n") == before.count(b"\r\n") and b"\n" not in after.replace(b"\r\n", b"")
    assert [x for i, x in enumerate(lines) if i != FIRST - 1] == \
        [x for i, x in enumerate(before.split(b"\r\n")) if i != FIRST - 1]
    code, _, err = _check(capfd, scratch, monkeypatch, "--add-noqa")
    assert code == 0 and "Added 0 noqa directives." in err
    assert (scratch / "model.py").read_bytes() == after
    code, report, _ = _json(capfd, scratch, monkeypatch)
    assert code == 0 and report["findings"] == [] and report["summary"]["suppressed"] == 1


def test_add_noqa_merges_into_an_xferlint_noqa_and_xf100_removes_the_stale_code(capfd, scratch, monkeypatch):
    _write(scratch, first="  # xferlint: noqa: XF003")
    code, report, _ = _json(capfd, scratch, monkeypatch)
    assert _codes(report) == ["XF001", "XF100"]
    unused = report["findings"][1]
    assert unused["location"]["line"] == FIRST and "unused: `XF003`" in unused["message"]
    code, _, _ = _check(capfd, scratch, monkeypatch, "--add-noqa")
    text = (scratch / "model.py").read_text()
    assert text.splitlines()[FIRST - 1] == "        a = x + y  # xferlint: noqa: XF003, XF001"
    code, report, _ = _json(capfd, scratch, monkeypatch)
    assert code == 1 and _codes(report) == ["XF100"] and report["findings"][0]["fixable"]
    unfixed = (scratch / "model.py").read_text()
    code, out, err = _check(capfd, scratch, monkeypatch, "--diff")  # shown, not written
    assert code == 1 and (scratch / "model.py").read_text() == unfixed and "Would fix 1 finding." in err, err
    assert "-        a = x + y  # xferlint: noqa: XF003, XF001\n" in out
    assert "+        a = x + y  # xferlint: noqa: XF001\n" in out and out.startswith("--- ")
    code, _, err = _check(capfd, scratch, monkeypatch, "--fix")
    assert code == 0 and "removed 1 unused noqa directive (XF100)" in err, err
    assert (scratch / "model.py").read_text().splitlines()[FIRST - 1] == "        a = x + y  # xferlint: noqa: XF001"
    code, report, _ = _json(capfd, scratch, monkeypatch)
    assert code == 0 and report["findings"] == []


@pytest.mark.parametrize("second, args, expected", [
    ("  # xferlint: noqa: XF999", (), "unknown: `XF999`"),
    ("  # xferlint: noqa", (), "Unused blanket `noqa` directive"),
    ("  # noqa: E501, XF004", (), "unused: `XF004`"),
    ("  # noqa: E501", (), None),  # other tools' codes: never XF100
    ("  # noqa", (), None),
    ("  # xferlint: noqa: XF006", ("--select", "XF001,XF100"), None),  # XF006 did not run
    ("  # xferlint: noqa", ("--select", "XF001,XF100"), None),  # nor did most rules
    ("  # xferlint: noqa: XF004, XF100", (), None),  # XF100 waived on the line
])
def test_unused_noqa(capfd, scratch, monkeypatch, second, args, expected):
    _write(scratch, first="  # xferlint: noqa: XF001", second=second)
    code, report, _ = _json(capfd, scratch, monkeypatch, *args)
    if expected is None:
        assert code == 0 and report["findings"] == [], report["findings"]
        return
    assert code == 1 and _codes(report) == ["XF100"]
    (finding,) = report["findings"]
    assert finding["location"]["line"] == SECOND and expected in finding["message"]
    assert finding["fix_applicability"] == "safe"


def test_the_xf100_fix_keeps_the_rest_of_the_comment(capfd, scratch, monkeypatch):
    _write(scratch, first="  # xferlint: noqa: XF001", second="  # sine  # noqa: E501, XF004  # xferlint: noqa")
    code, _, err = _check(capfd, scratch, monkeypatch, "--fix")
    assert code == 0, err
    assert (scratch / "model.py").read_text().splitlines()[SECOND - 1] == "        return torch.sin(a)  # sine  # noqa: E501"
    code, report, _ = _json(capfd, scratch, monkeypatch)
    assert code == 0 and report["findings"] == []


def test_a_justification_goes_with_a_stale_directive(capfd, scratch, monkeypatch):
    _write(scratch, first="  # xferlint: noqa: XF001 until the Q3 refactor",
           second="  # xferlint: noqa: XF004 weights stay on host")
    code, _, _ = _check(capfd, scratch, monkeypatch, "--fix")
    lines = (scratch / "model.py").read_text().splitlines()
    assert code == 0
    assert lines[FIRST - 1] == "        a = x + y  # xferlint: noqa: XF001 until the Q3 refactor"
    assert lines[SECOND - 1] == "        return torch.sin(a)"


def test_comments_outside_the_project_root_are_not_honoured(capfd, scratch, monkeypatch, tmp_path):
    _write(scratch, first="  # xferlint: noqa: XF001")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    code, report, err = _json(capfd, scratch, monkeypatch, "--project-root", str(elsewhere))
    assert code == 1 and _codes(report) == ["XF001"]
    assert report["findings"][0]["location"]["file"] == str(scratch / "model.py")
    assert f"{scratch / 'model.py'}:{FIRST}: a noqa comment for XF001 is not honoured (outside the project root" in err
    _write(scratch)
    code, _, err = _check(capfd, scratch, monkeypatch, "--add-noqa", "--project-root", str(elsewhere))
    assert code == 0 and "Added 0 noqa directives." in err and "XF001 not marked: outside the project root" in err
    assert (scratch / "model.py").read_text() == MODEL.format(first="", second="")


def test_generated_and_installed_files_are_not_honoured(tmp_path):
    from xferlint.suppression import not_honoured

    generated = tmp_path / "gen.py"
    generated.write_text("# @generated by codegen\nx = 1  # xferlint: noqa\n")
    mine = tmp_path / "mine.py"
    mine.write_text("x = 1  # xferlint: noqa\n")
    assert not_honoured(str(generated), None) == "generated code"
    assert not_honoured("/usr/lib/python3/site-packages/pkg/m.py", None) == "an installed package"
    assert not_honoured(str(mine), str(tmp_path)) is None
    assert not_honoured(str(mine), str(tmp_path / "sub")).startswith("outside the project root")


def test_directive_parsing():
    from xferlint.suppression import parse_comment

    (d,) = parse_comment("# xferlint: noqa: XF006, XF001 weights stay on host until Q3", 10)
    assert d.codes == ("XF006", "XF001") and d.justification == "weights stay on host until Q3" and d.ours
    assert d.start == 10 and d.scope == "line"
    (d,) = parse_comment("# noqa: E501 XF001", 0)
    assert not d.ours and d.codes == ("E501", "XF001") and d.xf_codes == ("XF001",)
    assert parse_comment("# noqa: E501", 0) == [] and parse_comment("# noqa", 0) == []
    (d,) = parse_comment("# xferlint: noqa-file: XF006", 0)
    assert d.scope == "file" and d.codes == ("XF006",)
    (d,) = parse_comment("# xferlint: noqa", 0)
    assert d.blanket and d.covers("XF012")


def test_a_noqa_comment_does_not_change_the_fingerprint():
    """Adding `# xferlint: noqa` to a line keeps its baseline entry and its code-scanning alert."""
    from xferlint.fingerprint import _text
    from xferlint.findings import Location

    def text(code):
        return _text(Location(file="m.py", line=3, code=code), "n")

    assert text("a = x + y  # xferlint: noqa: XF001 until Q3") == text("a = x + y") == "a=x+y"
    assert text('s = "#1" + t') != text('s = "" + t')


def test_xferlint_fix_also_removes_stale_noqa_codes(capfd, scratch, monkeypatch):
    _write(scratch, first="  # xferlint: noqa: XF003")
    monkeypatch.chdir(scratch)
    code = main(["fix", "model.py", "-o", "fixed.pte", "--isolated"])
    _, err = capfd.readouterr()
    assert code == 0 and "removed 1 unused noqa directive (XF100)" in err, err
    assert (scratch / "model.py").read_text() == MODEL.format(first="", second="")
    assert (scratch / "fixed.pte").is_file()
