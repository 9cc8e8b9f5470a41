"""SARIF `suppressions` and `baselineState` in a scratch model repository: a finding a
noqa comment suppresses (`inSource`, with its justification), one the baseline accepts
(`external`, `unchanged`), a new one (`new`), a baseline entry nothing matches (`absent`);
every log validates against the schema, and the workflow's gate counts only new ones."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from test_sarif_ci import _steps


@pytest.fixture(scope="module")
def repo(model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("suppressed")
    shutil.copy(os.path.join(model_dir, "pipeline.py"), root / "pipeline.py")
    return root


def _line(out, rule):
    result = next(r for r in out.results if r["ruleId"] == rule)
    return result["locations"][0]["physicalLocation"]["region"]["startLine"]


def _comment(repo, line: int, comment: str) -> None:
    path = repo / "pipeline.py"
    lines = path.read_text().splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n").split("  # xferlint")[0] + comment + "\n"
    path.write_text("".join(lines))


def _gate(out, tmp_path) -> bool:
    steps, _ = _steps()
    gate = next(s for s in steps if s.get("name") == "Gate")["run"]
    (tmp_path / "xferlint.sarif").write_text(out.text, encoding="utf-8")
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", gate], cwd=tmp_path, capture_output=True, text=True)
    return proc.returncode == 0


ARGS = ["pipeline.py", "--select", "XF001,XF002,XF100"]


def test_suppressions_and_baseline_state(sarif, repo, tmp_path):
    plain = sarif(ARGS, cwd=repo)
    assert sorted(r["ruleId"] for r in plain.results) == ["XF001", "XF002"]
    assert all("suppressions" not in r and "baselineState" not in r for r in plain.results)
    staging = _line(plain, "XF002")
    _comment(repo, staging, "  # xferlint: noqa: XF002 cuda:1 gets its own copy in Q3")

    out = sarif(ARGS, cwd=repo)
    by_rule = {r["ruleId"]: r for r in out.results}
    assert set(by_rule) == {"XF001", "XF002"} and "suppressions" not in by_rule["XF001"]
    (suppression,) = by_rule["XF002"]["suppressions"]
    assert suppression["kind"] == "inSource" and suppression["justification"] == "cuda:1 gets its own copy in Q3"
    assert suppression["location"]["physicalLocation"]["region"]["startLine"] == staging
    # the fingerprint does not change when a result becomes suppressed
    assert by_rule["XF002"]["partialFingerprints"] == {r["ruleId"]: r for r in plain.results}["XF002"][
        "partialFingerprints"]
    assert not _gate(out, tmp_path)  # XF001 is neither suppressed nor accepted

    baseline = repo / "xferlint-baseline.json"
    from xferlint.cli import main

    assert main(["check", "--isolated", *ARGS, "--write-baseline", str(baseline)]) == 0  # cwd: repo
    out = sarif([*ARGS, "--baseline", str(baseline)], cwd=repo)
    assert out.rc == 0
    by_rule = {r["ruleId"]: r for r in out.results}
    assert by_rule["XF001"]["suppressions"] == [{"kind": "external"}]
    assert by_rule["XF001"]["baselineState"] == "unchanged"
    assert "baselineState" not in by_rule["XF002"]  # the comment, not the baseline, accepts it
    assert _gate(out, tmp_path)

    # an entry nothing matches any more: absent; an empty baseline: XF001 is new again
    entries = json.loads(baseline.read_text())
    entries["entries"].append({"code": "XF003", "count": 1, "fingerprint": "0" * 32, "input": "pipeline.py:program",
                               "message": "a dead copy that was removed"})
    baseline.write_text(json.dumps(entries))
    out = sarif([*ARGS, "--baseline", str(baseline)], cwd=repo)
    absent = [r for r in out.results if r.get("baselineState") == "absent"]
    assert [(r["ruleId"], r["kind"], r["level"]) for r in absent] == [("XF003", "pass", "none")]
    assert absent[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pipeline.py"
    assert _gate(out, tmp_path)
    baseline.write_text(json.dumps({"version": 1, "entries": []}))
    out = sarif([*ARGS, "--baseline", str(baseline)], cwd=repo)
    assert out.rc == 1 and {r["ruleId"]: r for r in out.results}["XF001"]["baselineState"] == "new"
    assert not _gate(out, tmp_path)
