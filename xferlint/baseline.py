"""Baselines: accept the findings a repository has today, fail only on new ones.

`--write-baseline FILE` records every finding of a check; `--baseline FILE` then reports
only findings the file does not account for. An entry is matched without line numbers:
by the line-independent fingerprint SARIF uses (`xferlint.fingerprint`: rule, program,
method, the file relative to the baseline's directory, the source text of the lines, the
transfer path), and entries are counted, so moving code keeps its match and a second copy
of the same finding is new. Entries nothing matched any more are stale:
`--prune-baseline` rewrites the file without them.

The file is JSON with one entry per line, sorted, so that it diffs and merges cleanly.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import field
from typing import Iterable

from xferlint.errors import UsageError
from xferlint.findings import Finding
from xferlint.fingerprint import digest, finding_key
from xferlint.records import dataclass

VERSION = 1


@dataclass(frozen=True, slots=True)
class Entry:
    fingerprint: str
    code: str
    input: str
    message: str
    count: int = 1


@dataclass(slots=True)
class Matched:
    """What applying a baseline to findings gave."""

    new: list[Finding] = field(default_factory=list)
    baselined: list[Finding] = field(default_factory=list)
    stale: list[Entry] = field(default_factory=list)
    kept: list[Entry] = field(default_factory=list)


def _uri(finding: Finding, root: str) -> str:
    path = finding.location.file if finding.location is not None else finding.file
    if not path:
        return finding.input
    rel = os.path.relpath(os.path.abspath(path), root)
    return (rel if not rel.startswith("..") else os.path.abspath(path)).replace(os.sep, "/")


def fingerprint(finding: Finding, root: str) -> str:
    return digest(finding_key(finding, _uri(finding, root)))


def entries_of(findings: Iterable[Finding], root: str) -> list[Entry]:
    counts: Counter[str] = Counter()
    first: dict[str, Finding] = {}
    for f in findings:
        key = fingerprint(f, root)
        counts[key] += 1
        first.setdefault(key, f)
    return sorted((Entry(fingerprint=k, code=first[k].code, input=first[k].input, message=first[k].message,
                         count=n) for k, n in counts.items()), key=lambda e: (e.code, e.input, e.fingerprint))


def render(entries: Iterable[Entry]) -> str:
    rows = [json.dumps({"fingerprint": e.fingerprint, "code": e.code, "count": e.count, "input": e.input,
                        "message": e.message}, ensure_ascii=False, sort_keys=True) for e in entries]
    body = ",\n".join(f"    {row}" for row in rows)
    return f'{{\n  "version": {VERSION},\n  "entries": [\n{body}\n  ]\n}}\n' if rows else \
        f'{{\n  "version": {VERSION},\n  "entries": []\n}}\n'


def read(path: str) -> list[Entry]:
    from xferlint.frontends.files import read_input

    try:
        raw = read_input(path, path, what="a baseline file", limit=256 << 20)
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a baseline file ({exc})") from None
    except Exception as exc:  # InputError: missing, FIFO, ...
        raise UsageError(str(exc)) from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), list):
        raise UsageError(f"{path}: not a baseline file of version {VERSION} (write one with --write-baseline)")
    out = []
    for i, row in enumerate(data["entries"]):
        try:
            out.append(Entry(fingerprint=str(row["fingerprint"]), code=str(row["code"]), input=str(row["input"]),
                             message=str(row.get("message", "")), count=row.get("count", 1)))
        except (KeyError, TypeError, AttributeError):
            raise UsageError(f"{path}: entry {i} is malformed (needs fingerprint, code, input)") from None
        count = out[-1].count
        if type(count) is not int or count < 1:  # a bool is no count; 2.7 or -5 accept no finding sensibly
            raise UsageError(f"{path}: entry {i} has count {json.dumps(count)}; a count is a whole number of at least 1")
    return out


def apply(findings: Iterable[Finding], entries: list[Entry], root: str) -> Matched:
    """Findings the entries account for (counted), the new ones, and the stale entries."""
    left: Counter[str] = Counter()
    for e in entries:  # one fingerprint listed twice (two baselines merged by hand): both counts
        left[e.fingerprint] += e.count
    used: Counter[str] = Counter()
    result = Matched()
    for f in findings:
        key = fingerprint(f, root)
        if left[key] > 0:
            left[key] -= 1
            used[key] += 1
            result.baselined.append(f)
        else:
            result.new.append(f)
    for e in entries:  # the findings accepted are credited to the entries in order
        take = min(e.count, used[e.fingerprint])
        used[e.fingerprint] -= take
        if take:
            result.kept.append(Entry(e.fingerprint, e.code, e.input, e.message, take))
        if take < e.count:
            result.stale.append(e)
    return result
