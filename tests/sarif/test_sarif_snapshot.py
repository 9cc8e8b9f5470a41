"""Snapshot of a whole SARIF log (results, code flows, logical locations, notifications).

Masked: the tool version, the absolute root in `originalUriBaseIds` (the models live in a
temporary directory), and the rules' metadata (its generation from the docstrings is
tested in test_sarif_output.py; masking keeps docstring edits from churning this file).
The output holds no timestamps. Rules are selected explicitly so that new rules do not
change the snapshot.

To update after an intended change: XFERLINT_UPDATE_SNAPSHOTS=1 pytest tests/sarif
"""

from __future__ import annotations

import json
import os

SNAPSHOT = os.path.join(os.path.dirname(__file__), "snapshots", "models.sarif.json")


def mask(doc: dict) -> dict:
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    driver["version"] = driver["semanticVersion"] = "<version>"
    driver["rules"] = [{"id": r["id"], "name": r["name"]} for r in driver["rules"]]
    run["originalUriBaseIds"]["%SRCROOT%"]["uri"] = "file:///<root>/"
    return doc


def test_snapshot(sarif, model_dir):
    out = sarif(["pipeline.py", "dead.py", "nosource.py", "broken.py", "--select", "XF001,XF002,XF003"],
                cwd=model_dir)
    assert out.rc == 2
    text = json.dumps(mask(out.doc), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("XFERLINT_UPDATE_SNAPSHOTS"):
        with open(SNAPSHOT, "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(SNAPSHOT, encoding="utf-8") as handle:
        expected = handle.read()
    assert text == expected, "SARIF changed; if intended, rerun with XFERLINT_UPDATE_SNAPSHOTS=1"
