"""`--format model-explorer`: Model Explorer's node-data format, keyed as its PyTorch
ExportedProgram adapter names the graph (`graph`) and the nodes (FX node names)."""

from __future__ import annotations

import json
import runpy

import pytest

from xferlint.cli import main

SAMPLE = "sample_models/host_op_splits_partition.py"


@pytest.fixture(scope="session")
def overlay(tmp_path_factory):
    out = tmp_path_factory.mktemp("me") / "nodes.json"
    main(["check", SAMPLE, "--isolated", "--format", "model-explorer", "-o", str(out)])
    return json.loads(out.read_text())


def test_node_data_format(overlay):
    assert list(overlay) == ["graph"]
    graph = overlay["graph"]
    assert all(isinstance(t["value"], int) and t["bgColor"].startswith("#") for t in graph["thresholds"])
    for result in graph["results"].values():
        assert set(result) <= {"value", "bgColor"}
        assert isinstance(result["value"], int) or ("bgColor" in result and result["value"] in ("cpu", "cuda:0"))
    assert graph["results"]["_d2h_copy_default"]["value"] == 2048
    assert graph["results"]["aten_cumsum_default"]["value"] == "cpu"


def test_node_ids_are_the_exported_programs_fx_names(overlay):
    program = runpy.run_path(SAMPLE)["program"]()
    nodes = program.exported_program().graph_module.graph.nodes
    assert set(overlay["graph"]["results"]) <= {n.name for n in nodes}
    # every node but the output and the lowered modules' get_attr gets a value
    assert {n.name for n in nodes if n.op not in ("output", "get_attr")} <= set(overlay["graph"]["results"])


def _overlay_of(tmp_path, *args):
    out = tmp_path / "nodes.json"
    code = main(["check", *args, "--isolated", "--no-cache", "--exit-zero", "--format", "model-explorer", "-o", str(out)])
    return code, json.loads(out.read_text())


def test_a_top_level_cond_gives_only_fx_names(tmp_path, monkeypatch):
    """The moves xferlint adds for a `cond`'s results (`cond:merge`) have no FX node: left out."""
    sample = "sample_models/cond_top_level.py"
    _, data = _overlay_of(tmp_path, sample)
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("cond_top_level", sample)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "cond_top_level", module)  # torch.cond traces by module name
    spec.loader.exec_module(module)
    names = {n.name for n in module.program().exported_program().graph_module.graph.nodes}
    assert "cond" in data["graph"]["results"]
    assert set(data["graph"]["results"]) <= names


def test_a_pt2_archive_is_keyed_by_the_fx_names_torch_export_load_gives(tmp_path):
    """A `.pt2` is what the adapter opens: its node data is written, under the loaded
    program's FX names (a cond's results included)."""
    import torch

    for archive in ("sample_models/pt2/round_trip.pt2", "sample_models/pt2/cond_round_trip.pt2"):
        _, data = _overlay_of(tmp_path, archive)
        names = {n.name for n in torch.export.load(archive).graph.nodes}
        results = data["graph"]["results"]
        assert results and set(results) <= names, archive
    _, data = _overlay_of(tmp_path, "sample_models/pt2/round_trip.pt2")
    assert data["graph"]["results"]["to"] == {"value": 128}  # the D2H's bytes per call
    assert data["graph"]["results"]["sin"]["value"] == "cuda:0"


def test_a_pte_program_is_left_out_with_a_note(tmp_path, capsys):
    from xferlint.testing import synthetic_pte as sp

    pte = tmp_path / "ladder.pte"
    pte.write_bytes(sp.ladder(2))
    _, data = _overlay_of(tmp_path, str(pte))
    assert data == {}
    err = capsys.readouterr().err
    assert "note: model-explorer: left out a program read from a .pte file" in err
    _, data = _overlay_of(tmp_path, str(pte), "-q")
    assert data == {} and "note:" not in capsys.readouterr().err
