"""frontends.files.read_input: a file that changes between its header and its body is one
clear error naming the input, whichever way it changed."""

import pytest

from xferlint.errors import InputError
from xferlint.frontends.files import read_input

BYTES = b"HEADER..body"  # 12 bytes: an 8-byte header, then the rest


def _read(path, check_header):
    return read_input(str(path), "model.pte", what="a .pte file", limit=1 << 20, header=8,
                      check_header=check_header)


def test_reads_the_whole_file(tmp_path):
    path = tmp_path / "model.pte"
    path.write_bytes(BYTES)
    assert _read(path, lambda head, size: None) == BYTES


@pytest.mark.parametrize("mode, write, message", [
    ("ab", b"more", "(12 bytes, then 13)"),  # grew: one byte past the size is read, and refused
    ("r+b", b"OTHER...", "(its first 8 bytes differ)"),  # rewritten in place: the sizes agree
])
def test_a_file_that_changes_while_read_is_one_error_saying_how(tmp_path, mode, write, message):
    path = tmp_path / "model.pte"
    path.write_bytes(BYTES)

    def change(head, size):  # between the header's read and the body's
        with open(path, mode) as f:
            f.write(write)

    with pytest.raises(InputError) as raised:
        _read(path, change)
    assert str(raised.value) == f"model.pte: changed while it was read {message}"


@pytest.mark.parametrize("patterns", [
    None,  # the defaults
    ("scratch/", "models/*.pte", "a[bc]?d", "[!a]*.py", "*"),
    (),
])
def test_exclude_patterns_match_as_fnmatch_does(patterns):
    """Discovery matches all its exclude patterns with one compiled regex; a name or a
    relative path is excluded exactly when `fnmatchcase` matches one pattern (a trailing
    `/` dropped for paths)."""
    import fnmatch

    from xferlint.frontends.discovery import DEFAULT_EXCLUDE, _excluded

    patterns = DEFAULT_EXCLUDE if patterns is None else patterns
    names = ["tests", "test_x.py", "x_test.py", ".git", "model.pte", "scratch", "abxd", "abcd", "b.py",
             "venv", "pkg.egg-info", "conftest.py", "a.py", ""]
    rels = ["scratch", "models/a.pte", "sub/tests", "sub/scratch", "models/deep/a.pte", "abcd"]
    for name in names:
        for rel in rels + [name]:
            expected = any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p.rstrip("/")) for p in patterns)
            assert _excluded(name, rel, patterns) == expected, (name, rel)


@pytest.mark.parametrize("suffix, problem", [
    (":", "nothing follows `:` (`model.py:NAME` names one of the file's top-level names)"),
    (":1x", "`1x` is not a Python name (`model.py:NAME` names one of the file's top-level names)"),
    (":program:extra", "`program:extra` is not a Python name (`model.py:NAME` names one of the file's top-level names)"),
])
def test_a_file_with_a_bad_attribute_says_what_is_wrong_with_it(tmp_path, monkeypatch, suffix, problem):
    """The file is there: the line is about the attribute, not `no such file`."""
    from xferlint.frontends.entrypoints import expand

    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("program = None\n")
    with pytest.raises(InputError) as raised:
        expand("model.py" + suffix)
    assert str(raised.value) == f"model.py{suffix}: {problem}"
    with pytest.raises(InputError, match=r"^model\.pte:x: a \.pte file has no attributes$"):
        expand("model.pte:x")
    assert [e.attr for e in expand("model.py:program")] == ["program"]


@pytest.mark.parametrize("key", ["edge", "c]d", "", "a\nb", "x[1]"])
def test_any_printed_dict_key_is_a_valid_input(tmp_path, monkeypatch, key):
    """A dict of programs prints each as `model.py:program[KEY]` whatever its key (a `]`,
    none, a newline): given back, that label selects that key."""
    from xferlint.frontends.entrypoints import expand, file_of

    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("program = {}\n")
    (entry,) = expand(f"model.py:program[{key}]")
    assert (entry.file, entry.attr, entry.key, entry.label) == ("model.py", "program", key, f"model.py:program[{key}]")
    assert file_of(f"model.py:program[{key}]") == "model.py"
