"""HTML output: one self-contained page (inline CSS and SVG, a few lines of plain JS, no
external resource) with, per program and method, a device timeline with the findings drawn
on it, the findings list (source line with context, the rule's help), and the transfer
summary as a chart.

The timelines come from the pipeline (`ReportOptions.timelines`, analyzer/timeline.py);
this module never sees a graph. Output is deterministic: same input, same bytes.
"""

from __future__ import annotations

import re
from html import escape
from typing import Optional, Sequence

from xferlint.console import one_line
from xferlint.reporters import ReportOptions, display_path
from xferlint.reporters.html_timeline import Mark, device_colour, render
from xferlint.rules.base import all_rules, format_bytes

CONTEXT_LINES = 2
HELP_SECTIONS = ("What it does", "Why is this bad?", "Use instead")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header,main{max-width:1400px;margin:0 auto;padding:12px 24px}
header h1{font-size:20px;margin:8px 0}
section.method{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:16px 0;padding:8px 16px}
h2{font-size:16px;margin:8px 0}
.meta{color:#5a6372}
.strip{display:flex;border:1px solid #e3e6eb;border-radius:4px;background:#fbfbfc}
.lanes{flex:0 0 auto;padding-top:30px;border-right:1px solid #e3e6eb}
.lanes div{height:56px;line-height:56px;padding:0 10px;font-weight:600;white-space:nowrap}
.scroll{overflow-x:auto;flex:1 1 auto}
svg.timeline text{font-size:11px;fill:#1d2330;pointer-events:none}
svg.timeline text.l1{font-weight:600}
.lane-bg.lane-0{fill:#ffffff}.lane-bg.lane-1{fill:#f1f3f6}
.col rect{stroke:#5a6372;stroke-width:.5}
.col.run rect{stroke-dasharray:3 2}
.col.scoped rect{stroke-dasharray:2 2;stroke-width:1}
.copy line{stroke:#37474f}.copy polygon{fill:#37474f;stroke:#37474f}
.copy text.bytes{font-size:10px;paint-order:stroke;stroke:#fff;stroke-width:3px}
.col.flagged rect{stroke-width:2.5}
.sev-error{--sev:#d32f2f}.sev-warning{--sev:#ef6c00}.sev-info{--sev:#1976d2}
.col.flagged rect{stroke:var(--sev)}
.copy.flagged line,.copy.flagged polygon{stroke:var(--sev);fill:var(--sev)}
.marker circle{fill:var(--sev)}.marker text{fill:#fff!important;font-weight:700}
.hl rect{stroke-width:4!important}.copy.hl line{stroke-width:16!important;opacity:.85}
ol.findings{padding-left:0;list-style:none}
ol.findings li{border-left:5px solid var(--sev);background:#fff;margin:10px 0;padding:6px 12px}
ol.findings li.hl{background:#fff8e1}
.badge{display:inline-block;color:#fff;background:var(--sev);border-radius:3px;padding:0 6px;font-weight:600}
pre.src{background:#f4f5f7;padding:6px 8px;overflow-x:auto;margin:6px 0}
pre.src .hit{background:#ffe0b2;display:inline-block;width:100%}
code{background:#eef0f3;padding:0 3px;border-radius:3px}
details.help{margin:4px 0}details.help h4,.rule h4{margin:6px 0 2px;font-size:13px}.rule h3{font-size:14px;margin:10px 0 2px}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #e3e6eb}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;
border-radius:2px;margin-right:4px;vertical-align:-1px}
.chart text{font-size:12px;fill:#1d2330}
"""

JS = """(function(){
function hl(id){document.querySelectorAll('.hl').forEach(function(e){e.classList.remove('hl');});
if(!id||!/^f-\\d+$/.test(id))return;
document.querySelectorAll('[data-findings~="'+id+'"]').forEach(function(e){e.classList.add('hl');});
var f=document.getElementById(id);if(f)f.classList.add('hl');}
document.addEventListener('click',function(ev){var a=ev.target.closest?ev.target.closest('[data-finding]'):null;
if(a)hl(a.getAttribute('data-finding'));});
window.addEventListener('hashchange',function(){hl(location.hash.slice(1));});
document.addEventListener('toggle',function(ev){var d=ev.target;
if(!d.open||!d.getAttribute||d.getAttribute('data-filled'))return;var code=d.getAttribute('data-rule');
var s=code?document.getElementById('rule-'+code):null;var b=s?s.querySelector('.rule-body'):null;
if(b){d.insertBefore(b.cloneNode(true),d.lastElementChild);d.setAttribute('data-filled','1');}},true);
hl(location.hash.slice(1));document.body.setAttribute('data-ready','1');})();"""


def _inline(text: str) -> str:
    """Escape text and turn `code` spans into <code>; URLs are left out (no external link)."""
    text = _URL.sub("", text)
    pieces = escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))


def _rule(code: str):
    """The rule with this code, None for a code no rule has."""
    return next((r for r in all_rules() if r.code == code), None)


def _help_html(code: str, cache: dict) -> str:
    """A finding's rule help: its summary, opening onto the rule's sections. The sections are
    on the page once, under Rules (`_rules_section`), and the page's script copies them in
    when a finding's help is first opened: 20,000 findings of one rule had 20,000 copies of
    its help (two thirds of a 92 MB page). Without the script, a link leads to them."""
    if code not in cache:
        rule = _rule(code)
        if rule is None:
            cache[code] = ""
        else:
            cache[code] = (f'<details class="help" data-rule="{escape(code)}"><summary>Rule help: '
                           f'{escape(rule.summary())}</summary><p class="meta"><a href="#rule-{escape(code)}">'
                           f'The rule under Rules</a> · full text: <code>xferlint rule {escape(code)}</code></p></details>')
    return cache[code]


def _rules_section(codes) -> str:
    """Each rule the findings name, its help sections once (what a finding's help shows)."""
    items = []
    for code in sorted(set(codes)):
        rule = _rule(code)
        if rule is None:
            continue
        sections = rule.sections()
        body = "".join(f"<h4>{escape(h)}</h4>{_markdown(sections[h])}" for h in HELP_SECTIONS if h in sections)
        items.append(f'<div class="rule" id="rule-{escape(code)}"><h3>{escape(code)} {escape(rule.name)}: '
                     f'{escape(rule.summary())}</h3><div class="rule-body">{body}</div></div>')
    return f'<section class="method" id="rules"><h2>Rules</h2>{"".join(items)}</section>' if items else ""


def _markdown(text: str) -> str:
    """The little markdown rule docstrings use: paragraphs, lists and ``` blocks."""
    out = []
    for chunk in re.split(r"(```[a-z]*\n.*?```)", text, flags=re.S):
        if chunk.startswith("```"):
            out.append(f"<pre>{escape(chunk.split(chr(10), 1)[1].rstrip('`').rstrip())}</pre>")
            continue
        for para in re.split(r"\n\s*\n", chunk.strip()):
            if para:
                out.append(f"<p>{_inline(' '.join(para.split()))}</p>")
    return "".join(out)


def _source(loc, options: ReportOptions, cache: dict) -> str:
    if loc is None:
        return '<p class="meta">No source location.</p>'
    where = one_line(f"{display_path(loc.file, options.project_root)}:{loc.line}:{loc.column}")
    lines = _read_lines(loc.file, cache)
    if lines is None or not 1 <= loc.line <= len(lines):
        code = f"{loc.line:>5} | {loc.code}" if loc.code else ""
        return f'<p class="loc">{escape(where)}</p><pre class="src"><span class="hit">{escape(code)}</span></pre>'
    lo, hi = max(1, loc.line - CONTEXT_LINES), min(len(lines), loc.line + CONTEXT_LINES)
    rows = []
    for n in range(lo, hi + 1):
        text = escape(f"{n:>5} | {lines[n - 1].rstrip()}")
        rows.append(f'<span class="hit">{text}</span>' if n == loc.line else text)
    return f'<p class="loc">{escape(where)}</p><pre class="src">' + "\n".join(rows) + "</pre>"


def _read_lines(path: str, cache: dict) -> Optional[list[str]]:
    """The lines of a source file a location names, None when it cannot be had: read as the
    text output reads it (`source_text`: a regular file of bounded size only), so a stack
    trace naming a FIFO or /dev/zero cannot hang the report or exhaust memory."""
    if path not in cache:
        from xferlint.frontends.files import source_text

        cache[path] = source_text(path).splitlines() or None
    return cache[path]


def _finding_item(f, fid: str, number: int, target: Optional[str], options, caches) -> str:
    sev = f.severity.value
    link = (f'<a class="tl-link" href="#{target}" data-finding="{fid}">show on the timeline</a>' if target
            else '<span class="meta">not on a timeline</span>')
    fix = " <span class=\"meta\">[*] fixable</span>" if f.fixable else ""
    nbytes = f" · {format_bytes(f.bytes)} per call" if f.bytes is not None else ""
    return (f'<li id="{fid}" class="finding sev-{sev}" data-code="{f.code}" data-severity="{sev}">'
            f'<span class="badge">{number}</span> <b>{f.code}</b> {escape(f.name)} '
            f'<span class="meta">({sev}{nbytes})</span>{fix} · {link}'
            f'<p class="message">{_inline(one_line(f.message))}</p>'
            f'{_source(f.location, options, caches["src"])}{_help_html(f.code, caches["help"])}</li>')


def _key(t) -> tuple:
    return (t.input, t.program, t.method)


def _method_section(index: int, t, items: list, options, caches) -> str:
    prefix = f"m{index}"
    marks = [Mark(id=fid, number=n, severity=f.severity.value, nodes=tuple(f.nodes), copies=tuple(f.copies))
             for fid, n, f in items]
    svg, anchors = render(t, prefix, marks)
    lanes = "".join(f"<div>{escape(d)}</div>" for d in t.devices)
    shown = svg.count('class="col ')
    findings = "".join(_finding_item(f, fid, n, anchors.get(fid), options, caches) for fid, n, f in items)
    # a name on the page, shown or in an attribute, is one line: its control characters as
    # escapes (`one_line`), as the other formats write it
    heading = escape(one_line(t.input if t.method == "forward" else f"{t.input} · {t.method}"))
    copies = len(t.copies)
    return (f'<section class="method" id="{prefix}" data-input="{escape(one_line(t.input))}" '
            f'data-program="{escape(one_line(t.program))}" data-method="{escape(one_line(t.method))}"><h2>{heading}</h2>'
            f'<p class="meta">method <code>{escape(one_line(t.method))}</code> · {len(t.nodes)} nodes in {shown} columns · '
            f'{copies} cop{"y" if copies == 1 else "ies"} · {len(items)} finding{"" if len(items) == 1 else "s"}</p>'
            f'<div class="strip"><div class="lanes">{lanes}</div><div class="scroll">{svg}</div></div>'
            f'<ol class="findings">{findings}</ol></section>')


def _chart(summary) -> str:
    t = summary.transfers
    rows = [(f"{p.source} \u2192 {p.target}", p.bytes, f"{p.copies} cop{'y' if p.copies == 1 else 'ies'}", "pair")
            for p in t.pairs]
    rows += [("flagged by findings", t.flagged_bytes, "", "flagged"), ("fixes would save", t.fixable_savings, "", "saves")]
    top = max((r[1] for r in rows), default=0) or 1
    colours = {"pair": "#546e7a", "flagged": "#ef6c00", "saves": "#2e7d32"}
    parts = [f'<svg class="chart" width="760" height="{22 * len(rows) + 8}" role="img" aria-label="transfer summary">']
    for i, (label, nbytes, note, kind) in enumerate(rows):
        y = 4 + 22 * i
        w = round(420 * nbytes / top)
        parts.append(f'<g class="bar {kind}" data-label="{escape(label)}" data-bytes="{nbytes}">'
                     f'<text x="0" y="{y + 13}">{escape(label)}</text>'
                     f'<rect x="170" y="{y}" width="{max(w, 1)}" height="16" fill="{colours[kind]}"/>'
                     f'<text x="{176 + w}" y="{y + 13}">{escape(format_bytes(nbytes))}'
                     f'{escape(" · " + note) if note else ""}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _per_method_table(summary) -> str:
    rows = "".join(
        f"<tr><td>{escape(one_line(m.input))}</td><td>{escape(one_line(m.method))}</td><td>{m.h2d_copies}</td><td>"
        f"{format_bytes(m.h2d_bytes)}</td><td>{m.d2h_copies}</td><td>{format_bytes(m.d2h_bytes)}</td>"
        f"<td>{format_bytes(m.flagged_bytes)}</td><td>{format_bytes(m.fixable_savings)}</td></tr>"
        for m in summary.transfers.methods)
    return ("<details><summary>Per method</summary><table><tr><th>input</th><th>method</th><th>H2D</th><th>bytes</th>"
            f"<th>D2H</th><th>bytes</th><th>flagged</th><th>fixes save</th></tr>{rows}</table></details>")


def _header(report) -> str:
    s = report.summary
    codes = ", ".join(f"{n} {c}" for c, n in s.by_code.items()) or "none"
    return (f"<header><h1>xferlint report</h1><p class=\"meta\">xferlint {escape(report.version)} · "
            f"{s.inputs} input{'s' if s.inputs != 1 else ''}, {s.programs} program{'s' if s.programs != 1 else ''} · "
            f"{s.findings} finding{'s' if s.findings != 1 else ''} ({escape(codes)}) · {s.fixable} fixable · "
            f"flagged transfers move {escape(format_bytes(s.bytes_flagged))} per call · "
            f"{s.errors} error{'s' if s.errors != 1 else ''}</p></header>")


def _legend(lanes: Sequence[str]) -> str:
    devices = "".join(f'<span><i style="background:{device_colour(d)}"></i>{escape(d)}</span>' for d in lanes)
    sev = "".join(f'<span class="sev-{s}"><i style="background:var(--sev)"></i>{s}</span>'
                  for s in ("error", "warning", "info"))
    return (f'<p class="legend">{devices}{sev}<span>arrows: copies, thickness = bytes per call; '
            f'dashed blocks: collapsed runs of ops on one device</span></p>')


def emit(report, options: ReportOptions) -> str:
    timelines = sorted(options.timelines, key=_key)
    numbered = [(f"f-{i + 1}", i + 1, f) for i, f in enumerate(report.findings)]
    by_method: dict[tuple, list] = {}
    for item in numbered:
        f = item[2]
        by_method.setdefault((f.input, f.program, f.method), []).append(item)
    caches: dict = {"src": {}, "help": {}}
    sections = [_method_section(i, t, by_method.pop(_key(t), []), options, caches) for i, t in enumerate(timelines)]
    leftover = [item for key in sorted(by_method) for item in by_method[key]]
    if leftover:
        items = "".join(_finding_item(f, fid, n, None, options, caches) for fid, n, f in leftover)
        sections.append(f'<section class="method" id="other"><h2>Other findings</h2><ol class="findings">{items}</ol></section>')
    errors = "".join(f"<li>{escape(e.message)}</li>" for e in report.errors)
    lanes = sorted({d for t in timelines for d in t.devices}, key=lambda d: (d != "cpu", d))
    body = (_header(report) + "<main>"
            + f'<section class="method" id="transfers"><h2>Transfers per call</h2>{_chart(report.summary)}'
            + _per_method_table(report.summary) + "</section>"
            + (f'<section class="method" id="errors"><h2>Inputs that could not be linted</h2><ul>{errors}</ul></section>'
               if errors else "")
            + _legend(lanes) + "".join(sections) + _rules_section(f.code for f in report.findings) + "</main>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>xferlint report</title><style>{CSS}</style></head><body>{body}"
            f"<script>{JS}</script></body></html>\n")
