"""Line-independent identities of findings (SARIF `partialFingerprints["xferlint/v1"]`).

Code scanning matches an alert across commits by its fingerprint. Ours must hold when
lines above a finding move (a comment, an import, a helper function added elsewhere in
the file) and when the same program is linted twice, yet tell apart two findings on one
line. So it hashes what the finding *is*, never where it sits:

- the rule code, the program name and the method;
- the file the finding is shown in (its repo-relative URI);
- the text of the located source line without its comment and with all whitespace
  removed (re-indenting or moving the line, or adding a `# xferlint: noqa` to it, keeps
  it; editing the code does not), or the node's name when there is no line;
- the transfer path, step by step: role, operator, device and that step's own line text
  (or node name), so two transfers that start on one line but end in different places
  differ.

Node names are left out where a line is known: FX numbers them in graph order
(`getitem_3`), so an op added earlier in `forward` would rename every later node. What
still collides (the same transfer written twice, on two identical lines) gets an
occurrence number in output order, which unrelated moves do not change: `<hash>:<n>`,
as GitHub's own `primaryLocationLineHash` does.
"""

from __future__ import annotations

import hashlib
import io
import json
import tokenize
from collections import Counter
from typing import Iterable, Optional

from xferlint.findings import Finding, Location

SCHEME = "xferlint/v1"


def _without_comment(code: str) -> str:
    """A source line without its trailing comment (a `#` inside a string stays)."""
    if "#" not in code:
        return code
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code.strip()).readline):
            if tok.type == tokenize.COMMENT:
                return code.strip()[:tok.start[1]]
    except (tokenize.TokenError, SyntaxError):  # a line of a longer statement: an open bracket
        pass
    return code


def _text(location: Optional[Location], node: str) -> str:
    if location is not None and location.code:
        return "".join(_without_comment(location.code).split())
    return f"node:{node}"


def finding_key(finding: Finding, uri: str) -> tuple:
    """What identifies a finding, independent of line numbers (see the module docstring)."""
    primary = finding.nodes[0] if finding.nodes else ""
    steps = tuple(
        (step.role, step.target, step.device or "", _text(step.location, step.node)) for step in finding.steps
    )
    return (SCHEME, finding.code, finding.program, finding.method, uri, _text(finding.location, primary), steps)


def digest(key: tuple) -> str:
    # surrogatepass: a file name that is no UTF-8 is held as lone surrogates; every other
    # text encodes as plain UTF-8, so no fingerprint of a valid name changes
    encoded = json.dumps(key, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()[:32]


def fingerprints(keys: Iterable[tuple]) -> list[str]:
    """`<hash>:<occurrence>` for each key, numbering repeats in the order given."""
    seen: Counter[str] = Counter()
    out = []
    for key in keys:
        value = digest(key)
        seen[value] += 1
        out.append(f"{value}:{seen[value]}")
    return out
