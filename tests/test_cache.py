"""The results cache of a plain check (xferlint/workers/cache.py): a program file checked
before, unchanged, under the same settings, is read back instead of checked again, and the
report is the same byte for byte as without the cache; anything that changes the result
(the file's bytes, the settings, a noqa comment in the model's source) checks it again."""

from __future__ import annotations

import contextlib
import json
import os
import shutil

import pytest

import xferlint.pipeline as pipeline
from xferlint.cli import main
from xferlint.testing import synthetic_pte
from xferlint.workers import cache as cache_module

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(REPO, "sample_models")


@pytest.fixture
def loads(monkeypatch):
    """The program files this process loaded (a file read back from the cache is not)."""
    seen: list[str] = []
    real = pipeline.load_entry

    def counting(entry, *args, **kwargs):
        seen.append(entry.label)
        return real(entry, *args, **kwargs)

    monkeypatch.setattr(pipeline, "load_entry", counting)
    return seen


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder holding a `.pte` with fixable and refused findings, a `.pt2` whose
    findings point into a copy of its model's source, and the cache folder beside it."""
    root = tmp_path / "project"
    (root / "sample_models" / "pt2").mkdir(parents=True)
    shutil.copy(os.path.join(SAMPLES, "pt2", "host_split.pt2"), root / "sample_models" / "pt2")
    shutil.copy(os.path.join(SAMPLES, "aten_models.py"), root / "sample_models")
    (root / "ladder.pte").write_bytes(synthetic_pte.ladder(40))
    (root / "loops.pte").write_bytes(synthetic_pte.loops(5))
    monkeypatch.chdir(root)
    return root


def _check(out: str, *args: str, cache: str = "", paths=("ladder.pte", "loops.pte", "sample_models")) -> str:
    flags = ("--cache-dir", cache) if cache else ("--no-cache",)
    code = main(["check", *paths, "--format", "json", "-o", out, "--exit-zero", "--isolated", *flags, *args])
    assert code == 0
    with open(out, encoding="utf-8") as handle:
        return handle.read()


def test_a_second_run_reads_every_file_back_and_reports_the_same(project, tmp_path, loads):
    cache = str(tmp_path / "cache")
    plain = _check(str(tmp_path / "plain.json"))
    first = _check(str(tmp_path / "first.json"), cache=cache)
    assert sorted(loads) == sorted(["ladder.pte", "loops.pte", os.path.join("sample_models", "pt2", "host_split.pt2")]
                                   * 2)
    loads.clear()
    second = _check(str(tmp_path / "second.json"), cache=cache)
    assert loads == []  # nothing loaded, analysed or fix-tried again
    assert first == plain and second == plain
    assert any(f["fixable"] for f in json.loads(second)["findings"])  # the fix trial's decisions come back


def test_changed_bytes_are_checked_again_touched_ones_are_not(project, tmp_path, loads):
    cache = str(tmp_path / "cache")
    _check(str(tmp_path / "a.json"), cache=cache)
    (project / "ladder.pte").write_bytes(synthetic_pte.ladder(60))  # same name, other program
    os.utime(project / "loops.pte", ns=(1, 1))  # same bytes, other times (a fresh clone, a restored CI cache)
    loads.clear()
    again = _check(str(tmp_path / "b.json"), cache=cache)
    assert loads == ["ladder.pte"]
    assert again == _check(str(tmp_path / "c.json"))


@pytest.mark.parametrize("args", [("--select", "XF001"), ("--max-transfer-bytes", "1"), ("--unsafe-fixes",),
                                  ("--strict",)])
def test_other_settings_check_the_files_again(project, tmp_path, loads, args):
    cache = str(tmp_path / "cache")
    _check(str(tmp_path / "a.json"), cache=cache)
    loads.clear()
    changed = _check(str(tmp_path / "b.json"), *args, cache=cache)
    assert len(loads) == 3
    assert changed == _check(str(tmp_path / "c.json"), *args)


def test_per_file_ignores_are_part_of_the_key(project, tmp_path, loads):
    cache = str(tmp_path / "cache")
    _check(str(tmp_path / "a.json"), cache=cache)
    config = project / "pyproject.toml"
    config.write_text('[tool.xferlint]\nper-file-ignores = {"ladder.pte" = ["XF001"]}\n', encoding="utf-8")
    loads.clear()
    flags = ("--config", str(config))
    code = main(["check", "ladder.pte", "--format", "json", "-o", str(tmp_path / "b.json"), "--exit-zero",
                 "--cache-dir", cache, *flags])
    assert code == 0 and loads == ["ladder.pte"]
    with open(tmp_path / "b.json", encoding="utf-8") as handle:
        assert not [f for f in json.load(handle)["findings"] if f["code"] == "XF001"]


def test_a_noqa_comment_added_to_the_model_source_is_seen(project, tmp_path, loads):
    cache = str(tmp_path / "cache")
    paths = ("sample_models",)
    before = json.loads(_check(str(tmp_path / "a.json"), cache=cache, paths=paths))
    (finding,) = [f for f in before["findings"] if f["code"] == "XF005"]
    source = finding["location"]["file"]
    assert source == str(project / "sample_models" / "aten_models.py")
    lines = open(source, encoding="utf-8").read().splitlines(keepends=True)
    line = finding["location"]["line"]
    lines[line - 1] = lines[line - 1].rstrip("\n") + "  # xferlint: noqa: XF005\n"
    with open(source, "w", encoding="utf-8") as handle:
        handle.write("".join(lines))
    loads.clear()
    after = _check(str(tmp_path / "b.json"), cache=cache, paths=paths)
    assert len(loads) == 1
    assert not [f for f in json.loads(after)["findings"] if f["code"] == "XF005"]
    assert after == _check(str(tmp_path / "c.json"), paths=paths)


def test_a_spread_run_keeps_what_its_workers_checked(project, tmp_path, loads):
    folder = project / "many"
    folder.mkdir()
    for k in range(10):
        (folder / f"p{k}.pte").write_bytes(synthetic_pte.ladder(10 + k))
    cache = str(tmp_path / "cache")
    first = _check(str(tmp_path / "a.json"), "-j", "2", cache=cache, paths=("many",))
    loads.clear()
    second = _check(str(tmp_path / "b.json"), "-j", "2", cache=cache, paths=("many",))
    assert loads == [] and first == second == _check(str(tmp_path / "c.json"), "-j", "1", paths=("many",))


def test_baseline_runs_read_the_files_back_and_count_what_is_left_as_without(project, tmp_path, loads):
    """The files come back without their methods; what a baseline leaves is counted from
    the copies its findings name, as a run without the cache counts it from the methods."""
    cache = str(tmp_path / "cache")
    baseline = tmp_path / "baseline.json"
    code = main(["check", "ladder.pte", "loops.pte", "sample_models", "--write-baseline", str(baseline),
                 "--isolated", "--cache-dir", cache])
    assert code == 0 and len(loads) == 3
    recorded = json.loads(baseline.read_text(encoding="utf-8"))
    recorded["entries"] = recorded["entries"][::2]  # accept every other finding
    baseline.write_text(json.dumps(recorded), encoding="utf-8")
    loads.clear()
    cached = _check(str(tmp_path / "a.json"), "--baseline", str(baseline), cache=cache)
    assert loads == []  # what --write-baseline checked, read back
    assert cached == _check(str(tmp_path / "b.json"), "--baseline", str(baseline))
    left, everything = json.loads(cached)["summary"], json.loads(_check(str(tmp_path / "c.json")))["summary"]
    assert 0 < left["bytes_flagged"] < everything["bytes_flagged"]


def test_add_noqa_reads_the_files_back_and_the_next_check_sees_its_comments(project, tmp_path, loads, capsys):
    cache = str(tmp_path / "cache")
    paths = ("sample_models",)
    before = json.loads(_check(str(tmp_path / "a.json"), cache=cache, paths=paths))
    assert any(f["code"] == "XF005" for f in before["findings"])
    loads.clear()
    code = main(["check", *paths, "--add-noqa", "--isolated", "--cache-dir", cache])
    assert code == 0 and loads == []  # the findings to mark, read back
    assert "added" in capsys.readouterr().err
    after = json.loads(_check(str(tmp_path / "b.json"), cache=cache, paths=paths))
    assert len(loads) == 1  # its comments changed the source: checked again
    assert after["findings"] == [] and after["summary"]["suppressed"] == len(before["findings"])


def _touch_all(root, ns: int) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(ns, ns))
    os.utime(root, ns=(ns, ns))


def test_a_reinstall_of_the_same_xferlint_is_the_same_key(tmp_path):
    """A CI job installs xferlint afresh: the same files, new times. Installed from a wheel
    (the RECORD pip writes beside the package), that is the same key; in a source tree,
    where no RECORD lists the files, an edit's new time is another key."""
    import xferlint

    package = tmp_path / "site" / "xferlint"
    shutil.copytree(os.path.dirname(xferlint.__file__), package, ignore=shutil.ignore_patterns("__pycache__"))
    _touch_all(package, 10**18)
    source_tree = cache_module._code_stamp(str(package))
    _touch_all(package, 2 * 10**18)
    assert cache_module._code_stamp(str(package)) != source_tree
    record = tmp_path / "site" / f"xferlint-{xferlint.__version__}.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text("xferlint/__init__.py,sha256=abc,10\nxferlint/cli.py,sha256=def,20\n", encoding="utf-8")
    installed = cache_module._code_stamp(str(package))
    _touch_all(package, 3 * 10**18)
    assert cache_module._code_stamp(str(package)) == installed
    record.write_text("xferlint/__init__.py,sha256=xyz,10\n", encoding="utf-8")  # another xferlint
    assert cache_module._code_stamp(str(package)) != installed
    record.write_text("xferlint/__init__.py,sha256=abc,10\nxferlint/cli.py,sha256=def,20\n", encoding="utf-8")
    assert cache_module._code_stamp(str(package)) == installed
    (package / "cli.py").write_text("# edited where it was installed\n" + (package / "cli.py").read_text())
    assert cache_module._code_stamp(str(package)) != installed


def test_a_reinstall_of_the_same_executorch_is_the_same_key(tmp_path):
    folder = tmp_path / "site" / "executorch"
    folder.mkdir(parents=True)
    _touch_all(folder, 10**18)
    source_tree = cache_module._executorch_stamp(str(folder))
    _touch_all(folder, 2 * 10**18)
    assert cache_module._executorch_stamp(str(folder)) != source_tree  # no dist-info: when it changed
    dist = tmp_path / "site" / "executorch-1.5.1.dist-info"
    dist.mkdir()
    (dist / "RECORD").write_text("executorch/__init__.py,sha256=abc,10\n", encoding="utf-8")
    installed = cache_module._executorch_stamp(str(folder))
    _touch_all(folder, 3 * 10**18)
    assert cache_module._executorch_stamp(str(folder)) == installed
    dist.rename(tmp_path / "site" / "executorch-1.6.0.dist-info")
    assert cache_module._executorch_stamp(str(folder)) != installed


def test_unusable_entries_and_folders_only_cost_time(project, tmp_path, loads):
    cache = tmp_path / "cache"
    _check(str(tmp_path / "a.json"), cache=str(cache))
    for entry in cache.glob("*/*"):
        entry.write_bytes(b"not a pickle")
    loads.clear()
    assert _check(str(tmp_path / "b.json"), cache=str(cache)) == _check(str(tmp_path / "c.json"))
    assert len(loads) == 6  # every entry unreadable: each file checked (and once more without the cache)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    assert _check(str(tmp_path / "d.json"), cache=str(blocked)) == _check(str(tmp_path / "c.json"))


def test_a_damaged_entry_is_checked_again_not_reported(project, tmp_path, loads):
    """One flipped bit in the middle of an entry, where the findings are (past the header
    that says whether it is stale), or an entry cut short: the file is checked again and the
    report is the one without the cache, never the damaged findings."""
    cache = tmp_path / "cache"
    plain = _check(str(tmp_path / "plain.json"), cache=str(cache))
    entries = sorted(cache.glob("*/*"))
    assert len(entries) == 3
    for k, entry in enumerate(entries):
        data = bytearray(entry.read_bytes())
        if k == 0:
            data = data[:len(data) - 40]
        else:
            data[len(data) * 2 // 3] ^= 0x20  # a letter's case, a digit's neighbour: still a pickle
        entry.write_bytes(bytes(data))
    loads.clear()
    assert _check(str(tmp_path / "again.json"), cache=str(cache)) == plain
    assert len(loads) == 3  # each damaged entry: its file checked again


def test_runs_that_need_the_programs_and_opting_out_write_no_cache(project, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    main(["check", "ladder.pte", "--diff", "--isolated", "--cache-dir", str(cache), "-o", str(tmp_path / "d.txt")])
    main(["check", "ladder.pte", "--isolated", "--no-cache", "-o", str(tmp_path / "e.txt")])
    assert not cache.exists()
    monkeypatch.setenv("XFERLINT_CACHE_DIR", str(cache))
    main(["check", "ladder.pte", "--isolated", "-o", str(tmp_path / "f.txt")])
    assert not cache.exists()  # XFERLINT_NO_CACHE (the suite's) wins over the folder's variable
    monkeypatch.delenv("XFERLINT_NO_CACHE")
    main(["check", "ladder.pte", "--isolated", "-o", str(tmp_path / "g.txt")])
    assert len(list(cache.glob("*/*"))) == 1


def test_a_fifo_is_still_one_error_line(project, tmp_path, capsys):
    fifo = project / "pipe.pte"
    os.mkfifo(fifo)
    code = main(["check", "pipe.pte", "ladder.pte", "--isolated", "--cache-dir", str(tmp_path / "cache"),
                 "-o", str(tmp_path / "out.txt")])
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "pipe.pte" in errors[0]


def test_old_run_folders_are_pruned(tmp_path):
    root = tmp_path / "cache"
    names = [f"v{cache_module.FORMAT}-{k:04x}" for k in range(cache_module.KEPT_RUNS + 3)]
    for k, name in enumerate(names):
        (root / name).mkdir(parents=True)
        os.utime(root / name, ns=(k * 10**9, k * 10**9))
    (root / "v1-mine").mkdir()  # not a run folder's name: left alone, however old
    os.utime(root / "v1-mine", ns=(0, 0))
    cache_module._prune(str(root), keep="v1-ffff")
    assert sorted(p.name for p in root.iterdir()) == sorted(names[3:] + ["v1-mine"])


def test_the_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("XFERLINT_NO_CACHE")
    monkeypatch.delenv("XFERLINT_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_module.default_folder() is None  # a home that does not exist (`/nonexistent`) is not made
    (tmp_path / "home").mkdir()
    assert cache_module.default_folder() == str(tmp_path / "home" / ".cache" / "xferlint")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_module.default_folder() == str(tmp_path / "xdg" / "xferlint")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the XDG spec says
    assert cache_module.default_folder() == str(tmp_path / "home" / ".cache" / "xferlint")
    monkeypatch.delenv("HOME")
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no home folder at all
    assert cache_module.default_folder() is None  # never a `~` folder in the working directory
    monkeypatch.setenv("XFERLINT_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_module.default_folder() == str(tmp_path / "mine")
    monkeypatch.setenv("XFERLINT_NO_CACHE", "true")
    assert cache_module.default_folder() is None


def test_clean_removes_the_entries_and_nothing_else(project, tmp_path, capsys):
    cache = tmp_path / "cache"
    _check(str(tmp_path / "a.json"), cache=str(cache))
    _check(str(tmp_path / "b.json"), "--select", "XF001", cache=str(cache))  # a second run folder
    (cache / "notes.txt").write_text("the user's own file")
    (cache / "v1-not-ours").mkdir()  # not a name the cache gives its folders
    capsys.readouterr()
    assert main(["clean", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().err.strip() == f"Removed 6 results cache entries from {cache}."
    assert sorted(p.name for p in cache.iterdir()) == ["notes.txt", "v1-not-ours"]
    assert main(["clean", "--cache-dir", str(tmp_path / "none")]) == 0  # nothing there: nothing to do
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("form", ["full", "sarif", "html", "model-explorer", "github"])
def test_every_format_reads_the_same_from_the_cache(project, tmp_path, loads, form):
    cache = str(tmp_path / "cache")
    plain = _check(str(tmp_path / "plain.out"), "--format", form)
    _check(str(tmp_path / "first.out"), "--format", form, cache=cache)
    loads.clear()
    assert _check(str(tmp_path / "second.out"), "--format", form, cache=cache) == plain
    assert loads == []  # the timelines of html and model-explorer came back with the rest


def test_progress_counts_the_files_read_back(project, tmp_path, monkeypatch):
    """Files read back from the cache are done from the start: the progress line goes on
    from them to the total, never back."""
    import xferlint.workers.check as check_module

    seen: list[int] = []

    class Recorded:
        enabled = True

        def __init__(self, total, **_):
            self.total = total

        def update(self, done, running=(), action="lowering"):
            seen.append(done)

        @contextlib.contextmanager
        def ticking(self):  # the real one redraws from a thread: this one only records
            yield

        def clear(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    cache = str(tmp_path / "cache")
    _check(str(tmp_path / "a.json"), cache=cache, paths=("ladder.pte", "loops.pte"))
    monkeypatch.setattr(check_module, "Progress", Recorded)
    _check(str(tmp_path / "b.json"), cache=cache, paths=("ladder.pte", "loops.pte", "sample_models"))
    assert seen == [2]  # the .pt2, after the two read back


def test_temporary_files_a_killed_run_left_are_swept(project, tmp_path, loads):
    import subprocess
    import sys

    cache = tmp_path / "cache"
    _check(str(tmp_path / "a.json"), cache=str(cache))
    (folder,) = cache.iterdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process that has ended: its pid names no process now
    old, young = folder / f".xferlint-{gone.pid}-abc.tmp", folder / f".xferlint-{os.getpid()}-abc.tmp"
    for path in (old, young):
        path.write_bytes(b"half an entry")  # `young`: a write in progress, of a process that runs
    (project / "ladder.pte").write_bytes(synthetic_pte.ladder(50))  # something to store again
    _check(str(tmp_path / "b.json"), cache=str(cache))
    assert not old.exists() and young.exists()
