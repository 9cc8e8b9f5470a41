"""CI and editor integration: the pre-commit hooks, the GitHub Actions workflow, and
`xferlint rule` as the one source of rule help."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from xferlint.cli import build_parser, main
from xferlint.rules.base import all_rules

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(REPO, ".pre-commit-hooks.yaml")
WORKFLOW = os.path.join(REPO, "docs", "ci", "xferlint-code-scanning.yml")


def _hooks():
    from pre_commit.clientlib import load_manifest

    return {hook["id"]: hook for hook in load_manifest(HOOKS)}  # pre-commit's own validation


def _xferlint_args(command: str) -> list[str]:
    words = shlex.split(command)
    assert os.path.basename(words[0]) == "xferlint", command
    return words[1:]


def test_pre_commit_manifest():
    hooks = _hooks()
    assert set(hooks) == {"xferlint-check", "xferlint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["require_serial"] is True
    files = re.compile(hooks["xferlint-check"]["files"])
    assert all(files.search(p) for p in ("models/net.py", "out/net.pte", "net.pt2"))
    assert not any(files.search(p) for p in ("README.md", "net.pyc", "setup.cfg"))
    assert re.compile(hooks["xferlint-fix"]["files"]).search("net.pte")
    assert not re.compile(hooks["xferlint-fix"]["files"]).search("net.py")


def test_check_hook_skips_files_that_define_no_program(model_dir, capsys, monkeypatch):
    args = _xferlint_args(_hooks()["xferlint-check"]["entry"])
    build_parser().parse_args([*args, "x.py"])
    monkeypatch.chdir(model_dir)
    # what pre-commit passes: every changed file that matches `files`
    assert main([*args, "--isolated", "helper.py", "pipeline.py"]) == 1
    out = capsys.readouterr().out
    assert "pipeline.py:" in out and "helper.py" not in out
    assert main([*args, "--isolated", "helper.py"]) == 0
    assert main(["check", "--isolated", "helper.py"]) == 2  # without the flag it is an error


def test_fix_hook_command_parses():
    args = _xferlint_args(_hooks()["xferlint-fix"]["entry"])
    parsed, unknown = build_parser().parse_known_args([*args, "net.pte"])
    if unknown == ["--fix"]:
        pytest.skip("`xferlint check --fix` (the autofix feature) is not in this tree yet")
    assert not unknown and parsed.paths == ["net.pte"]


def _steps():
    with open(WORKFLOW, encoding="utf-8") as handle:
        workflow = yaml.safe_load(handle)
    (job,) = workflow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    return job["steps"], workflow


def test_workflow_lints_uploads_and_gates():
    steps, workflow = _steps()
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    lint = next(s for s in steps if "xferlint check" in s.get("run", ""))
    args = _xferlint_args(lint["run"].replace('"$MODELS"', "models/"))
    parsed = build_parser().parse_args(args)
    assert (parsed.output_format, parsed.exit_zero) == ("sarif", True)
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == parsed.output
    assert upload["with"]["category"]
    assert upload["if"].startswith("always()")
    assert steps.index(upload) > steps.index(lint)


def test_workflow_restores_the_results_cache_the_lint_uses():
    steps, workflow = _steps()
    lint = next(s for s in steps if "xferlint check" in s.get("run", ""))
    assert not {"--no-cache", "--cache-dir"} & set(_xferlint_args(lint["run"]))
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert steps.index(restore) < steps.index(lint)
    assert restore["with"]["path"] == "${{ env.XFERLINT_CACHE_DIR }}" and workflow["env"]["XFERLINT_CACHE_DIR"]
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])  # a new key per run, the last restored


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_workflow_gate_reads_the_sarif(sarif, model_dir, tmp_path):
    steps, _ = _steps()
    gate = next(s for s in steps if s.get("name") == "Gate")["run"]
    for argv, passes in ((["pipeline.py"], False), (["pipeline.py", "--select", "XF003"], True)):
        out = sarif(argv, cwd=model_dir)
        (tmp_path / "xferlint.sarif").write_text(out.text, encoding="utf-8")
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", gate], cwd=tmp_path, capture_output=True, text=True)
        assert (proc.returncode == 0) is passes, proc.stdout + proc.stderr


def test_rule_help_is_what_xferlint_rule_prints(sarif, model_dir, capsys):
    out = sarif(["pipeline.py"], cwd=model_dir)
    helps = {r["id"]: r["help"] for r in out.run["tool"]["driver"]["rules"]}
    for rule in all_rules():
        assert main(["rule", rule.code]) == 0
        printed = capsys.readouterr().out
        assert helps[rule.code]["markdown"] == helps[rule.code]["text"] == printed
    assert main(["rule", "--all"]) == 0
    everything = capsys.readouterr().out
    assert all(helps[code]["markdown"] in everything for code in helps)
    assert main(["rule", "XF999"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_docs_show_the_files_that_exist():
    with open(os.path.join(REPO, "docs", "ci.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert "ci/xferlint-code-scanning.yml" in text
    for hook in _hooks():
        assert hook in text
