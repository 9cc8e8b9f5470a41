"""Output files: atomic for regular files, in place for device nodes."""

import os
import stat

import pytest

from xferlint.fsutil import write_atomic


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
