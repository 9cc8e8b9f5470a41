"""Rule documentation, generated from the rules' docstrings (`xferlint rule`)."""

from __future__ import annotations

import json
from typing import Optional

from xferlint.errors import UsageError
from xferlint.rules.base import Rule, all_rules
from xferlint.selection import matches


def find_rule(selector: str) -> type[Rule]:
    for rule in all_rules():
        if selector.upper() == rule.code or selector.lower() == rule.name:
            return rule
    hits = [r for r in all_rules() if matches(selector, r)]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(f"{r.code} ({r.name})" for r in all_rules())
    raise UsageError(f"unknown rule '{selector}'; known rules: {known}")


def rule_markdown(rule: type[Rule]) -> str:
    lines = [f"# {rule.name} ({rule.code})", "", rule.summary(), ""]
    fix = f"fix: {rule.fix_applicability.value}" if rule.fix_applicability else "no automatic fix"
    lines += [f"Severity: {rule.severity.value}; {fix}.", ""]
    for heading, body in rule.sections().items():
        lines += [f"## {heading}", body, ""]
    return "\n".join(lines).rstrip() + "\n"


def rule_record(rule: type[Rule]) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary(),
        "severity": rule.severity.value,
        "fix": rule.fix_applicability.value if rule.fix_applicability else None,
        "explanation": rule_markdown(rule),
    }


def explain(selector: Optional[str], fmt: str = "text") -> str:
    rules = list(all_rules()) if selector is None else [find_rule(selector)]
    if fmt == "json":
        records = [rule_record(r) for r in rules]
        return json.dumps(records if selector is None else records[0], indent=2) + "\n"
    return "\n".join(rule_markdown(r) for r in rules)
