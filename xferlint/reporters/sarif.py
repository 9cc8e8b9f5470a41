"""SARIF 2.1.0 output for GitHub code scanning and editor SARIF viewers.

One run per invocation. `tool.driver.rules` lists every enabled rule, sorted by id, with
metadata generated from the rule class and its docstring (the same generator as
`xferlint rule`). Each finding becomes one result with:

- exactly one location: the model source line (repo-relative URI under `%SRCROOT%`), or,
  when the program carries no source information, the input file itself; its logical
  location names program, method and node (`run.logicalLocations` holds the hierarchy);
- a code flow that walks the transfer path step by step, each step with its device and
  source line, and related locations for the other steps (the other end of the transfer);
- `partialFingerprints["xferlint/v1"]` (see `xferlint.fingerprint`).

Findings a noqa comment or the baseline accepts are results too, with `suppressions`
(`inSource` with the comment's location and its justification, or `external`), so that
viewers show them as suppressed rather than not at all. With `--baseline`, every result
has a `baselineState`: `new` (reported), `unchanged` (the baseline accepts it) or
`absent` (a baseline entry nothing matches any more; located at its input file, as the
baseline records no lines). In-source suppressed results carry no `baselineState`: the
baseline was not asked about them.

Inputs that failed to load are `invocations[0].toolExecutionNotifications`.

The output depends only on the report, the options and the files it points at: no
timestamps, no absolute paths except `originalUriBaseIds` (and files outside the root),
results sorted, byte-identical for the same input.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Optional
from urllib.parse import quote

from sarif_om import (
    ArtifactContent,
    ArtifactLocation,
    CodeFlow,
    Invocation,
    Location,
    LogicalLocation,
    Message,
    MultiformatMessageString,
    Notification,
    PhysicalLocation,
    Region,
    ReportingConfiguration,
    ReportingDescriptor,
    Result,
    Run,
    Suppression,
    RunAutomationDetails,
    SarifLog,
    ThreadFlow,
    ThreadFlowLocation,
    Tool,
    ToolComponent,
)

from xferlint import __version__
from xferlint.findings import Finding, Severity, Step, anchor_node, node_order
from xferlint.findings import Location as SourceLine
from xferlint.fingerprint import SCHEME, finding_key, fingerprints
from xferlint import fsutil
from xferlint.records import dataclass
from xferlint.reporters import input_path
from xferlint.reporters.sarif_serialize import dumps, new, shared
from xferlint.serialize import to_jsonable

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
MAX_DESCRIPTION = 1024  # GitHub's limit for shortDescription / fullDescription
MAX_FLOW_STEPS = 10_000  # GitHub's limit of code-flow steps a result
_NAMED_STEPS = 8  # steps a capped code flow's message names before "(N more)"

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}


# --------------------------------------------------------------------------- paths


def project_root(explicit: Optional[str]) -> str:
    """`--project-root`, else the git work tree around the current directory, else cwd.

    Code scanning resolves URIs against the repository root, so the default is the
    repository, not wherever xferlint happens to run from.
    """
    return fsutil.project_root(explicit)


def _root_uri(root: str) -> str:
    uri = Path(root).as_uri()
    return uri if uri.endswith("/") else uri + "/"


@dataclass(frozen=True)
class _Uri:
    uri: str
    base: Optional[str]  # %SRCROOT% for files under the root, None for absolute URIs

    def artifact(self) -> ArtifactLocation:
        if self.base is None:
            return new(ArtifactLocation, uri=self.uri)
        return new(ArtifactLocation, uri=self.uri, uri_base_id=self.base)


def _file_uri(path: str, root: str) -> _Uri:
    """The URI of a file: relative to `root` (SRCROOT) when it is below it, else absolute."""
    # each file once per process and working directory (asked twice per result to sort
    # them and once per location: 40 us each, a fifth of a large log's build)
    return _file_uri_of(path if os.path.isabs(path) else os.path.join(os.getcwd(), path), root)


@lru_cache(maxsize=4096)
def _file_uri_of(path: str, root: str) -> _Uri:
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, root) if os.path.splitdrive(absolute)[0] == os.path.splitdrive(root)[0] else ".."
    if rel == ".." or rel.startswith(".." + os.sep):
        return _Uri(Path(absolute).as_uri(), None)
    # by its bytes, as `as_uri` quotes an absolute one: a name that is no UTF-8 (`\xff.pte`) is `%FF.pte`
    return _Uri(quote(os.fsencode(Path(rel).as_posix()), safe="/"), SRCROOT)


# --------------------------------------------------------------------------- rules


@lru_cache(maxsize=1)
def _project_urls() -> dict[str, str]:
    """`Project-URL` entries of the installed package metadata, by lower-case label."""
    try:
        entries = importlib.metadata.metadata("xferlint").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    urls = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        urls[label.strip().lower()] = url.strip()
    return urls


def _information_uri() -> Optional[str]:
    urls = _project_urls()
    return next((urls[k] for k in ("homepage", "repository", "source", "documentation") if k in urls), None)


def _help_uri(rule) -> Optional[str]:
    """The rule's section of the documentation (its heading `# name (CODE)` as an anchor)."""
    urls = _project_urls()
    base = urls.get("documentation") or _information_uri()
    if not base:
        return None
    return f"{base}#{rule.name}-{rule.code.lower()}"


def _limit(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """At most `limit` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


def rule_descriptor(rule) -> ReportingDescriptor:
    """A rule's SARIF metadata, generated from its class and docstring."""
    from xferlint.docs import rule_markdown

    sections = rule.sections()
    help_md = rule_markdown(rule)
    fields = dict(
        id=rule.code,
        name=rule.name,
        short_description=new(MultiformatMessageString, text=_limit(rule.summary())),
        full_description=new(
            MultiformatMessageString, text=_limit(sections.get("What it does") or rule.summary())
        ),
        help=new(MultiformatMessageString, text=help_md, markdown=help_md),
        default_configuration=new(ReportingConfiguration, level=LEVEL[rule.severity]),
        properties={
            "tags": list(rule.all_tags()),
            "precision": rule.precision,
            "problem.severity": PROBLEM_SEVERITY[rule.severity],
        },
    )
    help_uri = _help_uri(rule)
    if help_uri:
        fields["help_uri"] = help_uri
    return new(ReportingDescriptor, **fields)


def _rules_for(report, options) -> list:
    from xferlint.rules.base import all_rules

    known = {rule.code: rule for rule in all_rules()}
    chosen = {rule.code: rule for rule in (options.rules or all_rules())}
    shown = list(report.findings) + [item.finding for item in getattr(options, "suppressed", ())]
    for finding in shown:  # a finding always has its rule in the driver
        if finding.code not in chosen and finding.code in known:
            chosen[finding.code] = known[finding.code]
    return [chosen[code] for code in sorted(chosen)]


# --------------------------------------------------------------------------- locations


class _Logical:
    """`run.logicalLocations`: program > method > node, each listed once, in first use."""

    def __init__(self) -> None:
        self.entries: list[LogicalLocation] = []
        self._index: dict[str, int] = {}
        self._refs: dict[tuple, LogicalLocation] = {}

    def _add(self, fqn: str, name: str, kind: str, parent: Optional[int]) -> int:
        if fqn not in self._index:
            fields = dict(name=name, fully_qualified_name=fqn, kind=kind, index=len(self.entries))
            if parent is not None:
                fields["parent_index"] = parent
            self._index[fqn] = len(self.entries)
            self.entries.append(new(LogicalLocation, **fields))
        return self._index[fqn]

    def node(self, finding: Finding, node: str) -> LogicalLocation:
        """The reference to a node's entry; one object per node, shared by every location
        that names it (the log is written, never changed)."""
        key = (finding.input, finding.program, finding.method, node)
        found = self._refs.get(key)
        if found is None:
            program = self._add(finding.input, finding.program, "module", None)
            method_fqn = f"{finding.input}/{finding.method}"
            method = self._add(method_fqn, finding.method, "function", program)
            fqn = f"{method_fqn}/{node}"
            index = self._add(fqn, node, "variable", method)
            found = self._refs[key] = shared(new(LogicalLocation, name=node, fully_qualified_name=fqn,
                                                 kind="variable", index=index))
        return found


def _binding_line(path: str, attr: str) -> tuple[int, int]:
    """Line and column of the top-level statement that binds `attr` in a .py file."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return 1, 1
    for stmt in tree.body:
        names: list[str] = []
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if attr in names:
            return stmt.lineno, stmt.col_offset + 1
    return 1, 1


def _entry_attr(label: str) -> Optional[str]:
    """`model.py:program[key]` -> `program`."""
    match = re.search(r":([A-Za-z_][A-Za-z0-9_]*)(\[.*\])?$", label)
    return match.group(1) if match else None


class _Locator:
    def __init__(self, root: str, logical: _Logical) -> None:
        self.root = root
        self.logical = logical
        # per log: a finding with 100,000 steps names one file 200,000 times; the objects
        # are shared by the locations that name the same file (the log is never changed)
        self._artifacts: dict[str, ArtifactLocation] = {}
        self._bindings: dict[tuple[str, str], tuple[int, int]] = {}
        self._inputs: dict[tuple[str, str], PhysicalLocation] = {}

    def _artifact(self, path: str) -> ArtifactLocation:
        found = self._artifacts.get(path)
        if found is None:
            found = self._artifacts[path] = shared(_file_uri(path, self.root).artifact())
        return found

    def _binding(self, path: str, attr: str) -> tuple[int, int]:
        found = self._bindings.get((path, attr))
        if found is None:
            found = self._bindings[(path, attr)] = _binding_line(path, attr)
        return found

    def physical(self, line: Optional[SourceLine], finding: Finding) -> Optional[PhysicalLocation]:
        """The source line, else the input file (at the `program` binding of a .py file,
        else at line 1)."""
        if line is not None:
            region = dict(start_line=line.line, start_column=line.column)
            if line.code:
                region["snippet"] = new(ArtifactContent, text=line.code)
            return new(
                PhysicalLocation,
                artifact_location=self._artifact(line.file),
                region=new(Region, **region),
            )
        if finding.file is None:
            return None
        key = (finding.file, finding.input)
        found = self._inputs.get(key)
        if found is None:
            # Code scanning wants a line even for a binary .pte: its first.
            start_line, start_column = 1, 1
            if finding.file.endswith(".py"):
                start_line, start_column = self._binding(finding.file, _entry_attr(finding.input) or "program")
            found = self._inputs[key] = shared(new(PhysicalLocation, artifact_location=self._artifact(finding.file),
                                                   region=new(Region, start_line=start_line, start_column=start_column)))
        return found

    def location(self, line: Optional[SourceLine], finding: Finding, node: str, message: Optional[str] = None,
                 id: Optional[int] = None) -> Location:
        fields = dict(logical_locations=[self.logical.node(finding, node)])
        physical = self.physical(line, finding)
        if physical is not None:
            fields["physical_location"] = physical
        if message is not None:
            fields["message"] = new(Message, text=message)
        if id is not None:
            fields["id"] = id
        return new(Location, **fields)


# --------------------------------------------------------------------------- results


def step_message(step: Step) -> str:
    """What happens at one step of a transfer path, with its device."""
    device = step.device or "an unknown device"
    op = f"`{step.node}`" if step.target == step.node else f"`{step.node}` ({step.target})"
    if step.role == "producer":
        return f"{op} produces the value on {device}"
    if step.role == "d2h":
        return f"{op} copies it to host ({device})"
    if step.role == "h2d":
        return f"{op} copies it to {device}"
    if step.role == "consumer":
        return f"{op} reads it on {device}"
    return f"{op} ({step.role}) on {device}"


def _bag(**values) -> dict:
    """A property bag without the values that are unknown."""
    return {key: value for key, value in values.items() if value is not None}


def _primary_step(finding: Finding) -> Optional[int]:
    if finding.location is None:  # the step of the node every format reports it at
        node = anchor_node(finding)
        return next((i for i, s in enumerate(finding.steps) if s.node == node), None)
    return next((i for i, s in enumerate(finding.steps) if s.location == finding.location), None)


def _message(finding: Finding) -> str:
    if finding.location is not None:
        return finding.message
    node = anchor_node(finding)
    return (
        f"{finding.message} The program carries no source information, so this points at the input: "
        f"node `{node}` of program `{finding.program}`, method `{finding.method}`."
    )


def _shown_steps(count: int) -> range | list[int]:
    """The positions of the steps a result's code flow and related locations show: all of
    them, or past GitHub code scanning's limit of MAX_FLOW_STEPS code-flow steps a result
    (a delegate reading 100,000 host tensors has a step for each) the first MAX_FLOW_STEPS - 1
    and the last (the consumer). The finding's fingerprint still covers every step."""
    if count <= MAX_FLOW_STEPS:
        return range(count)
    return [*range(MAX_FLOW_STEPS - 1), count - 1]


def _flow_text(steps: list[Step], shown: int) -> str:
    """The code flow's message: each step with its device; when only `shown` of the steps
    are (`_shown_steps`), the first _NAMED_STEPS, how many more, and the last."""
    capped = shown < len(steps)
    picked = [*steps[:_NAMED_STEPS], steps[-1]] if capped else steps
    names = [f"{s.node} ({s.device or '?'})" for s in picked]
    if capped:
        names.insert(_NAMED_STEPS, f"({len(steps) - _NAMED_STEPS - 1:,} more)")
    return " -> ".join(names)


def _result(finding: Finding, rule_index: int, locator: _Locator, fingerprint: str, **extra) -> Result:
    primary_node = anchor_node(finding)
    primary = _primary_step(finding)
    if primary is not None and finding.steps:
        primary_node = finding.steps[primary].node
    shown = _shown_steps(len(finding.steps))
    picked = [(i, finding.steps[i]) for i in shown]
    thread = [
        new(
            ThreadFlowLocation,
            location=locator.location(step.location, finding, step.node, message=step_message(step)),
            execution_order=i + 1,
            properties=_bag(role=step.role, device=step.device, operator=step.target),
        )
        for i, step in picked
    ]
    related = [
        locator.location(step.location, finding, step.node, message=step_message(step), id=i + 1)
        for i, step in picked
        if i != primary
    ]
    fields = dict(
        rule_id=finding.code,
        rule_index=rule_index,
        level=LEVEL[finding.severity],
        message=new(Message, text=_message(finding)),
        locations=[locator.location(finding.location, finding, primary_node)],
        partial_fingerprints={SCHEME: fingerprint},
        properties=_bag(
            program=finding.program,
            method=finding.method,
            input=finding.input,
            bytesPerCall=finding.bytes,
            devices=list(finding.devices),
            fixable=finding.fixable,
        ),
    )
    if thread:
        flow = dict(locations=thread)
        if len(shown) < len(finding.steps):
            flow["message"] = new(Message, text=f"the first {len(shown) - 1:,} and the last of "
                                                f"{len(finding.steps):,} steps")
        fields["code_flows"] = [new(CodeFlow, thread_flows=[new(ThreadFlow, **flow)],
                                    message=new(Message, text=_flow_text(finding.steps, len(shown))))]
    if related:
        fields["related_locations"] = related
    fields.update(extra)  # suppressions, baselineState
    return new(Result, **fields)


def _sort_key(finding: Finding, root: str):
    loc = finding.location
    return (
        _uri_of(finding, root),
        loc.line if loc else 0,
        loc.column if loc else 0,
        finding.code,
        finding.input,
        finding.program,
        finding.method,
        node_order(finding.nodes),
        finding.message,
    )


def _uri_of(finding: Finding, root: str) -> str:
    where = finding.location.file if finding.location is not None else finding.file
    return _file_uri(where, root).uri if where else ""


# --------------------------------------------------------------------------- errors


def _notification(error, root: str) -> Notification:
    fields = dict(
        message=new(Message, text=error.message),
        level="error",
        properties={"input": error.input, "kind": error.kind},
    )
    path = input_path(error.input)
    if os.path.isfile(path):
        fields["locations"] = [new(Location, physical_location=new(
            PhysicalLocation, artifact_location=_file_uri(path, root).artifact()))]
    return new(Notification, **fields)


# --------------------------------------------------------------------------- emit


def _suppression(item, locator: _Locator) -> Suppression:
    fields = dict(kind=item.suppression.kind)
    if item.suppression.justification:
        fields["justification"] = item.suppression.justification
    where = item.suppression.where
    if item.suppression.kind == "inSource" and where:
        path, _, line = where.rpartition(":")
        if path and line.isdigit():
            fields["location"] = new(Location, physical_location=new(
                PhysicalLocation, artifact_location=_file_uri(path, locator.root).artifact(),
                region=new(Region, start_line=int(line))))
    return new(Suppression, **fields)


def _absent(entry, root: str, rule_index: Optional[int]) -> Result:
    """A baseline entry nothing matched: a result of kind `pass` with `baselineState:
    absent`, located at its input (the baseline records no lines)."""
    fields = dict(rule_id=entry.code, kind="pass", level="none", baseline_state="absent",
                  message=new(Message, text=entry.message or f"{entry.code} finding recorded in the baseline"),
                  partial_fingerprints={"xferlint/baseline": entry.fingerprint},
                  properties={"input": entry.input})
    if rule_index is not None:
        fields["rule_index"] = rule_index
    where = dict(logical_locations=[new(LogicalLocation, name=entry.input, fully_qualified_name=entry.input,
                                        kind="module")])
    path = _entry_file(entry.input)
    if path is not None:
        where["physical_location"] = new(PhysicalLocation, artifact_location=_file_uri(path, root).artifact(),
                                         region=new(Region, start_line=1, start_column=1))
    fields["locations"] = [new(Location, **where)]
    return new(Result, **fields)


def _entry_file(label: str) -> Optional[str]:
    path = input_path(label)
    return path if os.path.isfile(path) else None


def _results(report, options, root: str, index: dict, locator: _Locator) -> list[Result]:
    """Every result, sorted: reported findings, suppressed ones, then absent baseline entries."""
    suppressed = {id(item.finding): item for item in getattr(options, "suppressed", ())}
    absent = getattr(options, "baseline_absent", None)
    everything = list(report.findings) + [item.finding for item in getattr(options, "suppressed", ())]
    findings = sorted(everything, key=lambda f: _sort_key(f, root))
    prints = fingerprints(finding_key(f, _uri_of(f, root)) for f in findings)
    results = []
    for f, fp in zip(findings, prints):
        extra = {}
        item = suppressed.get(id(f))
        if item is not None:
            extra["suppressions"] = [_suppression(item, locator)]
        if absent is not None and (item is None or item.suppression.kind == "external"):
            extra["baseline_state"] = "unchanged" if item is not None else "new"
        results.append(_result(f, index[f.code], locator, fp, **extra))
    for entry in sorted(absent or (), key=lambda e: (e.code, e.input, e.fingerprint)):
        results.append(_absent(entry, root, index.get(entry.code)))
    return results


def build_log(report, options) -> SarifLog:
    """The SARIF log for a report, as sarif-om objects."""
    root = project_root(getattr(options, "project_root", None))
    rules = _rules_for(report, options)
    index = {rule.code: i for i, rule in enumerate(rules)}
    logical = _Logical()
    locator = _Locator(root, logical)
    results = _results(report, options, root, index, locator)

    driver = dict(
        name="xferlint",
        version=__version__,
        semantic_version=__version__,
        rules=[rule_descriptor(rule) for rule in rules],
    )
    if _information_uri():
        driver["information_uri"] = _information_uri()
    invocation = dict(execution_successful=not report.errors)
    if report.errors:
        invocation["tool_execution_notifications"] = [_notification(e, root) for e in report.errors]
    run = dict(
        tool=new(Tool, driver=new(ToolComponent, **driver)),
        automation_details=new(RunAutomationDetails, id="xferlint/"),
        original_uri_base_ids={SRCROOT: new(ArtifactLocation, uri=_root_uri(root))},
        column_kind="unicodeCodePoints",
        invocations=[new(Invocation, **invocation)],
        results=results,
    )
    if logical.entries:
        run["logical_locations"] = logical.entries
    transfers = getattr(report.summary, "transfers", None)
    if transfers is not None:
        # Per-call traffic per method and device pair, as in the text footer and JSON.
        run["properties"] = {"transfers": to_jsonable(transfers)}
    return new(SarifLog, schema_uri=SCHEMA_URI, version="2.1.0", runs=[new(Run, **run)])


def emit(report, options) -> str:
    return dumps(build_log(report, options))
