"""`xferlint check --format sarif` on real lowered programs outside the repository:
source locations, code flows, logical locations, rules, load failures, determinism.
Every SARIF here is validated (schema + GitHub limits) by the `sarif` fixture."""

from __future__ import annotations

import json
import os
import subprocess

from sarif_helpers import forward_lines, line_text, resolve_uri

from xferlint.reporters.sarif import project_root
from xferlint.rules.base import all_rules


def _by_rule(results):
    return {r["ruleId"]: r for r in results}


def _physical(doc, location):
    physical = location["physicalLocation"]
    path = resolve_uri(doc, physical["artifactLocation"])
    return path, physical.get("region", {})


def test_every_result_points_into_forward(sarif, model_dir):
    out = sarif(["pipeline.py"], cwd=model_dir)  # every rule
    assert out.rc == 1
    assert {"XF001", "XF002"} <= {r["ruleId"] for r in out.results}
    for result in out.results:
        assert result["codeFlows"][0]["threadFlows"][0]["locations"]
        path, region = _physical(out.doc, result["locations"][0])
        assert path == os.path.join(model_dir, "pipeline.py")
        assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {
            "uri": "pipeline.py", "uriBaseId": "%SRCROOT%"}
        assert region["startLine"] in forward_lines(path)
        text = line_text(path, region["startLine"])
        assert region["snippet"]["text"] == text.strip()
        assert text[region["startColumn"] - 1:].startswith(text.strip())
    results = _by_rule(out.results)
    # XF001: the mm's value bounces to host; it is produced on the mm line.
    assert _physical(out.doc, results["XF001"]["locations"][0])[1]["snippet"]["text"] == "h = torch.mm(x, self.weight)"
    assert _physical(out.doc, results["XF002"]["locations"][0])[1]["snippet"]["text"] == "h = h + bias"


def test_code_flows_walk_the_copies(sarif, model_dir):
    out = sarif(["pipeline.py", "--select", "XF001,XF002"], cwd=model_dir)
    expected = {
        "XF001": (["producer", "d2h", "h2d", "consumer"], ["cuda:0", "cpu", "cuda:0", "cuda:0"]),
        "XF002": (["producer", "d2h", "h2d", "consumer"], ["cuda:0", "cpu", "cuda:1", "cuda:1"]),
    }
    for rule, result in _by_rule(out.results).items():
        (flow,) = result["codeFlows"]
        (thread,) = flow["threadFlows"]
        steps = thread["locations"]
        roles, devices = expected[rule]
        assert [s["properties"]["role"] for s in steps] == roles
        assert [s["properties"]["device"] for s in steps] == devices
        assert [s["executionOrder"] for s in steps] == [1, 2, 3, 4]
        assert steps[1]["properties"]["operator"].startswith("et_copy._d2h_copy")
        assert steps[2]["properties"]["operator"].startswith("et_copy._h2d_copy")
        for step, device in zip(steps, devices):
            assert device in step["location"]["message"]["text"]
            path, region = _physical(out.doc, step["location"])
            assert region["startLine"] in forward_lines(path)
            (logical,) = step["location"]["logicalLocations"]
            assert logical["fullyQualifiedName"] == f"pipeline.py:program/forward/{logical['name']}"
        # the producer is the mm (add) line, the consumer the next op's line
        lines = [s["location"]["physicalLocation"]["region"]["startLine"] for s in steps]
        assert lines[0] == lines[1] < lines[2] == lines[3]
        # related locations: the other steps, the far end of the transfer among them
        related = result["relatedLocations"]
        assert [r["id"] for r in related] == [2, 3, 4]
        assert related[-1]["physicalLocation"]["region"]["startLine"] == lines[3]
        assert related[-1]["message"]["text"] == steps[3]["location"]["message"]["text"]


def test_logical_locations_name_program_method_node(sarif, model_dir):
    out = sarif(["pipeline.py"], cwd=model_dir)
    table = out.run["logicalLocations"]
    for result in out.results:
        (logical,) = result["locations"][0]["logicalLocations"]
        node = table[logical["index"]]
        method = table[node["parentIndex"]]
        program = table[method["parentIndex"]]
        assert (node["kind"], method["kind"], program["kind"]) == ("variable", "function", "module")
        assert (method["name"], program["name"]) == ("forward", "program")
        assert program["fullyQualifiedName"] == "pipeline.py:program"
        assert node["name"] == logical["name"] == result["codeFlows"][0]["threadFlows"][0]["locations"][0][
            "location"]["logicalLocations"][0]["name"]
        assert "parentIndex" not in program
    assert [entry["index"] for entry in table] == list(range(len(table)))


def test_rules_are_every_enabled_rule_even_without_findings(sarif, model_dir):
    out = sarif(["pipeline.py", "--select", "XF003"], cwd=model_dir)
    assert out.rc == 0 and out.results == []
    assert [r["id"] for r in out.run["tool"]["driver"]["rules"]] == ["XF003"]
    out = sarif(["pipeline.py", "--ignore", "XF002"], cwd=model_dir)
    enabled = [r.code for r in all_rules() if r.code != "XF002"]
    assert [r["id"] for r in out.run["tool"]["driver"]["rules"]] == enabled
    assert "XF001" in {r["ruleId"] for r in out.results} and "XF002" not in {r["ruleId"] for r in out.results}


def test_rule_metadata_comes_from_the_rule_class(sarif, model_dir):
    out = sarif(["pipeline.py"], cwd=model_dir)
    driver = out.run["tool"]["driver"]
    assert driver["name"] == "xferlint"
    from xferlint import __version__

    assert driver["version"] == driver["semanticVersion"] == __version__
    for descriptor, rule in zip(driver["rules"], all_rules()):
        assert descriptor["id"] == rule.code and descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary()
        assert descriptor["fullDescription"]["text"] == " ".join(rule.sections()["What it does"].split())
        assert descriptor["properties"]["tags"] == list(rule.all_tags())
        assert descriptor["properties"]["precision"] == rule.precision
        assert descriptor["defaultConfiguration"]["level"] == {"warning": "warning", "error": "error",
                                                                 "info": "note"}[rule.severity.value]
        for heading, body in rule.sections().items():
            assert f"## {heading}\n{body}" in descriptor["help"]["markdown"]
    for result in out.results:
        assert result["level"] == "warning"  # explicit although it is SARIF's default


def test_program_without_source_points_at_the_input_file(sarif, model_dir):
    out = sarif(["nosource.py", "--select", "XF001,XF002,XF003"], cwd=model_dir)
    (result,) = out.results
    location = result["locations"][0]
    path, region = _physical(out.doc, location)
    assert path == os.path.join(model_dir, "nosource.py")
    assert line_text(path, region["startLine"]).startswith("program = ")  # where `program` is bound
    (logical,) = location["logicalLocations"]
    assert logical["fullyQualifiedName"] == f"nosource.py:program/forward/{logical['name']}"
    assert f"node `{logical['name']}`" in result["message"]["text"]
    assert "no source information" in result["message"]["text"]
    for step in result["codeFlows"][0]["threadFlows"][0]["locations"]:
        assert _physical(out.doc, step["location"])[0] == path
        assert step["location"]["logicalLocations"][0]["name"] in step["location"]["message"]["text"]


def test_a_finding_without_source_is_at_the_same_node_in_every_format(sarif, model_dir, capsys):
    """Every format names the node a finding without a source line is reported at, and all
    name the same one: the copy it is about (a round trip's D2H), not the first node of its
    path (the getitem that produced the value), which SARIF and the CI formats once named
    while the text said the copy."""
    from xferlint.cli import main

    out = sarif(["nosource.py", "--select", "XF001"], cwd=model_dir)
    (result,) = out.results
    (logical,) = result["locations"][0]["logicalLocations"]
    capsys.readouterr()
    main(["check", "--isolated", "--select", "XF001", "--format", "json", "nosource.py"])
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    node = finding["copies"][0]
    assert node != finding["nodes"][0] and logical["name"] == node
    assert f"node `{node}`" in result["message"]["text"]
    expected = {"concise": f"nosource.py:program:forward:{node}: XF001",
                "github": f"nosource.py:program forward {node}: ",
                "gitlab": f"XF001 nosource.py:program forward {node}: ",
                "junit": f"nosource.py:program forward {node}"}
    for fmt, text in expected.items():
        main(["check", "--isolated", "--select", "XF001", "--format", fmt, "nosource.py"])
        shown = capsys.readouterr().out
        assert text in shown, (fmt, shown[:500])
        assert finding["nodes"][0] not in shown, (fmt, shown[:500])


def test_inputs_that_fail_to_load_are_notifications(sarif, model_dir):
    out = sarif(["pipeline.py", "broken.py", "missing.py"], cwd=model_dir)
    assert out.rc == 2
    assert {"XF001", "XF002"} <= {r["ruleId"] for r in out.results}  # the others are still linted
    (invocation,) = out.run["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert [n["properties"]["input"] for n in notes] == ["broken.py:program", "missing.py"]
    assert all(n["level"] == "error" for n in notes)
    assert "the model cannot be built" in notes[0]["message"]["text"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"
    assert "locations" not in notes[1]
    assert "broken.py" in out.stderr  # and one line on stderr, as for every format


def test_clean_run_is_successful(sarif, model_dir):
    out = sarif(["pipeline.py", "--select", "XF003"], cwd=model_dir)
    assert out.run["invocations"] == [{"executionSuccessful": True}]
    assert out.run["automationDetails"]["id"] == "xferlint/"
    assert out.run["columnKind"] == "unicodeCodePoints"


def test_project_root_and_files_outside_it(sarif, model_dir, repo_root):
    target = os.path.join(model_dir, "pipeline.py")
    # From the repository, the default root is its work tree: the model is outside it.
    outside = sarif([target], cwd=repo_root, all_relative=False)
    assert outside.run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == f"file://{repo_root}/"
    artifact = outside.results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": f"file://{target}"}
    # --project-root makes it relative again.
    inside = sarif([target, "--project-root", model_dir], cwd=repo_root)
    assert inside.run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == f"file://{model_dir}/"
    assert inside.results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pipeline.py"


def test_default_root_is_the_enclosing_work_tree(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    nested = tmp_path / "models" / "vision"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert project_root(None) == str(tmp_path)
    assert project_root("other") == str(nested / "other")


def test_output_is_deterministic_and_written_whole(sarif, model_dir, tmp_path):
    first = sarif(["pipeline.py", "dead.py", "nosource.py"], cwd=model_dir)
    second = sarif(["nosource.py", "dead.py", "pipeline.py"], cwd=model_dir)
    assert first.text == second.text  # input order does not matter; results are sorted
    assert first.text.endswith("}\n")
    target = tmp_path / "out.sarif"
    written = sarif(["pipeline.py", "dead.py", "nosource.py", "-o", str(target)], cwd=model_dir)
    assert written.text == first.text
    assert [p.name for p in tmp_path.iterdir()] == ["out.sarif"]  # no temporary left behind
    keys = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"]) for r in first.results]
    assert keys == sorted(keys)


def test_a_second_process_writes_the_same_bytes(sarif, model_dir, xferlint_exe):
    in_process = sarif(["pipeline.py", "dead.py"], cwd=model_dir)
    proc = subprocess.run(
        [xferlint_exe, "check", "--isolated", "--format", "sarif", "pipeline.py", "dead.py"],
        cwd=model_dir, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == in_process.text


def _report_with(findings):
    from xferlint.report import build_report

    return build_report(findings, [], inputs=1, programs=1)


def test_pte_points_at_line_one_of_the_file(sarif, model_dir):
    """A .pte has no stack traces: its results sit on the file itself, nodes named."""
    from xferlint.frontends.entrypoints import expand, load_entry_point

    (program,) = load_entry_point(expand(os.path.join(model_dir, "pipeline.py"))[0])
    pte = os.path.join(model_dir, "pipeline.pte")
    if not os.path.exists(pte):
        with open(pte, "wb") as handle:
            handle.write(program.obj.buffer)
    out = sarif(["pipeline.pte", "--select", "XF001,XF002,XF003"], cwd=model_dir)
    assert sorted(r["ruleId"] for r in out.results) == ["XF001", "XF002"]
    for result in out.results:
        location = result["locations"][0]
        assert location["physicalLocation"] == {
            "artifactLocation": {"uri": "pipeline.pte", "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": 1, "startColumn": 1}}
        (logical,) = location["logicalLocations"]
        assert logical["fullyQualifiedName"] == f"pipeline.pte/forward/{logical['name']}"
        assert f"node `{logical['name']}`" in result["message"]["text"]
        assert any(s["properties"]["operator"].startswith("et_copy.")
                   for s in result["codeFlows"][0]["threadFlows"][0]["locations"])


def test_help_uri_from_the_package_urls(monkeypatch, schema_validate):
    from xferlint.reporters import ReportOptions
    from xferlint.reporters import sarif as reporter

    monkeypatch.setattr(reporter, "_project_urls",
                        lambda: {"documentation": "https://example.org/xferlint/rules",
                                 "homepage": "https://example.org/xferlint"})
    doc = json.loads(reporter.emit(_report_with([]), ReportOptions()))
    assert schema_validate(doc) == []
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://example.org/xferlint"
    first = driver["rules"][0]
    assert first["helpUri"] == f"https://example.org/xferlint/rules#{first['name']}-{first['id'].lower()}"
    monkeypatch.setattr(reporter, "_project_urls", lambda: {})
    doc = json.loads(reporter.emit(_report_with([]), ReportOptions()))
    assert "helpUri" not in doc["runs"][0]["tool"]["driver"]["rules"][0]


def test_a_code_flow_past_githubs_limit_shows_its_first_steps_and_its_consumer(monkeypatch, schema_validate):
    """GitHub code scanning takes at most 10,000 code-flow steps a result; a delegate
    reading more host inputs than the limit keeps every one in its finding. (The limit is
    lowered here: validating a 10,000-step log against the schema takes minutes.)"""
    from xferlint.api import lint
    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.reporters import ReportOptions
    from xferlint.reporters import sarif as reporter
    from xferlint.testing import synthetic_pte as sp

    assert reporter.MAX_FLOW_STEPS == 10_000
    monkeypatch.setattr(reporter, "MAX_FLOW_STEPS", 12)
    assert list(reporter._shown_steps(12)) == list(range(12))
    inputs = 20
    (finding,) = lint(load_pte_bytes(sp.wide_inputs(inputs), label="wide.pte").view, select=["XF007"])
    assert len(finding.steps) == inputs + 1  # every input, then the delegate
    doc = json.loads(reporter.emit(_report_with([finding]), ReportOptions()))
    assert schema_validate(doc) == []
    (result,) = doc["runs"][0]["results"]
    flow = result["codeFlows"][0]
    (thread,) = flow["threadFlows"]
    assert [step["executionOrder"] for step in thread["locations"]] == [*range(1, 12), inputs + 1]
    assert thread["locations"][-1]["properties"]["role"] == "consumer"
    assert thread["message"]["text"] == f"the first 11 and the last of {inputs + 1} steps"
    assert flow["message"]["text"].startswith("input 0 (v0) (cpu) -> input 1 (v1) (cpu) -> ")
    assert flow["message"]["text"].endswith(f"input 7 (v7) (cpu) -> ({inputs - 8} more) -> "
                                            f"instr 0 (delegate 0: BackendWithCompilerDemo) (cuda:0)")
    assert len(result["relatedLocations"]) == 11  # the steps shown, but the primary
    assert len(result["properties"]["devices"]) == inputs + 1


def test_a_code_flow_at_the_limit_is_whole(monkeypatch):
    from xferlint.api import lint
    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.reporters import ReportOptions
    from xferlint.reporters import sarif as reporter
    from xferlint.testing import synthetic_pte as sp

    monkeypatch.setattr(reporter, "MAX_FLOW_STEPS", 21)
    (finding,) = lint(load_pte_bytes(sp.wide_inputs(20), label="wide.pte").view, select=["XF007"])
    doc = json.loads(reporter.emit(_report_with([finding]), ReportOptions()))
    (thread,) = doc["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"]
    assert len(thread["locations"]) == 21 and "message" not in thread
