"""Directory discovery: which files under a directory are programs to lint.

What a user would not call a model is skipped, as ruff skips what it would not lint:
hidden directories, virtual environments (any directory holding `pyvenv.cfg`), caches and
build output, test folders (`tests/`, `test/`) and test files (`conftest.py`,
`test_*.py`, `*_test.py`), and what git ignores. A path named on the command line is
always walked, whatever its name; `exclude` (replacing the default patterns) and
`extend-exclude` (adding to them) take glob patterns matched against each file or
directory name and its path relative to the directory walked.
"""

from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Optional, Sequence

from xferlint.records import dataclass

DEFAULT_EXCLUDE = (
    ".*", "__pycache__", "node_modules", "site-packages", "venv", "build", "dist", "*.egg-info",
    "tests", "test", "conftest.py", "test_*.py", "*_test.py",
)


@dataclass(frozen=True, slots=True)
class Discovery:
    """How directories are searched (`--exclude`, `--extend-exclude`, gitignore)."""

    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True

    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(self.exclude) + tuple(self.extend_exclude)


def _excluded(name: str, rel: str, patterns: Sequence[str]) -> bool:
    by_name, by_path = _matchers(tuple(patterns))
    return by_name(name) is not None or by_path(rel.replace(os.sep, "/")) is not None


@lru_cache(maxsize=64)
def _matchers(patterns: tuple[str, ...]) -> tuple[Callable, Callable]:
    """`fnmatchcase` against any of the patterns (a name), or any of them less a trailing
    `/` (a relative path), as one compiled regex each: a directory of a thousand models
    asked fifteen patterns twice per file."""
    def matcher(globs: Iterable[str]) -> Callable:
        alternatives = [f"(?:{fnmatch.translate(g)})" for g in globs]
        return re.compile("|".join(alternatives)).match if alternatives else (lambda text: None)

    return matcher(patterns), matcher(p.rstrip("/") for p in patterns)


def _git_ignored(root: str, paths: list[str]) -> set[str]:
    """Which of `paths` git ignores (empty when `root` is not in a work tree or git is
    missing): one `git check-ignore` for the lot."""
    if not paths:
        return set()
    import subprocess  # only a directory walk asks git

    try:
        done = subprocess.run(["git", "-C", root, "check-ignore", "--stdin", "-z"], input="\0".join(paths) + "\0",
                              capture_output=True, text=True, timeout=30)
    except FileNotFoundError:  # no git (a slim CI image): say so where it matters, once
        _no_git(root)
        return set()
    except (OSError, subprocess.SubprocessError):
        return set()
    if done.returncode not in (0, 1):  # 128: not a work tree
        return set()
    return {p for p in done.stdout.split("\0") if p}


_NO_GIT_NOTED: list[str] = []  # the walk that said so: one note per process


def _no_git(root: str) -> None:
    """A note, once per run, when a directory inside a git work tree is walked without git:
    its .gitignore is not applied, and what it ignores is linted too."""
    from xferlint.console import note
    from xferlint.fsutil import find_upward

    noted = _NO_GIT_NOTED
    if noted or find_upward(os.path.abspath(root), lambda d: os.path.exists(os.path.join(d, ".git"))) is None:
        return
    noted.append(root)
    note(f"{root}: git was not found, so .gitignore is not applied here (what it ignores is linted too); "
         "install git, or name what to skip with --extend-exclude")


def walk(directory: str, wanted: Callable[[str], bool], options: Optional[Discovery] = None) -> Iterator[str]:
    """Files under `directory`, sorted, that are not excluded and for which `wanted` holds."""
    options = options or Discovery()
    patterns = options.patterns
    candidates: list[str] = []
    for root, dirs, files in os.walk(directory):
        rel_root = os.path.relpath(root, directory)
        keep = []
        for d in sorted(dirs):
            rel = os.path.normpath(os.path.join(rel_root, d))
            if _excluded(d, rel, patterns) or os.path.exists(os.path.join(root, d, "pyvenv.cfg")):
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            rel = os.path.normpath(os.path.join(rel_root, name))
            if not _excluded(name, rel, patterns):
                candidates.append(os.path.join(root, name))
    ignored = _git_ignored(directory, candidates) if options.respect_gitignore else set()
    for path in candidates:
        if path not in ignored and wanted(path):
            yield path


def from_settings(exclude: Optional[Iterable[str]], extend_exclude: Iterable[str]) -> Discovery:
    return Discovery(exclude=tuple(exclude) if exclude is not None else DEFAULT_EXCLUDE,
                     extend_exclude=tuple(extend_exclude))
