"""`per-file-ignores` in `[tool.xferlint]`: rules switched off in the files a glob matches.

```toml
[tool.xferlint]
per-file-ignores = {"models/legacy/*.py" = ["XF006"], "exported/*.pte" = ["XF001", "XF004"]}
```

Patterns are relative to the directory of the config file (config.py makes them absolute)
and are matched against both the finding's source file (`location.file`) and the input file
it was read from (`file`: the entry point, `.pte`, `.pt2`), so a `.pte` pattern works for
findings located in model source through `--etrecord`. A pattern without a `/` matches the
file name in any directory below the config file, as in ruff; `*` may cross directories. Ignored findings count nowhere (exit code, summary, bytes).
"""

from __future__ import annotations

import fnmatch
import os
from typing import Iterable, Mapping, Optional, Sequence

from xferlint.findings import Finding
from xferlint.rules.base import all_rules
from xferlint.selection import matches


def _codes(selectors: Sequence[str]) -> frozenset[str]:
    parts = [p.strip() for s in selectors for p in s.split(",") if p.strip()]
    return frozenset(r.code for r in all_rules() for p in parts if matches(p, r))


def _matches(pattern: str, path: str) -> bool:
    """fnmatch on absolute paths; `/**/` also matches a single `/` (zero directories)."""
    path = os.path.abspath(path)
    return fnmatch.fnmatchcase(path, pattern) or (
        "/**/" in pattern and fnmatch.fnmatchcase(path, pattern.replace("/**/", "/")))


class PerFileIgnores:
    """The compiled table: absolute patterns -> rule codes."""

    def __init__(self, *tables: Mapping[str, Sequence[str]]) -> None:
        self.entries = [(pattern, _codes(codes)) for table in tables for pattern, codes in table.items()]

    def __bool__(self) -> bool:
        return bool(self.entries)

    def ignored(self, finding: Finding) -> bool:
        paths = [p for p in (finding.location.file if finding.location else None, finding.file) if p]
        return any(finding.code in codes and any(_matches(pattern, p) for p in paths)
                   for pattern, codes in self.entries)

    def keep(self, findings: Iterable[Finding]) -> list[Finding]:
        return [f for f in findings if not self.ignored(f)]


def apply(run, *tables: Optional[Mapping[str, Sequence[str]]]) -> None:
    """Drop the ignored findings from a CheckRun, program by program."""
    table = PerFileIgnores(*(t for t in tables if t))
    if not table:
        return
    replacements = []
    for loaded in run.loaded:
        mine = run.findings_of(loaded.view)
        kept = table.keep(mine)
        if len(kept) != len(mine):
            replacements.append((loaded.view, kept))
    run.replace_many(replacements)  # in one pass: one call per program rebuilt the run's lists each time
