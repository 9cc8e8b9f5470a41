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
