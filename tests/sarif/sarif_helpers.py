"""Checks shared by the SARIF tests: GitHub code scanning's limits and URI resolution."""

from __future__ import annotations

import ast
from urllib.parse import unquote, urlparse

GITHUB_MAX_RESULTS = 25_000
GITHUB_MAX_FLOW_STEPS = 10_000
GITHUB_MAX_DESCRIPTION = 1024


def _is_relative_reference(uri: str) -> bool:
    parsed = urlparse(uri)
    return not parsed.scheme and not parsed.netloc and not uri.startswith("/")


def _artifact_locations(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("artifactLocation",) and isinstance(value, dict):
                yield value
            yield from _artifact_locations(value)
    elif isinstance(node, list):
        for item in node:
            yield from _artifact_locations(item)


def _keys(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


def check_github_limits(doc: dict, all_relative: bool) -> None:
    """What GitHub code scanning requires beyond the schema."""
    assert "security-severity" not in set(_keys(doc)), "security-severity turns rules into security rules"
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/")
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(r["id"] for r in rules)
    for rule in rules:
        assert rule["name"] != rule["id"]
        assert 0 < len(rule["shortDescription"]["text"]) <= GITHUB_MAX_DESCRIPTION
        assert 0 < len(rule["fullDescription"]["text"]) <= GITHUB_MAX_DESCRIPTION
        assert rule["properties"]["problem.severity"] in {"error", "warning", "recommendation"}
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note"}
    assert len(run["results"]) <= GITHUB_MAX_RESULTS
    for result in run["results"]:
        assert len(result["locations"]) == 1
        if result.get("baselineState") == "absent":  # a baseline entry nothing matches: no alert
            assert (result["kind"], result["level"]) == ("pass", "none")
            assert result["partialFingerprints"]["xferlint/baseline"]
            continue
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in {"error", "warning", "note"}  # explicit, always
        assert result["partialFingerprints"]["xferlint/v1"]
        for flow in result.get("codeFlows", []):
            for thread in flow["threadFlows"]:
                assert len(thread["locations"]) <= GITHUB_MAX_FLOW_STEPS
        for related in result.get("relatedLocations", []):
            assert related["message"]["text"]
    for artifact in _artifact_locations(doc):
        if "uriBaseId" in artifact:
            assert artifact["uriBaseId"] == "%SRCROOT%"
            assert _is_relative_reference(artifact["uri"]), artifact
        else:
            assert not all_relative, f"absolute URI for a file inside the root: {artifact}"
            assert artifact["uri"].startswith("file:///")


def resolve_uri(doc: dict, artifact: dict) -> str:
    """The local path an artifactLocation names."""
    uri = artifact["uri"]
    if "uriBaseId" in artifact:
        base = doc["runs"][0]["originalUriBaseIds"][artifact["uriBaseId"]]["uri"]
        return unquote(urlparse(base).path) + unquote(uri)
    return unquote(urlparse(uri).path)


def forward_lines(path: str) -> range:
    """The lines of the `forward` method in a model file."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            return range(node.lineno, node.end_lineno + 1)
    raise AssertionError(f"{path} has no forward")


def line_text(path: str, line: int) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().splitlines()[line - 1]
