"""One hook for every rule: its examples, its metadata and its docstring.

`pytest_generate_tests` parametrizes over `all_rules()` at collection time, so a rule
added later (a new module in `xferlint/rules/`) is tested here without touching this file.
Each example is built (a real ExecuTorch lowering, or a hand-built view where ExecuTorch
cannot produce the case on a CPU machine), linted with only its own rule selected, and
must produce exactly `example.expect` findings.
"""

from __future__ import annotations

import re

import pytest

from xferlint.api import lint
from xferlint.docs import explain
from xferlint.findings import Applicability, Severity
from xferlint.rules.base import DOC_SECTIONS, Example, Rule, all_rules

REQUIRED = [s for s in DOC_SECTIONS if s != "Fix safety"]


def _example_cases():
    for rule in all_rules():
        for index, example in enumerate(rule.examples):
            slug = re.sub(r"[^A-Za-z0-9]+", "-", example.description).strip("-")[:40]
            yield pytest.param(rule, example, id=f"{rule.code}-{index}-{slug}")


def pytest_generate_tests(metafunc):
    if "rule_example" in metafunc.fixturenames:
        metafunc.parametrize("rule, rule_example", list(_example_cases()))
    elif "rule" in metafunc.fixturenames:
        rules = all_rules()
        metafunc.parametrize("rule", rules, ids=[r.code for r in rules])


def test_there_are_rules():
    codes = [r.code for r in all_rules()]
    assert {"XF001", "XF002", "XF003"} <= set(codes)
    assert codes == sorted(codes)


def test_example(rule: type[Rule], rule_example: Example):
    program = rule_example.build()
    findings = lint(program, select=[rule.code, *rule_example.select])
    assert all(f.code == rule.code for f in findings)
    assert len(findings) == rule_example.expect, (
        f"{rule.code} ({rule.name}) on example {rule_example.description!r}: expected "
        f"{rule_example.expect} finding(s), got {len(findings)}:\n"
        + "\n".join(f"  {f.message}" for f in findings)
    )
    for finding in findings:
        assert finding.name == rule.name
        assert finding.severity == rule.severity
        # a rule that declares a fix may still report a finding it cannot fix (XF002 on
        # ExecuTorch programs, XF004 when the copies cannot be shared); one that declares
        # none never has a fixable finding
        assert not finding.fixable or rule.fix_applicability is not None
        assert len(finding.nodes) == len(finding.devices)
        assert finding.nodes or finding.location is not None  # a finding about a comment has no nodes
        assert finding.message.strip()


def test_metadata(rule: type[Rule]):
    assert re.fullmatch(r"XF\d{3}", rule.code), rule.code
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", rule.name), f"{rule.name} is not kebab-case"
    assert isinstance(rule.severity, Severity)
    assert rule.fix_applicability is None or isinstance(rule.fix_applicability, Applicability)
    assert rule.__module__.startswith("xferlint.rules."), "rules live in xferlint/rules/, one per module"
    assert not rule.__module__.rsplit(".", 1)[-1].startswith("_")


def test_names_and_codes_are_unique():
    rules = all_rules()
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)


def test_examples_cover_both_sides(rule: type[Rule]):
    examples = rule.examples
    assert all(isinstance(e, Example) for e in examples)
    assert any(e.expect == 0 for e in examples), f"{rule.code} has no valid (expect=0) example"
    assert any(e.expect > 0 for e in examples), f"{rule.code} has no invalid (expect>0) example"
    assert all(e.expect >= 0 and e.description.strip() and callable(e.build) for e in examples)


def test_docstring_sections(rule: type[Rule]):
    doc = rule.doc()
    assert doc, f"{rule.code} has no docstring"
    summary = doc.splitlines()[0].strip()
    assert summary and not summary.startswith("#"), "the first line is the one-line summary"
    expected = REQUIRED[:4] + (["Fix safety"] if rule.fix_applicability is not None else []) + REQUIRED[4:]
    headings = re.findall(r"^##\s+(.*\S)\s*$", doc, flags=re.MULTILINE)
    assert headings == expected, f"{rule.code} docstring sections {headings}, expected {expected}"
    assert all(body.strip() for body in rule.sections().values()), "a section is empty"


def test_rule_explanation_comes_from_the_docstring(rule: type[Rule]):
    for selector in (rule.code, rule.name):
        text = explain(selector)
        assert text.startswith(f"# {rule.name} ({rule.code})")
        assert rule.summary() in text
        for heading in rule.sections():
            assert f"## {heading}" in text


def test_discovering_rules_imports_no_torch():
    """The .pte path must stay torch-free: rule modules build their examples lazily."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from xferlint.rules.base import all_rules\n"
        "from xferlint.selection import select_rules\n"
        "assert all_rules() and select_rules()\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch'))\n"
        "print(heavy[:5])\n"
        "sys.exit(1 if heavy else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"importing the rules imported {done.stdout.strip()} {done.stderr[-500:]}"


def test_rule_modules_are_listed_as_pkgutil_lists_them(tmp_path):
    """Discovery lists the rules package's folder itself (pkgutil would import `inspect`):
    the same names, in the same order, for every kind of entry a folder can hold."""
    import pkgutil

    from xferlint.rules.base import _module_names

    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
    for name in ("zeta.py", "alpha.py", "compiled.pyc", "native.cpython-311-x86_64-linux-gnu.so", "__init__.py",
                 "not-a-name.py", "notes.txt", "README", "dup.py", "dup.pyc"):
        (first / name).write_text("")
    (first / "package").mkdir()
    (first / "package" / "__init__.py").write_text("")
    (first / "folder").mkdir()  # no __init__.py: not a package
    (first / "__pycache__").mkdir()
    (second / "alpha.py").write_text("")  # also in the first folder: listed once
    (second / "beta.py").write_text("")
    path = [str(first), str(second), str(tmp_path / "missing")]
    assert _module_names(path) == [info.name for info in pkgutil.iter_modules(path)]
