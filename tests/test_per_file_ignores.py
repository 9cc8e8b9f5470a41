"""`per-file-ignores` in `[tool.xferlint]`: patterns relative to the config file, matched
against a finding's source file and its input file; validated like the other keys."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from xferlint.config import load_settings
from xferlint.errors import ConfigError
from xferlint.findings import Finding, Location, Severity
from xferlint.per_file_ignores import PerFileIgnores


def _config(tmp_path, body: str) -> str:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.xferlint]\n{body}\n")
    return str(path)


def _finding(code: str, source: str, file: str = None) -> Finding:
    return Finding(code=code, name="n", severity=Severity.WARNING, message="m", input="i", program="p",
                   method="forward", nodes=[], devices=[], bytes=None, fixable=False,
                   location=Location(file=source, line=1), file=file)


def test_patterns_are_relative_to_the_config_file(tmp_path):
    settings, _ = load_settings(_config(tmp_path, 'per-file-ignores = {"models/legacy/*.py" = ["XF006"]}'))
    table = PerFileIgnores(settings.per_file_ignores)
    assert table.ignored(_finding("XF006", str(tmp_path / "models/legacy/old.py")))
    assert not table.ignored(_finding("XF001", str(tmp_path / "models/legacy/old.py")))  # another rule
    assert not table.ignored(_finding("XF006", str(tmp_path / "models/new.py")))  # another file
    assert not table.ignored(_finding("XF006", "/elsewhere/models/legacy/old.py"))  # not below the config


def test_the_input_file_matches_too_and_a_bare_name_anywhere(tmp_path):
    settings, _ = load_settings(_config(
        tmp_path, 'per-file-ignores = {"exported/*.pte" = ["redundant-round-trip"], "legacy_*.py" = ["XF0"]}'))
    table = PerFileIgnores(settings.per_file_ignores)
    # a .pte finding located in model source through --etrecord: its input file matches
    assert table.ignored(_finding("XF001", str(tmp_path / "model.py"), file=str(tmp_path / "exported/m.pte")))
    assert table.ignored(_finding("XF004", str(tmp_path / "a/b/legacy_x.py")))
    assert table.ignored(_finding("XF004", str(tmp_path / "legacy_x.py")))
    assert not table.ignored(_finding("XF100", str(tmp_path / "legacy_x.py")))


def test_extend_per_file_ignores_adds_to_it(tmp_path):
    settings, _ = load_settings(_config(tmp_path, 'per-file-ignores = {"a.py" = ["XF001"]}\n'
                                                  'extend-per-file-ignores = {"b.py" = ["XF002"]}'))
    table = PerFileIgnores(settings.per_file_ignores, settings.extend_per_file_ignores)
    assert table.ignored(_finding("XF001", str(tmp_path / "a.py")))
    assert table.ignored(_finding("XF002", str(tmp_path / "b.py")))


@pytest.mark.parametrize("body, says", [
    ('per-file-ignores = {"a/*.py" = []}', "per-file-ignores: 'a/*.py': an empty list of rules"),
    ('per-file-ignores = {"a/*.py" = ["XF999"]}', "per-file-ignores: 'a/*.py': unknown rule selector 'XF999'"),
    ('per-file-ignores = {"a/*.py" = "XF001"}', "per-file-ignores"),
    ('per-file-ignores = ["XF001"]', "per-file-ignores"),
])
def test_bad_tables_name_the_file_and_the_key(tmp_path, body, says):
    path = _config(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value).startswith(f"{path}: [tool.xferlint] ") and says in str(caught.value)


@pytest.fixture(scope="module")
def project(tmp_path_factory, repo_root):
    root = tmp_path_factory.mktemp("pfi")
    os.makedirs(root / "models" / "legacy")
    shutil.copy(os.path.join(repo_root, "sample_models", "redundant_round_trip.py"), root / "models" / "legacy" / "rt.py")
    return root


@pytest.mark.parametrize("pattern, rc", [("models/legacy/*.py", 0), ("models/current/*.py", 1)])
def test_the_cli_drops_matching_findings(project, pattern, rc):
    (project / "pyproject.toml").write_text(f'[tool.xferlint]\nper-file-ignores = {{"{pattern}" = ["XF001"]}}\n')
    exe = os.path.join(os.path.dirname(sys.executable), "xferlint")
    done = subprocess.run([exe, "check", "models/legacy/rt.py", "-q"], cwd=project, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == rc, done.stderr
    assert ("XF001" in done.stdout) is (rc == 1)
