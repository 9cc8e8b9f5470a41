"""Malformed `.pt2` inputs: each is one line naming the input and the problem (a
Pt2FormatError, an InputError), never a traceback; the CLI exits 2 and still lints the
other inputs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from xferlint.errors import InputError
from xferlint.frontends.pt2.archive import Pt2FormatError
from xferlint.frontends.pt2.view import load_pt2_bytes, load_pt2_file

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = os.path.join(REPO, "sample_models", "pt2", "round_trip.pt2")


def _good() -> bytes:
    with open(GOOD, "rb") as handle:
        return handle.read()


def _rewrite(edit_model=None, drop=(), replace=None, root="round_trip") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_good())) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            name = info.filename.replace("round_trip/", f"{root}/", 1)
            if any(info.filename.endswith(d) for d in drop):
                continue
            raw = src.read(info)
            if replace and any(info.filename.endswith(k) for k in replace):
                raw = next(v for k, v in replace.items() if info.filename.endswith(k))
            elif edit_model and info.filename.endswith("models/model.json"):
                model = json.loads(raw)
                edit_model(model)
                raw = json.dumps(model).encode()
            dst.writestr(name, raw)
    return out.getvalue()


def _nodes(model):
    return model["graph_module"]["graph"]["nodes"]


CASES = {
    "empty": (b"", "empty file"),
    "junk": (b"not a zip at all", "not a zip archive"),
    "truncated": (_good()[:3000], "corrupt or truncated zip"),
    "pte": (b"\x1c\x00\x00\x00ET12" + b"\x00" * 40, "a .pte program"),
    "flat layout": (_rewrite(drop=("archive_format",), replace=None), "without `archive_format`"),
    "archive version": (_rewrite(replace={"archive_version": b"7"}), "archive version '7'"),
    "archive format": (_rewrite(replace={"archive_format": b"zip"}), "archive format 'zip'"),
    "no model": (_rewrite(drop=("models/model.json",)), "no model in the archive"),
    "not json": (_rewrite(replace={"models/model.json": b"{nope"}), "is not valid JSON"),
    "not utf8": (_rewrite(replace={"models/model.json": b"\xff\xfe"}), "is not UTF-8"),
    "json list": (_rewrite(replace={"models/model.json": b"[1, 2]"}), "holds a list"),
    "deep json": (_rewrite(replace={"models/model.json": b"[" * 100000 + b"]" * 100000}), "not valid JSON"),
    "schema 9": (_rewrite(lambda m: m.update(schema_version={"major": 9, "minor": 0})),
                 "schema version 9.0"),
    "no schema": (_rewrite(lambda m: m.pop("schema_version")), "no schema_version"),
    "nodes not a list": (_rewrite(lambda m: m["graph_module"]["graph"].update(nodes=5)), "graph.nodes"),
    "node without target": (_rewrite(lambda m: _nodes(m)[0].pop("target")), "without a target"),
    "bad device": (_rewrite(lambda m: m["graph_module"]["graph"]["tensor_values"]["x"].update(
        device={"type": 3, "index": -1})), "bad device"),
    "int in a tensor list": (_rewrite(lambda m: _nodes(m)[0]["inputs"][0].update(arg={"as_tensors": [3]})),
                             "without a name"),
    "nameless ref": (_rewrite(lambda m: _nodes(m)[0]["inputs"][0].update(arg={"as_tensor": {}})),
                     "without a name"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_archive_is_one_line(case):
    data, expected = CASES[case]
    with pytest.raises(Pt2FormatError) as info:
        load_pt2_bytes(data, label="bad.pt2")
    message = str(info.value)
    assert message.startswith("bad.pt2: ") and expected in message and "\n" not in message


def test_zip_bomb_is_refused_by_the_directory_size(monkeypatch):
    from xferlint.frontends.pt2 import archive

    monkeypatch.setattr(archive, "MAX_JSON_BYTES", 1000)
    with pytest.raises(Pt2FormatError, match="more than the 1000 xferlint reads"):
        load_pt2_bytes(_good(), label="big.pt2")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_pt2_file(str(tmp_path / "none.pt2"))
    os.mkdir(tmp_path / "dir.pt2")
    with pytest.raises(InputError, match="is a directory"):
        load_pt2_file(str(tmp_path / "dir.pt2"))


def test_cli_reports_each_bad_input_and_lints_the_rest(tmp_path):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(CASES["schema 9"][0])
    done = subprocess.run([sys.executable, "-m", "xferlint.cli", "check", str(bad), GOOD, "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert [f["code"] for f in report["findings"]] == ["XF001"]
    assert len(report["errors"]) == 1 and "schema version 9.0" in report["errors"][0]["message"]
    assert not [p for p in os.listdir(tmp_path) if p != "bad.pt2"]  # no stray file


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def test_mutated_model_json_never_escapes_as_another_error():
    """Every field of a real model JSON replaced, in turn, by values of the wrong type:
    the reader either reads it or raises one Pt2FormatError line (no TypeError, KeyError)."""
    import random

    with zipfile.ZipFile(io.BytesIO(_good())) as zf:
        base = json.loads(zf.read("round_trip/models/model.json"))
    paths = [p for p in _paths(base) if p]
    junk = [None, 5, -1, "x", [], {}, [1], {"as_tensor": 3}, {"name": None}, [{"as_tensor": {}}], True, 1.5]
    rng = random.Random(0)
    for path in rng.sample(paths, min(400, len(paths))):
        value = rng.choice(junk)

        def edit(model, path=path, value=value):
            target = model
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value

        data = _rewrite(edit)
        try:
            load_pt2_bytes(data, label="m.pt2")
        except Pt2FormatError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("m.pt2: ")
