"""Output files: atomic for regular files, in place for device nodes."""

import os
import stat

import pytest

from xferlint.fsutil import encoded_pieces, text_pieces, write_atomic, write_atomic_text


def test_replaces_a_regular_file_whole_and_keeps_its_mode(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    os.chmod(target, 0o600)
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_writes_a_device_node_in_place(tmp_path):
    write_atomic(os.devnull, b"ignored")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode), "/dev/null must stay a character device"


def test_a_fifo_is_written_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic(str(fifo), b"data")
        assert os.read(reader, 16) == b"data"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    with pytest.raises(TypeError):
        write_atomic(str(tmp_path / "out"), "not bytes")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_killed_runs_are_recognised_and_removed(tmp_path):
    """SIGKILL cannot be caught: the next write into the directory removes what a dead run
    left, and leaves a live run's temporary alone."""
    stale = tmp_path / f".xferlint-{_dead_pid()}-abc123.tmp"
    live = tmp_path / f".xferlint-{os.getppid()}-def456.tmp"
    other = tmp_path / ".other-1-x.tmp"
    for path in (stale, live, other):
        path.write_bytes(b"partial")
    write_atomic(str(tmp_path / "report.txt"), b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "report.txt"])


def test_a_read_only_target_is_refused(tmp_path):
    target = tmp_path / "locked.txt"
    target.write_text("keep")
    os.chmod(target, 0o444)
    with pytest.raises(PermissionError):
        write_atomic(str(target), b"new")
    assert target.read_text() == "keep" and [p.name for p in tmp_path.iterdir()] == ["locked.txt"]


def test_a_symlink_is_written_through(tmp_path):
    target = tmp_path / "dir" / "real.txt"
    target.parent.mkdir()
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_atomic(str(link), b"data")
    assert link.is_symlink() and target.read_bytes() == b"data"
    assert [p.name for p in target.parent.iterdir()] == ["real.txt"]


_TERM_DURING_WRITE = r"""
import os, signal, sys
from xferlint import cli
real_fsync = os.fsync
def fsync_then_term(fd):
    real_fsync(fd)
    os.kill(os.getpid(), signal.SIGTERM)
os.fsync = fsync_then_term
sys.exit(cli.main(["check", sys.argv[1], "-o", sys.argv[2], "--isolated"]))
"""


def test_sigterm_while_writing_removes_the_temporary_file(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "report.txt"
    done = subprocess.run([sys.executable, "-c", _TERM_DURING_WRITE, str(tmp_path / "missing.pte"), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 128 + 15, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "error: terminated"
    assert list(tmp_path.iterdir()) == [], "neither the report nor its temporary file"


def test_text_is_written_in_pieces_that_add_up_to_its_utf8(tmp_path):
    """A report is encoded a slice of characters at a time: the pieces add up to the whole
    text's UTF-8 whatever the slice (characters of 1 to 4 bytes); files and FIFOs get all
    of it."""
    text = "ab\u00e9\u2028\U0001f600" * 5 + "z"
    for size in (1, 2, 3, 7, len(text), len(text) + 1):
        assert b"".join(encoded_pieces(text, size)) == text.encode("utf-8")
        assert "".join(text_pieces(text, size)) == text
    assert list(encoded_pieces("")) == [] and list(text_pieces("")) == []
    target = tmp_path / "report.json"
    target.write_text("old")
    write_atomic_text(str(target), text)
    assert target.read_text(encoding="utf-8") == text
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic_text(str(fifo), text)
        assert os.read(reader, 1024) == text.encode("utf-8")
    finally:
        os.close(reader)
    with pytest.raises(TypeError):
        write_atomic_text(str(tmp_path / "out"), b"not text")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_a_failure_past_the_first_piece_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    import xferlint.fsutil as fsutil

    def failing(text, size=1 << 20):
        yield b"fine" * 300_000
        raise OSError(28, "No space left on device")

    target = tmp_path / "report.json"
    target.write_text("old")
    monkeypatch.setattr(fsutil, "encoded_pieces", failing)
    with pytest.raises(OSError):
        write_atomic_text(str(target), "fine" * 300_000 + "more")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_characters_utf8_cannot_encode_are_written_as_escapes(tmp_path):
    """A file name that is no UTF-8 is held as lone surrogates: the report gets their escapes,
    past the first piece too, and stays valid UTF-8."""
    target = tmp_path / "report.json"
    write_atomic_text(str(target), "fine" * 300_000 + "\udcff\ud800")
    assert target.read_text(encoding="utf-8") == "fine" * 300_000 + "\\udcff\\ud800"
