"""Results of program files kept between runs: a plain `check` reads back what it found in
a `.pte` or `.pt2` it checked before, unchanged, under the same settings and the same
xferlint, instead of reading, analysing and fix-trying it again (as ruff's and mypy's
caches do).

One entry per file and settings: the file's settled `Partial` (what a worker sends back:
findings with their fixability decided, transfer summary, suppression record, programs
without their methods), the file's `Stamp` (its stat and the BLAKE2 digest of its bytes),
and the size and mtime of every source file whose comments the check read (noqa
directives: adding one to the model's source changes the result). An entry is used only
when the file and those sources still match, so the report is the same byte for byte
with or without it.

The key of a run (`run_key`) covers what else decides a file's result: this xferlint's
own files (`_code_stamp`: the same xferlint installed afresh is the same key), the Python
and ExecuTorch it runs with, the working directory, the rules and their options,
`--strict`, `--unsafe-fixes`, the per-file ignores and the project root. A run with rules
from outside xferlint, or with `--etrecord`, is not cached.

Entries are pickles, so the cache lives where only the user writes: `XFERLINT_CACHE_DIR`
or `--cache-dir`, else `$XDG_CACHE_HOME/xferlint` (`~/.cache/xferlint`), never a folder a
project's configuration names. Writes go through a temporary file and `os.replace`,
named as `xferlint.fsutil` names its own so that one a killed process left is removed by
`remove_stale_temporaries` (not through `write_atomic`, whose fsync per file would double
what filling the cache costs: an entry lost to a crash only costs time); a cache that
cannot be read or written is skipped without a word (it only ever saves time).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from xferlint.records import dataclass

if TYPE_CHECKING:
    from xferlint.rules.base import Rule
    from xferlint.workers.files import SettleOptions
    from xferlint.workers.payloads import Partial

FORMAT = 3  # bumped when an entry's layout changes
KEPT_RUNS = 8  # run folders kept beside a new one (each settings or xferlint change makes one)
_DISABLING = ("1", "true", "yes", "on")
_RUN_FOLDER = re.compile(r"v[0-9]+-[0-9a-f]+")  # what `ResultCache` names its folders


def default_folder(even_if_off: bool = False) -> Optional[str]:
    """`XFERLINT_CACHE_DIR`, else `$XDG_CACHE_HOME/xferlint`, else `~/.cache/xferlint`;
    None when there is no home folder (HOME unset, relative or missing: a service account's
    `/nonexistent` is not created), or `XFERLINT_NO_CACHE` is set (1, true, yes, on)
    and not `even_if_off` (`xferlint clean` removes the cache a check would use)."""
    if not even_if_off and os.environ.get("XFERLINT_NO_CACHE", "").strip().lower() in _DISABLING:
        return None
    explicit = os.environ.get("XFERLINT_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):  # the XDG spec: a relative path is to be ignored
        home = os.path.expanduser("~")
        if home == "~" or not os.path.isabs(home) or not os.path.isdir(home):
            return None  # no home to keep it in: not a folder relative to the cwd, nor a home made for it
        base = os.path.join(home, ".cache")
    return os.path.join(base, "xferlint")


@dataclass(frozen=True, slots=True)
class Stamp:
    """A program file as it was when its check started: its stat (size, mtime, ctime,
    inode, device) and the digest of its bytes, taken in that order and before the check
    reads it, so that a file changed meanwhile never matches the entry made of it."""

    stat: tuple
    digest: bytes


class ResultCache:
    """The entries of one run key, in `folder/<run key>/`: each file's entry is two pickles,
    its header (format, Stamp, source files' stats, the length and CRC-32 of what follows)
    and then its Partial, so a stale entry is told from its header alone and a damaged one
    from its check."""

    __slots__ = ("root", "folder", "created")

    def __init__(self, root: str, run_key: str) -> None:
        self.root = root
        self.folder = os.path.join(root, f"v{FORMAT}-{run_key}")
        self.created = False

    def look_up(self, label: str, path: str) -> Optional["Partial"]:
        """The cached result of file `path` (input `label`), or None. It matches when the
        file's stat is the one stored, else when the digest of its bytes is (a fresh clone
        or a restored CI cache has new times, the same bytes), and the source files' stats
        are the ones stored. Only a regular file is looked at (a FIFO is never opened here;
        the check says what is wrong with it)."""
        try:
            import pickle

            now = _stat(path)
            if now is None:
                return None
            with open(self._entry(label, path), "rb") as handle:
                version, stamp, sources, check = pickle.load(handle)
                if version != FORMAT or _stamps(s[0] for s in sources) != sources:
                    return None
                if stamp.stat != now and stamp.digest != _digest(path):
                    return None
                data = handle.read()
            if _check_of(data) != check:  # a flipped bit, a truncated or overwritten entry: check the file
                return None
            return pickle.loads(data)
        except Exception:  # noqa: BLE001 - no entry, or one this code cannot read: check the file
            return None

    def stamp(self, path: str) -> Optional[Stamp]:
        """The file's Stamp, taken before its check reads it (None: not a regular file)."""
        now = _stat(path)
        digest = _digest(path) if now is not None else None
        return Stamp(now, digest) if digest is not None else None

    def store(self, label: str, path: str, stamp: Optional[Stamp], partial: "Partial") -> None:
        """Keep `partial` (with its `sources`: the files whose comments the check read) as
        the result of file `path` as `stamp` found it."""
        if stamp is None or partial.errors:  # an error may come from this machine (memory): check again
            return
        try:
            import pickle

            data = pickle.dumps(partial, protocol=5)
            header = pickle.dumps((FORMAT, stamp, _stamps(sorted(set(partial.sources))), _check_of(data)), protocol=5)
            self._make_folder()
            target = self._entry(label, path)
            temporary = os.path.join(self.folder, f".xferlint-{os.getpid()}-{os.path.basename(target)}.tmp")
            try:
                with open(temporary, "wb") as handle:
                    handle.write(header)
                    handle.write(data)
                os.replace(temporary, target)
            except BaseException:
                _remove(temporary)
                raise
        except Exception:  # noqa: BLE001 - read-only, full, removed meanwhile: the run goes on uncached
            return

    def _entry(self, label: str, path: str) -> str:
        name = _hex(f"{label}\0{os.path.abspath(path)}", 16)
        return os.path.join(self.folder, name)

    def _make_folder(self) -> None:
        """This run key's folder, once per process that stores: made, and the oldest other
        run folders beyond KEPT_RUNS removed (entries of settings or code no longer in use);
        or swept of the temporary files of processes that died (a worker is killed, with its
        write half done, when the run is interrupted)."""
        if self.created:
            return
        if not os.path.isdir(self.folder):
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            _prune(self.root, keep=os.path.basename(self.folder))
        else:
            from xferlint.fsutil import remove_stale_temporaries

            remove_stale_temporaries(self.folder)
        self.created = True


def open_cache(folder: Optional[str], rules: Sequence["Rule"], *, strict: bool, timelines: bool,
               project_root: Optional[str], settle: "SettleOptions") -> Optional[ResultCache]:
    """The cache of a run with these settings in `folder` (None: no cache)."""
    if folder is None or any(not type(rule).__module__.startswith("xferlint.rules.") for rule in rules):
        return None
    try:
        key = run_key(rules, strict=strict, timelines=timelines, project_root=project_root, settle=settle)
    except Exception:  # noqa: BLE001 - an option that does not print the same twice: no cache
        return None
    return ResultCache(os.path.abspath(folder), key)


def run_key(rules: Sequence["Rule"], *, strict: bool, timelines: bool, project_root: Optional[str],
            settle: "SettleOptions") -> str:
    """What decides a file's result besides its bytes, as a hex digest (every part written
    out in a fixed order: a pickle of a set would differ from one process to the next)."""
    parts = (
        FORMAT, sys.version, sys.prefix, os.getcwd(), _code_stamp(), _executorch_stamp(),
        [(r.code, type(r).__module__, type(r).__qualname__,
          [(k, repr(getattr(r, k, None))) for k in sorted(getattr(r, "options", ()))]) for r in rules],
        strict, timelines, project_root, settle.unsafe_fixes,
        [sorted((str(k), [str(c) for c in v]) for k, v in (table or {}).items()) for table in settle.ignores],
    )
    return _hex(repr(parts), 12)


def _hex(text: str, size: int) -> str:
    """A BLAKE2 digest of `text` in hex (`_blake2` itself: hashlib would load OpenSSL,
    10-15 ms of a run that the cache makes take 0.15 s)."""
    from _blake2 import blake2b

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=size).hexdigest()


def _code_stamp(top: Optional[str] = None) -> list:
    """What identifies this xferlint's code (`top`: its package folder). Installed from a
    wheel: the RECORD pip wrote beside it (every installed file's sha256) and each file's
    size, so a reinstall of the same xferlint, as every CI job makes, is the same key
    whatever the files' times. From a source tree (an editable install, where no RECORD
    lists the files): each file's (path, size, mtime), so an edit is another key."""
    import xferlint

    top = top or os.path.dirname(os.path.abspath(xferlint.__file__))
    record = _record_digest(os.path.join(os.path.dirname(top), f"xferlint-{xferlint.__version__}.dist-info"),
                            f"{os.path.basename(top)}/__init__.py")
    out = []
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json", ".fbs")):
                info = os.stat(os.path.join(folder, name))
                path = os.path.relpath(os.path.join(folder, name), top)
                out.append((path, info.st_size) if record else (path, info.st_size, info.st_mtime_ns))
    return [record, out]


def _record_digest(dist_info: str, member: str) -> Optional[str]:
    """The digest of the RECORD in `dist_info` when it lists `member` (the package beside it
    was installed from a wheel), else None."""
    try:
        with open(os.path.join(dist_info, "RECORD"), "rb") as handle:
            data = handle.read(1 << 22)
    except OSError:
        return None
    if b"\n" + member.encode("utf-8") + b"," not in b"\n" + data:
        return None
    return _hex(data.decode("utf-8", "surrogateescape"), 16)


def _executorch_stamp(folder: Optional[str] = None) -> list:
    """Which ExecuTorch is installed ([] without one): a `.pte` is read with its generated
    schema when it is not the pinned one. Installed from a wheel: where, its dist-info (the
    version) and the size of its RECORD, the same for a reinstall of the same version (a
    fresh CI job); otherwise where, and when its folder changed."""
    if folder is None:
        import importlib.util

        try:
            spec = importlib.util.find_spec("executorch")
        except (ImportError, ValueError):
            return []
        if spec is None or not spec.submodule_search_locations:
            return []
        folder = list(spec.submodule_search_locations)[0]
    parent = os.path.dirname(folder)
    try:
        found = [n for n in os.listdir(parent) if n.startswith("executorch-") and n.endswith(".dist-info")]
        if len(found) == 1:
            return [folder, found[0], os.stat(os.path.join(parent, found[0], "RECORD")).st_size]
    except OSError:
        pass
    try:
        return [folder, os.stat(folder).st_mtime_ns]
    except OSError:
        return [folder]


def _check_of(data: bytes) -> tuple[int, int]:
    """An entry's result is used only when its bytes are the ones written: their length
    and CRC-32 (a disk's flipped bit or a partly overwritten entry would otherwise put
    wrong findings in a report, silently)."""
    import zlib

    return len(data), zlib.crc32(data)


def _stat(path: str) -> Optional[tuple]:
    """(size, mtime, ctime, inode, device) of a regular file, else None."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


def _digest(path: str) -> Optional[bytes]:
    """The BLAKE2 digest of a regular file's bytes (None for anything else: a FIFO is never
    opened for reading here, and the check says what is wrong with it)."""
    from _blake2 import blake2b

    from xferlint.frontends.files import open_regular

    try:
        fd, _ = open_regular(path)
    except OSError:
        return None
    try:
        digest = blake2b()
        while True:  # in 1 MiB reads: a program of gigabytes of weights is never held whole
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return digest.digest()
            digest.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stamps(paths: Iterable[str]) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of each file; (path, -1, -1) for one that does not exist."""
    out = []
    for path in paths:
        try:
            info = os.stat(path)
            out.append((path, info.st_size, info.st_mtime_ns))
        except (OSError, ValueError):
            out.append((path, -1, -1))
    return out


def sources_of(part) -> set[str]:
    """The files whose comments checking `part` (a CheckRun of one file, before per-file
    ignores and the fix trial) read: every finding's source file, the ones comments
    suppressed, and the program's source files a rule reads comments of (XF100)."""
    found = {f.location.file for f in part.findings if f.location is not None}
    for item in (*part.record.suppressed, *part.record.unhonoured):
        if item.finding.location is not None:
            found.add(item.finding.location.file)
    found.update(part.record.sources)
    return found


def clear(root: str) -> int:
    """Remove every run folder under `root` (`xferlint clean`); returns how many entries they
    held. Only what this module writes there is removed (`v<format>-<key>` folders), never
    `root` itself nor anything else in it: `--cache-dir` may name a folder the user keeps
    other things in."""
    import shutil

    removed = 0
    for folder in _run_folders(root):
        try:
            removed += sum(1 for e in os.scandir(folder.path) if not e.name.endswith(".tmp"))
        except OSError:
            pass
        shutil.rmtree(folder.path, ignore_errors=True)
    return removed


def _run_folders(root: str) -> list[os.DirEntry]:
    """The run folders under `root`, by the names `ResultCache` gives them ([] when `root`
    cannot be read)."""
    try:
        return [e for e in os.scandir(root) if _RUN_FOLDER.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _prune(root: str, keep: str) -> None:
    import shutil

    try:
        folders = sorted((e for e in _run_folders(root) if e.name != keep),
                         key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
    except OSError:
        return
    for entry in folders[KEPT_RUNS:]:
        shutil.rmtree(entry.path, ignore_errors=True)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
