"""Rule selection: `--select`, `--extend-select`, `--ignore` in ruff's sense.

A selector is `ALL`, a code (`XF001`), a code prefix (`XF00`, `XF`) or a rule name
(`redundant-round-trip`). Unknown selectors are a usage error that names them.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from xferlint.errors import UsageError
from xferlint.rules.base import Rule, all_rules


def _split(selectors: Optional[Iterable[str]]) -> list[str]:
    out: list[str] = []
    for item in selectors or ():
        out.extend(part.strip() for part in str(item).split(",") if part.strip())
    return out


def matches(selector: str, rule: type[Rule]) -> bool:
    upper = selector.upper()
    return upper == "ALL" or rule.code.startswith(upper) or selector.lower() == rule.name


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
    selected = _split(select)
    codes = _resolve(selected, rules) if selected else {r.code for r in rules}
    codes |= _resolve(_split(extend_select), rules)
    codes -= _resolve(_split(ignore), rules)
    return [r() for r in rules if r.code in codes]
