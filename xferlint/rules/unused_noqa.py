"""XF100 unused-noqa: a suppression comment that suppresses nothing."""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Iterable, Optional

from xferlint.analyzer.view import SourceLocation
from xferlint.findings import Applicability, Finding
from xferlint.rules.base import Example, Rule, RuleContext

_MODEL = '''\
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        a = x + y  {comment}
        return torch.sin(a)
'''


def _build(comment: str, **kwargs):
    from xferlint.testing.source import lowered_source

    return lowered_source(_MODEL.format(comment=comment), ["cuda:0", "cuda:0"], **kwargs)


def _line_text(path: str, line: int) -> str:
    """The line as it is now (the file may have been edited since it was first read)."""
    from xferlint.suppression import file_stamp

    stamp = file_stamp(path)
    lines = _lines(path, stamp) if stamp is not None else ()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@lru_cache(maxsize=64)
def _lines(path: str, stamp: tuple) -> tuple[str, ...]:
    """A source file's lines, read once per version (`stamp`): each unused directive of a
    file asks for its own line, and a file may hold thousands."""
    import io

    from xferlint.suppression import decode, read_source

    data = read_source(path)
    return tuple(io.StringIO(decode(data)[0], newline="").readlines()) if data else ()


class UnusedNoqa(Rule):
    """A `# xferlint: noqa` comment that suppresses nothing.

    ## What it does
    Flags a suppression comment in a model's source (`# xferlint: noqa: XF001`, a plain
    `# noqa: XF001`, a bare `# xferlint: noqa`, a file-level `# xferlint: noqa-file: XF006`)
    when a code it names suppressed no finding in the whole run (`unused`), or names no
    xferlint rule (`unknown`, a typo such as `XF01`). As ruff's RUF100 does.

    A code for a rule that did not run (`--select XF001` leaves XF006 out) is not unused:
    nothing was checked for it, so it is left alone; a bare `# xferlint: noqa` is reported
    only when every rule ran. Codes of other tools (`# noqa: E501`) are never looked at,
    and a comment that names `XF100` itself is not reported.

    ## Why is this bad?
    A stale suppression hides the next finding on its line: when the copy it was written
    for has gone, a new transfer the model grows on that line is suppressed without anyone
    having looked at it. Unknown codes suppress nothing at all while looking as if they did.

    ## Example
    ```python
    a = x + y  # xferlint: noqa: XF001   (the round trip was fixed last month)
    ```

    ## Use instead
    ```python
    a = x + y
    ```

    ## Fix safety
    Safe. The fix edits comments only: it removes the stale codes from the comment, or
    the whole directive when it names no code that is still used (a justification after
    the codes goes with it), and keeps the rest of the comment and other tools' codes
    (`# noqa: E501`). `xferlint check --fix` and `xferlint fix` apply it to the model's
    source file atomically, keeping its encoding and line endings; it is the one fix
    xferlint writes to Python source (entry points are the user's code), and it may,
    because it changes no code.

    ## References
    - ruff `RUF100` (unused-noqa)
    """

    code = "XF100"
    name = "unused-noqa"
    fix_applicability = Applicability.SAFE
    precision = "high"
    tags = ("suppression",)
    examples = (
        Example(partial(_build, "# xferlint: noqa: XF001"), 1,
                "the round trip the comment was written for was elided", select=("XF001",)),
        Example(partial(_build, "# xferlint: noqa: XF001", elide=False), 0,
                "the comment suppresses the round trip on its line", select=("XF001",)),
        Example(partial(_build, "# xferlint: noqa: XF999"), 1, "an unknown code"),
        Example(partial(_build, "# noqa: E501"), 0, "another tool's code"),
        Example(partial(_build, "# xferlint: noqa: XF006"), 0, "a code for a rule that did not run"),
    )

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        return ()  # this rule reads comments once per run: check_suppressions

    def check_suppressions(self, record) -> Iterable[Finding]:
        from xferlint.rules.base import all_rules

        known = {rule.code for rule in all_rules()}
        everything = known - {self.code} <= record.enabled
        file_waived = {d.file for d in record.source_directives() if d.scope == "file" and self.code in d.codes}
        for directive in record.source_directives():
            if self.code in directive.codes or directive.file in file_waived:
                continue
            text = self.problem(directive, record, known, everything)
            if text is not None:
                yield self._finding(record, directive, text)

    @classmethod
    def stale_codes(cls, directive, record, known: Optional[set] = None) -> Optional[tuple[str, ...]]:
        """The codes of `directive` its fix removes (() for a blanket one), None if none."""
        if known is None:
            from xferlint.rules.base import all_rules

            known = {rule.code for rule in all_rules()}
        if directive.blanket:
            everything = known - {cls.code} <= record.enabled
            return () if everything and not record.was_used(directive, "*") else None
        stale = tuple(c for c in directive.xf_codes
                      if c not in known or (c in record.enabled and not record.was_used(directive, c)))
        return stale or None

    def problem(self, directive, record, known: set, everything: bool) -> Optional[str]:
        stale = self.stale_codes(directive, record, known)
        if stale is None:
            return None
        if not stale:
            return "Unused blanket `noqa` directive"
        parts = []
        unused = [c for c in stale if c in known]
        unknown = [c for c in stale if c not in known]
        if unused:
            parts.append("unused: " + ", ".join(f"`{c}`" for c in unused))
        if unknown:
            parts.append("unknown: " + ", ".join(f"`{c}`" for c in unknown))
        kind = "`noqa-file`" if directive.scope == "file" else "`noqa`"
        return f"Unused {kind} directive ({'; '.join(parts)})"

    def _finding(self, record, directive, message: str) -> Finding:
        view = record.sources[directive.file]
        method = view.methods[0] if view.methods else None
        # A finding about a comment reads no device facts: the context is only its program.
        ctx = RuleContext(program=view, method=method, facts=None)  # type: ignore[arg-type]
        code = _line_text(directive.file, directive.line) or None
        location = SourceLocation(file=directive.file, line=directive.line, column=directive.column, code=code)
        return ctx.finding(self, message, (), location=location)
