"""Rule selection: `--select`, `--extend-select`, `--ignore` in ruff's sense.

A selector is `ALL`, a code (`XF001`), a code prefix (`XF00`, `XF`) or a rule name
(`redundant-round-trip`). Unknown selectors are a usage error that names them.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from xferlint.errors import UsageError
from xferlint.rules.base import Rule, all_rules


def _split(selectors: Optional[Iterable[str]], option: str = "--select") -> list[str]:
    """The selectors of one option, comma-separated; an empty one is a usage error (an
    empty `--select ""` would otherwise quietly mean every rule)."""
    out: list[str] = []
    for item in selectors or ():
        parts = [part.strip() for part in str(item).split(",")]
        if not any(parts) or "" in parts[:-1]:
            raise UsageError(f"{option}: empty rule selector in {str(item)!r}; name rules by code (XF001), "
                             "prefix (XF00), name (redundant-round-trip) or ALL")
        out.extend(part for part in parts if part)
    return out


def matches(selector: str, rule: type[Rule]) -> bool:
    upper = selector.upper()
    return upper == "ALL" or rule.code.startswith(upper) or selector.lower() == rule.name


def check_selectors(selectors: Iterable[str], option: str) -> None:
    """Raise UsageError for an empty or unknown selector (config validation uses it)."""
    _resolve(_split(selectors, option), all_rules())


def _resolve(selectors: list[str], rules: Sequence[type[Rule]]) -> set[str]:
    chosen: set[str] = set()
    for selector in selectors:
        hits = {r.code for r in rules if matches(selector, r)}
        if not hits:
            known = ", ".join(f"{r.code} ({r.name})" for r in rules)
            raise UsageError(f"unknown rule selector '{selector}'; known rules: {known}")
        chosen |= hits
    return chosen


def select_rules(
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    extend_select: Optional[Iterable[str]] = None,
) -> list[Rule]:
    """Instances of the enabled rules, by code. Default selection: every rule."""
    rules = all_rules()
    selected = _split(select, "--select")
    codes = _resolve(selected, rules) if select is not None else {r.code for r in rules}
    codes |= _resolve(_split(extend_select, "--extend-select"), rules)
    codes -= _resolve(_split(ignore, "--ignore"), rules)
    return [r() for r in rules if r.code in codes]
