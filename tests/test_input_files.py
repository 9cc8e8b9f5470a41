"""frontends.files.read_input: a file that changes between its header and its body is one
clear error naming the input, whichever way it changed."""

import pytest

from xferlint.errors import InputError
from xferlint.frontends.files import read_input


def _read(path, check_header=None):
    return read_input(str(path), "model.pte", what="a .pte file", limit=1 << 20, header=8,
                      check_header=check_header)


def test_reads_the_whole_file(tmp_path):
    path = tmp_path / "model.pte"
    path.write_bytes(b"HEADER..body")
    assert _read(path, lambda head, size: None) == b"HEADER..body"


def test_a_file_that_grows_while_read_gives_both_sizes(tmp_path):
    path = tmp_path / "model.pte"
    path.write_bytes(b"HEADER..body")

    def grow(head, size):
        with open(path, "ab") as f:
            f.write(b"more")

    with pytest.raises(InputError, match=r"^model\.pte: changed while it was read \(12 bytes, then 13\)$"):
        _read(path, grow)


def test_a_header_rewritten_in_place_is_named_as_such_not_as_equal_sizes(tmp_path):
    path = tmp_path / "model.pte"
    path.write_bytes(b"HEADER..body")

    def rewrite(head, size):
        with open(path, "r+b") as f:
            f.write(b"OTHER...")

    with pytest.raises(InputError) as raised:
        _read(path, rewrite)
    assert str(raised.value) == "model.pte: changed while it was read (its first 8 bytes differ)"
