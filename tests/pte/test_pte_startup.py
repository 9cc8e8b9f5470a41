"""What a `.pte` check loads: only the torch-free path; on the pinned schema not even
ExecuTorch's generated reader, on another one the decoder's self-check once per process
(not per file). Each check runs in a fresh interpreter, as a user's would, from a
project with a `[tool.xferlint]` table. No timing here: benchmarks/bench_pte.py measures."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_CHECK = r"""
import json, os, sys
from xferlint.frontends.pte import schema
if os.environ.get("UNPINNED"):  # as on an ExecuTorch whose schema differs from the pinned one
    schema.PINNED = ()
from xferlint.cli import main
from xferlint.frontends.pte import program as pp
counts = []
for path in sys.argv[1:]:
    main(["check", path, "--format", "json", "--output", "out-" + str(len(counts)) + ".json", "--exit-zero"])
    counts.append(pp.self_checked()[1])
kinds = sorted(pp.self_checked()[0])
print(json.dumps({"modules": sorted(sys.modules), "counts": counts, "kinds": kinds}))
"""

# Never on the .pte path: torch and ExecuTorch proper (only its generated flatbuffer reader
# is loaded, under stand-in parents), the graph frontend, pydantic, the SARIF and timeline
# code, the test helpers, the worker pool and what workers send back (entry points only),
# the noqa comment parser (no source lines without an ETRecord), logging (torch's loggers).
FORBIDDEN = ("torch", "torchao", "pydantic", "sarif_om", "numpy", "xferlint.testing",
             "xferlint.frontends.executorch", "xferlint.reporters.sarif", "xferlint.analyzer.timeline",
             "xferlint.workers.pool", "xferlint.workers.payloads", "xferlint.suppression", "logging",
             "pkgutil")  # rules are discovered by listing their folder (pkgutil imports inspect)
GENERATED = "executorch.exir._serialize.generated"


@pytest.fixture(scope="module")
def project(tmp_path_factory, pte_bytes):
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n\n[tool.xferlint]\n'
                                         'extend-exclude = ["scratch/"]\n')
    models = root / "models"
    models.mkdir()
    for name in ("addsin-noelide", "mixed-noelide", "cond-nested"):
        (models / f"{name}.pte").write_bytes(pte_bytes(name))
    return root


def _run(root, *paths: str, unpinned: bool = False, cache: str = "") -> dict:
    """A check in a fresh interpreter; every file checked (no results cache) unless `cache`
    names the cache's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XFERLINT") and k != "UNPINNED"}
    env.update({"XFERLINT_CACHE_DIR": cache} if cache else {"XFERLINT_NO_CACHE": "1"})
    if unpinned:
        env["UNPINNED"] = "1"
    done = subprocess.run([sys.executable, "-c", _CHECK, *paths], capture_output=True, text=True, cwd=root,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not done.stderr.strip(), done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_installed_schema_is_the_pinned_one():
    """The fast path runs unchecked only on the schema it was compared on: when ExecuTorch
    is upgraded and its schema changes, this fails until the new one is compared (the
    tests below, unpinned) and pinned."""
    from xferlint.frontends.pte import schema

    assert schema.pinned()


@pytest.mark.parametrize("unpinned", [False, True], ids=["pinned", "unpinned"])
def test_a_pte_check_imports_neither_torch_nor_executorch(project, unpinned):
    result = _run(project, "models", unpinned=unpinned)
    modules = result["modules"]
    loaded = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert loaded == [], loaded
    executorch = [m for m in modules if m.split(".")[0] in ("executorch", "flatbuffers")]
    if unpinned:  # the generated reader, under stand-in parents
        assert executorch and all(m in ("executorch", "flatbuffers") or m.startswith((GENERATED, "flatbuffers."))
                                  for m in executorch), executorch
    else:
        assert executorch == []
    assert "tomllib" in modules  # the [tool.xferlint] table was read
    report = json.loads((project / "out-0.json").read_text())
    assert report["summary"]["inputs"] == 3 and report["summary"]["programs"] == 3
    assert report["findings"] and not report["errors"]


@pytest.mark.parametrize("table", ["", '[tool."\\u0078ferlint"]\nselect = ["XF001"]\n'], ids=["none", "escaped"])
def test_a_pyproject_without_our_table_is_not_parsed(project, tmp_path, table):
    """A pyproject.toml that cannot hold a [tool.xferlint] table (no `xferlint` in its bytes,
    no escape sequence that could spell it) is passed over without importing tomllib; one
    whose quoted key spells it with an escape is read."""
    root = tmp_path / "other"
    (root / "models").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n\n' + table)
    for name in ("addsin-noelide", "mixed-noelide"):
        (root / "models" / f"{name}.pte").write_bytes((project / "models" / f"{name}.pte").read_bytes())
    result = _run(root, "models")
    codes = {f["code"] for f in json.loads((root / "out-0.json").read_text())["findings"]}
    if table:
        assert "tomllib" in result["modules"] and codes == {"XF001"}
    else:
        assert "tomllib" not in result["modules"] and len(codes) > 1


def test_a_check_that_reads_its_files_back_from_the_cache_loads_no_reader(project, tmp_path):
    """The results cache filled by one check, the next reads every file back: the `.pte`
    reader, the view, the rules' analysis and the fix trial are not even imported, and the
    report is the same."""
    cache = str(tmp_path / "cache")
    first = _run(project, "models", cache=cache)
    report = (project / "out-0.json").read_text()
    second = _run(project, "models", cache=cache)
    assert (project / "out-0.json").read_text() == report
    for modules in (first["modules"], second["modules"]):
        assert not [m for m in modules if m.split(".")[0] in ("torch", "executorch", "flatbuffers", "numpy")]
    reading = ("xferlint.frontends.pte.view", "xferlint.fixes.pte", "xferlint.analyzer.cfg")  # (the
    # harness imports the reader's `program` module itself, for its self-check counts)
    assert all(m in first["modules"] for m in reading)
    assert not [m for m in second["modules"] if m in reading]


FILES = ["models/addsin-noelide.pte", "models/mixed-noelide.pte", "models/cond-nested.pte", "models/addsin-noelide.pte"]


def test_the_decoder_self_check_runs_once_per_process_on_another_schema(project):
    """On a schema other than the pinned one the fast reader is compared with ExecuTorch's
    generated accessors once per kind (plan fields, chain inputs/outputs, values, delegates,
    instructions, segments) in a process: linting more files, or the same file again,
    compares nothing more. The reports are those of the pinned reader."""
    pinned = _run(project, *FILES)
    assert pinned["kinds"] == [] and pinned["counts"] == [0] * len(FILES)
    reports = [(project / f"out-{i}.json").read_text() for i in range(len(FILES))]
    result = _run(project, *FILES, unpinned=True)
    assert result["kinds"] == ["chain", "delegates", "instructions", "plan", "segments", "values"]
    first, *rest = result["counts"]
    assert 6 <= first <= 7  # plan, chain, values, delegates, segments, the instructions of up to two chains
    assert rest == [first] * len(rest)
    together = [(project / f"out-{i}.json").read_text() for i in range(len(FILES))]
    assert together == reports
    # the reports are those of a process that checks each file on its own
    assert together[0] == together[3]
    for index, path in enumerate(FILES[:3]):
        _run(project, path, unpinned=True)
        assert (project / "out-0.json").read_text() == together[index], path


_COLLECTOR = r"""
import gc, json, sys
from xferlint import collector
from xferlint.cli import main
frozen, states = [], []
real_freeze = gc.freeze
def freeze():
    frozen.append(1)
    real_freeze()
gc.freeze = freeze
for _ in range(2):
    main(["check", sys.argv[1], "--format", "json", "--output", "out-gc.json", "--exit-zero"])
    states.append([gc.isenabled(), gc.get_freeze_count()])
with collector.collector_paused():  # outside a command nothing is frozen on resume
    pass
states.append([gc.isenabled(), gc.get_freeze_count()])
print(json.dumps({"frozen": len(frozen), "states": states}))
"""


def test_a_command_freezes_what_its_pauses_made_and_leaves_the_collector_as_it_found_it(project):
    """In a command the paused stages' objects are frozen out of later collections; after
    it (an in-process caller: tests, an editor) the collector runs and nothing stays frozen."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("XFERLINT")}, "XFERLINT_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", _COLLECTOR, "models"], capture_output=True, text=True,
                          cwd=project, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["frozen"] >= 2  # at least once per command
    assert result["states"] == [[True, 0], [True, 0], [True, 0]]
    assert json.loads((project / "out-gc.json").read_text())["findings"]


_LEFT = r"""
import gc, json, sys
from xferlint.analyzer.view import MethodView, Node, ProgramView, Value
from xferlint.cli import main
left = []
for argv in (["check", sys.argv[1], "--format", "json", "--output", "out-left.json", "--exit-zero"],
             ["fix", sys.argv[2], "-o", "fixed-left.pte"]):
    main(argv)
    gc.collect()
    kinds = (ProgramView, MethodView, Node, Value)
    left.append(sum(1 for o in gc.get_objects() if isinstance(o, kinds)))
print(json.dumps({"left": left}))
"""


def test_a_command_leaves_nothing_of_its_programs_behind(project, pte_bytes):
    """What a command remembers for its fix trial (lints, nodes by name) ends with it: an
    in-process caller keeps no program alive, and a large one is freed when the command
    ends, not at interpreter exit (where it cost more than the rest of the check)."""
    fixable = project / "fixable"
    fixable.mkdir(exist_ok=True)
    (fixable / "naive.pte").write_bytes(pte_bytes("addsin-noelide-naive"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("XFERLINT")}, "XFERLINT_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", _LEFT, "fixable", "fixable/naive.pte"],
                          capture_output=True, text=True, cwd=project, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"left": [0, 0]}
    assert any(f["fixable"] for f in json.loads((project / "out-left.json").read_text())["findings"])
    assert (project / "fixed-left.pte").stat().st_size > 0


_WITHOUT_EXECUTORCH = r"""
import sys
sys.modules["executorch"] = sys.modules["torch"] = None  # neither is installed
from xferlint.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_pte_files_are_checked_and_fixed_without_executorch_installed(project, pte_bytes):
    """A lint-only environment (`pip install xferlint`, the pre-commit hooks) has neither
    torch nor ExecuTorch: `.pte` files are read with the pinned schema, and `check` and
    `fix` give what they give beside ExecuTorch."""
    fixable = project / "fixable-bare"
    fixable.mkdir(exist_ok=True)
    (fixable / "naive.pte").write_bytes(pte_bytes("addsin-noelide-naive"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("XFERLINT") and k != "UNPINNED"},
           "XFERLINT_NO_CACHE": "1"}
    outputs = {}
    for label, script in (("bare", _WITHOUT_EXECUTORCH), ("full", "import sys\nfrom xferlint.cli import main\n"
                                                                   "sys.exit(main(sys.argv[1:]))\n")):
        for argv in (["check", "models", "fixable-bare", "--format", "json", "--output", f"{label}.json"],
                     ["fix", "fixable-bare/naive.pte", "-o", f"{label}-fixed.pte"]):
            done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True,
                                  cwd=project, env=env, timeout=300)
            assert done.returncode in (0, 1), done.stderr[-2000:]
            assert "Traceback" not in done.stderr and "install executorch" not in done.stderr, done.stderr
        outputs[label] = ((project / f"{label}.json").read_text(), (project / f"{label}-fixed.pte").read_bytes())
    report = json.loads(outputs["bare"][0])
    assert report["summary"]["programs"] == 4 and not report["errors"]
    assert any(f["fixable"] for f in report["findings"])
    assert outputs["bare"][0].replace("bare", "full") == outputs["full"][0].replace("bare", "full")
    assert outputs["bare"][1] == outputs["full"][1]
