"""partialFingerprints: stable when unrelated lines move and across runs, distinct for
distinct findings (also two on one line)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from xferlint.pipeline import check_paths
from xferlint.fingerprint import digest, finding_key, fingerprints
from xferlint.selection import select_rules


def _prints(out):
    return {r["ruleId"]: r["partialFingerprints"]["xferlint/v1"] for r in out.results}


def _lines(out):
    return {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in out.results}


def test_fingerprints_hold_when_unrelated_lines_move(sarif, model_dir, moved_dir):
    before = sarif(["pipeline.py", "--select", "XF001,XF002,XF003"], cwd=model_dir)
    after = sarif(["pipeline.py", "--select", "XF001,XF002,XF003"], cwd=moved_dir)
    assert set(_prints(before)) == {"XF001", "XF002"}
    # the findings did move...
    assert all(_lines(after)[rule] > _lines(before)[rule] for rule in _lines(before))
    # ...and kept their identity
    assert _prints(after) == _prints(before)
    # linting the same program again gives the same fingerprints
    assert _prints(sarif(["pipeline.py", "--select", "XF001,XF002,XF003"], cwd=model_dir)) == _prints(before)


@pytest.fixture(scope="module")
def findings(model_dir):
    run = check_paths([os.path.join(model_dir, "pipeline.py")], select_rules(["XF001", "XF002"]))
    assert not run.errors
    return {f.code: f for f in run.findings}


def _moved(finding, offset):
    def shift(loc):
        return replace(loc, **{"line": loc.line + offset}) if loc is not None else None

    steps = [replace(s, **{"location": shift(s.location)}) for s in finding.steps]
    return replace(finding, **{"location": shift(finding.location), "steps": steps})


def _recoded(finding, code):
    location = replace(finding.location, **{"code": code})
    steps = [replace(s, **{"location": location}) if s.location == finding.location else s
             for s in finding.steps]
    return replace(finding, **{"location": location, "steps": steps})


def test_key_ignores_line_numbers_and_whitespace(findings):
    finding = findings["XF001"]
    same = digest(finding_key(finding, "pipeline.py"))
    assert digest(finding_key(_moved(finding, 40), "pipeline.py")) == same
    spaced = _recoded(finding, finding.location.code.replace("=", " =  ").replace(",", " , "))
    assert digest(finding_key(spaced, "pipeline.py")) == same


def test_key_ignores_node_numbering_where_a_line_is_known(findings):
    finding = findings["XF001"]
    renamed = replace(finding, **{
        "nodes": [n + "_7" for n in finding.nodes],
        "steps": [replace(s, **{"node": s.node + "_7"}) for s in finding.steps],
    })
    assert digest(finding_key(renamed, "pipeline.py")) == digest(finding_key(finding, "pipeline.py"))


def test_key_changes_with_what_the_finding_is(findings):
    xf001, xf002 = findings["XF001"], findings["XF002"]
    base = digest(finding_key(xf001, "pipeline.py"))
    assert digest(finding_key(xf002, "pipeline.py")) != base
    assert digest(finding_key(_recoded(xf001, "h = torch.mm(x, self.other)"), "pipeline.py")) != base
    assert digest(finding_key(xf001, "models/pipeline.py")) != base
    assert digest(finding_key(replace(xf001, **{"program": "other"}), "pipeline.py")) != base
    # Two transfers that start on one line but end in different places differ.
    far_end = [replace(s, **{"location": xf002.steps[-1].location}) if s.role == "consumer" else s
               for s in xf001.steps]
    assert digest(finding_key(replace(xf001, **{"steps": far_end}), "pipeline.py")) != base


def test_node_names_count_when_there_is_no_line(findings):
    finding = findings["XF001"]
    bare = replace(finding, **{
        "location": None, "steps": [replace(s, **{"location": None}) for s in finding.steps]})
    other = replace(bare, **{"nodes": ["getitem_9"] + bare.nodes[1:], "steps": [
        replace(bare.steps[0], **{"node": "getitem_9"})] + bare.steps[1:]})
    assert digest(finding_key(bare, "pipeline.py")) != digest(finding_key(other, "pipeline.py"))


def test_repeats_get_occurrence_numbers(findings):
    key = finding_key(findings["XF001"], "pipeline.py")
    other = finding_key(findings["XF002"], "pipeline.py")
    first, second, third = fingerprints([key, other, key])
    assert first.endswith(":1") and third.endswith(":2") and second.endswith(":1")
    assert first.split(":")[0] == third.split(":")[0] != second.split(":")[0]
