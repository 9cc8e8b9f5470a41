"""Rule, RuleContext, Example and rule discovery.

A rule is one class in one module of this package: a `code`, a kebab-case `name`, a
severity, a docstring with the fixed sections (What it does / Why is this bad? / Example /
Use instead / Fix safety / References) and a `check(ctx)` that yields findings. Rules read
only the view and the DeviceFacts; they never touch native graphs. Each rule carries
`examples`: programs it must and must not flag, which one test hook runs.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
from dataclasses import field
from functools import lru_cache
from typing import Any, Callable, ClassVar, Iterable, Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, SourceLocation
from xferlint.findings import Applicability, Finding, Location, Severity, Step
from xferlint.frozen import fast_constructor
from xferlint.records import dataclass

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")

# OpKind members as module constants: `OpKind.X` looks the member up through the enum's
# metaclass (~65 ns), and these tests run per node or per finding.
_DELEGATE, _H2D, _TO_DEVICE, _GETITEM = OpKind.DELEGATE, OpKind.H2D, OpKind.TO_DEVICE, OpKind.GETITEM
_UNSET = object()  # not looked up yet
_RULES = object()  # `finding`'s applicability when the caller names none: the rule's own


@dataclass(frozen=True)
class Example:
    """A program a rule must flag `expect` times (0 for a valid example).

    `build` returns anything `xferlint.lint` accepts: a program object built with
    ExecuTorch's real lowering, or a hand-built ProgramView for what ExecuTorch cannot
    produce on a CPU machine.
    """

    build: Callable[[], Any]
    expect: int
    description: str
    # Other rules the example runs with (XF100 needs the findings a comment suppresses).
    select: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleContext:
    """What a rule checks: one method of a program and the facts solved for it."""

    program: ProgramView
    method: MethodView
    facts: DeviceFacts
    # Once-per-method answers (`locatable`, the file, what `shared` computes), by key: the
    # facts never change, and each finding locates every node of its path two or three times.
    _memo: dict = field(default_factory=dict, compare=False, repr=False)
    # The Steps made so far, by (node index, name, role): a finding's path shares them.
    _steps: dict = field(default_factory=dict, compare=False, repr=False)
    _device_texts: dict = field(default_factory=dict, compare=False, repr=False)  # id(device) -> str
    _devices_seen: list = field(default_factory=list, compare=False, repr=False)
    _copy_bytes: dict = field(default_factory=dict, compare=False, repr=False)  # id(node) -> copy_bytes
    # `locate`'s answers by id(node), and one Location per SourceLocation by id: a look-up
    # by id hashes no tuple and no dataclass (SourceLocation hashes in Python). The nodes
    # and source locations are the view's, alive as long as this context; `_kept` keeps
    # any other alive, so that its id stays its own.
    _located: dict = field(default_factory=dict, compare=False, repr=False)
    _locations: dict = field(default_factory=dict, compare=False, repr=False)
    _kept: list = field(default_factory=list, compare=False, repr=False)
    # `_located_reader`, `_located_writer`, `_inside_written`: value id -> SourceLocation or None
    _reader_locations: dict = field(default_factory=dict, compare=False, repr=False)
    _writer_locations: dict = field(default_factory=dict, compare=False, repr=False)
    _inside_locations: dict = field(default_factory=dict, compare=False, repr=False)
    # `position`: id(node) -> {value id: its first position among the operands / results}
    _input_positions: dict = field(default_factory=dict, compare=False, repr=False)
    _output_positions: dict = field(default_factory=dict, compare=False, repr=False)

    # -- describing nodes ---------------------------------------------------------
    def device_str(self, node: Node) -> Optional[str]:
        if node.kind is _DELEGATE:
            return self._device_text(node.device) if node.device else "cpu"
        # facts.device(node.output), from the dict behind it: a step asks once per node and role
        device = self.facts.devices.get(node.outputs[0]) if node.outputs else None
        return self._device_text(device) if isinstance(device, Device) else None

    def device_text(self, device: Device) -> str:
        """`str(device)`, memoised (see `_device_text`): messages name devices many times."""
        return self._device_text(device)

    def _device_text(self, device: Device) -> str:
        """`str(device)`, once per device object: the view and the facts share a few, and a
        Device hashes (for a cache keyed by value) in Python. By id: each is the view's or
        the facts', alive as long as this context."""
        texts = self._device_texts
        text = texts.get(id(device))
        if text is None:
            text = texts[id(device)] = str(device)
            self._devices_seen.append(device)  # keeps the id taken
        return text

    def locate(self, node: Optional[Node]) -> Optional[SourceLocation]:
        """The node's own source line, else the nearest neighbour's that has one.

        Copy nodes and delegate calls carry no stack trace: an H2D is located at what
        consumes it (inside a delegate: the first op of its original graph that reads the
        value), a D2H at what produced its source (inside a delegate: the op that produced
        that result), a delegate call at the getitem that carries its result. Memoised per
        node, and the neighbour scans per value, so locating is linear in the program
        however many readers or writers a value has.
        """
        if node is None or node.location is not None:
            return node.location if node is not None else None
        found = self._located.get(id(node), _UNSET)  # before `locatable`: most asks are repeats
        if found is _UNSET:
            if not self.locatable():
                return None
            found = self._located[id(node)] = self._locate(node)
            self._kept.append(node)
        return found

    def locatable(self) -> bool:
        """Whether any node of the method, or any op inside one of its delegates, has a
        source line: when none has (a `.pte` without an ETRecord), nothing is located and
        `locate` answers at once instead of scanning every node's neighbours."""
        found = self._memo.get(_LOCATABLE)
        if found is None:
            found = self._memo[_LOCATABLE] = _any_located(self.method.nodes)
        return found

    def _locate(self, node: Node) -> Optional[SourceLocation]:
        # plain loops, not next() over generators: a real program locates half its nodes
        kind = node.kind
        if kind is _DELEGATE:
            for vid in node.outputs:
                loc = self._located_reader(vid)
                if loc:
                    return loc
            return None
        if kind is _H2D or kind is _TO_DEVICE:
            vid = node.output
            found = self._located_reader(vid)
            if found is None:
                for c in self.facts.readers(vid):
                    if c.kind is _DELEGATE:
                        found = self._inside_reading(c, vid) or self.locate(c)
                        if found:
                            break
            if found:
                return found
        for vid in node.inputs:
            inside = self._inside_written(vid)
            if inside is not None:
                return inside
        for vid in node.inputs:
            loc = self._located_writer(vid)
            if loc:
                return loc
        return None

    def _cached(self, key: tuple, compute: Callable[[], Any]) -> Any:
        memo = self._memo
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """`compute()`, once per method: what several rules read off the same facts (the
        round trips), keyed by a name of the caller's."""
        return self._cached(("shared", key), compute)

    # The three neighbour scans below are memoised per value by hand rather than through
    # `_cached`: a key tuple and a closure per ask were a third of locating.
    def _located_reader(self, vid: Optional[str]) -> Optional[SourceLocation]:
        """The location of the first reader of `vid` that has one."""
        memo = self._reader_locations
        found = memo.get(vid, _UNSET)
        if found is _UNSET:
            found = memo[vid] = self._first_located(self.facts.readers(vid))
        return found

    def _located_writer(self, vid: str) -> Optional[SourceLocation]:
        memo = self._writer_locations
        found = memo.get(vid, _UNSET)
        if found is _UNSET:
            found = memo[vid] = self._first_located(self.facts.writers(vid))
        return found

    def _inside_written(self, vid: str) -> Optional[SourceLocation]:
        """The first writer of `vid` that carries a delegate's result: the op inside that produced it."""
        memo = self._inside_locations
        found = memo.get(vid, _UNSET)
        if found is _UNSET:
            found = memo[vid] = next((loc for w in self.facts.writers(vid)
                                      for loc in (self._inside_writing(w),) if loc is not None), None)
        return found

    def position(self, node: Node, vid: str, outputs: bool = False) -> Optional[int]:
        """Where `vid` first appears among `node`'s operands (or, with `outputs`, its
        results); None if not at all. Indexed once per node (one dict), so rules that ask
        this of every value a delegate reads or writes stay linear however many it has."""
        memo = self._output_positions if outputs else self._input_positions
        positions = memo.get(id(node))
        if positions is None:
            positions = {}
            for k, v in enumerate(node.outputs if outputs else node.inputs):
                positions.setdefault(v, k)
            memo[id(node)] = positions
            self._kept.append(node)
        return positions.get(vid)

    def _inside_reading(self, delegate: Node, vid: Optional[str]) -> Optional[SourceLocation]:
        """The line of the first op inside `delegate` (its original graph) that reads `vid`."""
        if delegate.delegate is None or not delegate.delegate.input_readers or vid is None:
            return None
        position = self.position(delegate, vid)
        op = delegate.delegate.reader_of(position) if position is not None else None
        return op.location if op is not None else None

    def _inside_writing(self, node: Node) -> Optional[SourceLocation]:
        """For a delegate's result (or its getitem), the line of the op inside the delegate
        that produced it."""
        vid = node.inputs[0] if node.kind == _GETITEM and node.inputs else None
        writer = self.facts.writer(vid) if vid is not None else None
        if writer is None or writer.kind != _DELEGATE or writer.delegate is None:
            return None
        if not writer.delegate.output_writers:
            return None
        op = writer.delegate.writer_of(self.position(writer, vid, outputs=True))
        return op.location if op is not None else None

    @staticmethod
    def _first_located(nodes: Iterable[Node]) -> Optional[SourceLocation]:
        for n in nodes:
            if n.location is not None:
                return n.location
        return None

    def describe(self, node: Node) -> str:
        """`name (line 23: `code`)` when the node can be located, else `name`."""
        loc = self.locate(node)
        if loc is None:
            return f"`{node.name}`"
        code = f": `{loc.code}`" if loc.code else ""
        return f"`{node.name}` (line {loc.line}{code})"

    def step(self, node: Node, role: str) -> Step:
        """The node as a step of a path in `role`; one (immutable) Step per node and role,
        shared by every finding whose path passes there."""
        key = (node.index, node.name, role)
        found = self._steps.get(key)
        if found is None:
            found = self._new_step(key, node, role)
        return found

    def _new_step(self, key: tuple, node: Node, role: str) -> Step:
        """The Step of `node` in `role`, made and kept under `key` (see `step`)."""
        location = node.location
        if location is None and self._memo.get(_LOCATABLE) is not False:  # `locatable()`, known False: no call
            location = self.locate(node)
        found = self._steps[key] = _STEP(node=node.name, target=node.target, role=role,
                                         device=self.device_str(node),
                                         location=self._location(location) if location is not None else None)
        return found

    def _location(self, loc: SourceLocation) -> Location:
        """One (immutable) Location per source location, shared by every step and finding
        that points there (see `_located`)."""
        found = self._locations.get(id(loc))
        if found is None:
            found = self._locations[id(loc)] = _location(loc)
            self._kept.append(loc)
        return found

    def copy_bytes(self, node: Node) -> Optional[int]:
        """Bytes one copy node moves per call: its result's, else its operand's; None when symbolic.
        Memoised per node: a finding's message, bytes and savings each sum its copies."""
        sizes = self._copy_bytes
        nbytes = sizes.get(id(node), _UNSET)
        if nbytes is not _UNSET:
            return nbytes
        nbytes = self.facts.nbytes(node.output)
        if nbytes is None and node.inputs:
            nbytes = self.facts.nbytes(node.inputs[0])
        sizes[id(node)] = nbytes
        self._kept.append(node)
        return nbytes

    def copies_bytes(self, nodes: Iterable[Node]) -> Optional[int]:
        """Bytes per call a set of copies moves, each once, all directions summed; None when any
        is symbolic or there are none."""
        if type(nodes) is list and len(nodes) < 3 and nodes:  # most findings are about one or two copies
            first = self.copy_bytes(nodes[0])
            if len(nodes) == 1 or first is None:
                return first
            if nodes[1].name != nodes[0].name:
                second = self.copy_bytes(nodes[1])
                return None if second is None else first + second
        unique = {n.name: n for n in nodes}
        total = 0
        for node in unique.values():
            size = self.copy_bytes(node)
            if size is None:
                return None
            total += size
        return total if unique else None

    # -- findings --------------------------------------------------------------------
    def finding(
        self,
        rule: "Rule",
        message: str,
        path: Sequence[tuple[Node, str]],
        nbytes: Optional[int] = None,
        anchor: Optional[Node] = None,
        *,
        copies: Sequence[Node] = (),
        removes: Sequence[Node] = (),
        detail: Optional[str] = None,
        location: Optional[SourceLocation] = None,
        applicability: Any = _RULES,
    ) -> Finding:
        """A finding of `rule` along `path`. With `copies` (the copy nodes it is about) its
        bytes are theirs, summed (NOTES: one definition of bytes); without, `nbytes` is the
        tensor at issue. `removes` are the copies its fix deletes; they set `saves_bytes`.
        `location` overrides where the finding points (a line inside a delegate);
        `applicability` the rule's fix applicability for this finding (None: not fixable)."""
        if applicability is _RULES:
            applicability = rule.fix_applicability
        made, new = self._steps, self._new_step
        locatable = self.locatable()  # before the steps: where nothing is, `_new_step` locates none
        # one key and one look-up per step, made or not (`step`'s own, inline)
        steps = [made.get(key := (node.index, node.name, role)) or new(key, node, role) for node, role in path]
        if location is None and locatable:
            if anchor is not None:
                location = self.locate(anchor)
            if location is None:
                location = next((loc for n, _ in path for loc in (self.locate(n),) if loc is not None), None)
        nbytes = self.copies_bytes(copies) if copies else nbytes
        if not removes:
            saves = None
        elif copies and _same_nodes(removes, copies):  # a fix that removes what the finding is about
            saves = nbytes
        else:
            saves = self.copies_bytes(removes)
        return _FINDING(
            code=rule.code,
            name=rule.name,
            severity=rule.severity,
            message=message,
            input=self.program.input,
            program=self.program.name,
            method=self.method.name,
            nodes=[s.node for s in steps],
            devices=[s.device or "unknown" for s in steps],
            bytes=nbytes,
            location=self._location(location) if location is not None else None,
            file=self._file(),
            fixable=applicability is not None,
            fix_applicability=applicability,
            steps=steps,
            copies=_names(copies),
            saves_bytes=saves,
            removes=_names(removes),
            detail=detail,
        )

    def _file(self) -> Optional[str]:
        """The program's file, absolute (once per method, not once per finding)."""
        memo = self._memo
        if _FILE not in memo:
            memo[_FILE] = os.path.abspath(self.program.file) if self.program.file else None
        return memo[_FILE]


def _any_located(nodes: Sequence[Node]) -> bool:
    """Whether a node, or an op inside a delegate, has a source line: one pass over the
    nodes (on a `.pte` without debug info, every node is read, and reading 100,000 of them
    is the cost: not twice)."""
    for node in nodes:
        if node.location is not None or (
                node.delegate is not None and any(op.location is not None for op in node.delegate.ops)):
            return True
    return False


def _names(nodes: Sequence[Node]) -> list[str]:
    """The nodes' names, each once, in order."""
    if len(nodes) < 2:
        return [n.name for n in nodes]
    if len(nodes) == 2:  # a round trip's D2H and H2D
        first, second = nodes[0].name, nodes[1].name
        return [first, second] if first != second else [first]
    return list(dict.fromkeys([n.name for n in nodes]))


def _same_nodes(a: Sequence[Node], b: Sequence[Node]) -> bool:
    """Whether two node lists hold the same nodes, in any order (by identity: a Node
    compares field by field in Python), so that their copies' bytes are the same."""
    if len(a) != len(b):
        return False
    if len(a) == 2:  # a round trip's two copies, in either order
        return (a[0] is b[0] and a[1] is b[1]) or (a[0] is b[1] and a[1] is b[0])
    return all(x is y for x, y in zip(a, b)) or {id(x) for x in a} == {id(y) for y in b}


# Finding, Step and Location without their generated __init__ (xferlint.serialize)
_FINDING, _STEP, _LOCATION = fast_constructor(Finding), fast_constructor(Step), fast_constructor(Location)
_LOCATABLE = ("locatable",)  # memo keys of RuleContext's once-per-method answers
_FILE = ("file",)


def _location(loc: SourceLocation) -> Location:
    """The finding's Location of a source location (`RuleContext._location` keeps one each)."""
    return _LOCATION(file=loc.file, line=loc.line, column=loc.column, function=loc.function, code=loc.code)


def _round_half_even(numerator: int, denominator: int) -> int:
    """round(numerator / denominator), ties to even, exactly (no float, no Fraction)."""
    quotient, remainder = divmod(numerator, denominator)
    twice = 2 * remainder
    return quotient + (twice > denominator or (twice == denominator and quotient % 2 == 1))


def format_bytes(nbytes: Optional[int]) -> str:
    """`64 B`, `1.5 KiB`, `12.0 MiB`; `an unknown number of bytes` when symbolic."""
    if nbytes is None:
        return "a symbolic number of bytes"
    if nbytes < 1024:
        return f"{nbytes} B"
    # integer arithmetic to the end: a byte count can exceed what a float holds
    for power, unit in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), start=1):
        if nbytes < 1024 ** (power + 1) or unit == "EiB":
            tenths = _round_half_even(nbytes * 10, 1024**power)  # as '%.1f' rounds
            if tenths >= 10240 and unit != "EiB":
                continue  # rounds up to the next unit
            return f"{tenths // 10}.{tenths % 10} {unit}"
    raise AssertionError("unreachable")


class Rule:
    """Base class: subclasses set the class attributes and implement `check`."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    fix_applicability: ClassVar[Optional[Applicability]] = None
    examples: ClassVar[tuple[Example, ...]] = ()
    tags: ClassVar[tuple[str, ...]] = ()  # extra tags; the category tags are derived (all_tags)
    precision: ClassVar[str] = "very-high"  # how often a finding is real: very-high, high, medium, low

    def check(self, ctx: RuleContext) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_suppressions(self, record: Any) -> Iterable[Finding]:
        """Findings about suppression comments, once per run after every program was
        analysed: `record` (`xferlint.suppression.Record`) holds what each comment
        suppressed and the source files of the programs. Only XF100 has any."""
        return ()

    # -- documentation, from the docstring ------------------------------------------
    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def all_tags(cls) -> tuple[str, ...]:
        """Tags for code scanning and docs: the category (from the severity), the topic and `tags`."""
        category = "correctness" if cls.severity == Severity.ERROR else "performance"
        return tuple(sorted({category, "device-transfer", *cls.tags}))

    @classmethod
    def summary(cls) -> str:
        """The docstring's first line."""
        return cls.doc().splitlines()[0].strip() if cls.doc() else cls.name

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's `## Heading` sections, in order."""
        sections: dict[str, str] = {}
        current: Optional[str] = None
        lines: list[str] = []
        for line in cls.doc().splitlines()[1:]:
            match = re.match(r"^##\s+(.*\S)\s*$", line)
            if match:
                if current is not None:
                    sections[current] = "\n".join(lines).strip()
                current, lines = match.group(1), []
            elif current is not None:
                lines.append(line)
        if current is not None:
            sections[current] = "\n".join(lines).strip()
        return sections


def _module_names(path: Iterable[str]) -> list[str]:
    """The modules and packages in the package's folders, as `pkgutil.iter_modules` lists
    them (each folder's names sorted, each name once): the folders listed here, where pkgutil
    would import `inspect` (and `ast`, `dis`, `tokenize`: 4 % of a `.pte` check's start)
    to name the files."""
    names: dict[str, None] = {}
    for folder in path:
        try:
            files = sorted(os.listdir(folder))
        except OSError:
            continue
        for file in files:
            name = _module_name(file)
            if name is None and "." not in file and _is_package(os.path.join(folder, file)):
                name = file
            if name and "." not in name and name != "__init__":
                names.setdefault(name)
    return list(names)


def _is_package(folder: str) -> bool:
    try:
        return any(_module_name(file) == "__init__" for file in os.listdir(folder))
    except OSError:  # not a folder, or not readable
        return False


def _module_name(file: str) -> Optional[str]:
    """`inspect.getmodulename`: the file's name less its longest import suffix."""
    for suffix in _MODULE_SUFFIXES:
        if file.endswith(suffix):
            return file[: -len(suffix)]
    return None


# what the import system loads (`importlib.machinery.all_suffixes()`), longest first
_MODULE_SUFFIXES = sorted(importlib.machinery.all_suffixes(), key=len, reverse=True)


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class in this package, discovered by importing its modules, by code."""
    import xferlint.rules as package

    found: dict[str, type[Rule]] = {}
    for name in _module_names(package.__path__):
        if name.startswith("_") or name == "base":
            continue
        module = importlib.import_module(f"{package.__name__}.{name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.code:
                if obj.__module__ == module.__name__:
                    if obj.code in found and found[obj.code] is not obj:
                        raise RuntimeError(f"rule code {obj.code} is defined twice")
                    found[obj.code] = obj
    return tuple(found[code] for code in sorted(found))
