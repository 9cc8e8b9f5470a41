"""Source locations for `.pte` instructions: ETRecord files and debug-handle maps.

A `.pte` carries no stack traces (unless emitted with `emit_stacktrace=True`). ExecuTorch's
emitter records, per method, which graph nodes each instruction came from: its
`debug_handle_map` maps an instruction index to the node's debug handle (a kernel) or to
the debug handles of every node a delegate absorbed. The graphs themselves, with each
node's `stack_trace`, are in an ETRecord (`executorch.devtools.generate_etrecord`): a zip
holding `debug_handle_map` (JSON) and the edge program per method
(`edge_dialect_exported_program/<method>`, torch.export's JSON serialization, lowered
delegates nested in it as JSON strings). Both are read here with `zipfile` and `json` only.

`SourceMap` = {method: {instruction index: SourceLocation}}; the `.pte` frontend puts the
location on the instruction's node, and the rules' messages and the reporters pick it up.
With an ExecutorchProgramManager at hand (an entry point), `source_map_of_program` builds
the same map from its own `debug_handle_map` and graphs.
"""

import json
import os
import re
import zipfile
from functools import lru_cache
from typing import Any, Callable, Iterator, Optional

from xferlint.analyzer.view import SourceLocation
from xferlint.errors import InputError
from xferlint.frontends.files import check_regular, source_line

SourceMap = dict[str, dict[int, SourceLocation]]

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)(?:\n(?P<code>[^\n]*))?')
_XFERLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/torch/", "/executorch/", "/torchao/")
_MAX_ETRECORD = 1 << 36  # 64 GiB: ETRecords hold weights, so they can be large; zipfile seeks, never reads it all
_MAX_MEMBER = 1 << 30  # an ETRecord member larger than 1 GiB is not read
_EDGE = "edge_dialect_exported_program"


class ETRecordError(InputError):
    """An --etrecord file that cannot be used."""


def _is_library(path: str) -> bool:
    normalized = path.replace(os.sep, "/")
    return (path.startswith("<") or os.path.abspath(path).startswith(_XFERLINT_DIR)
            or any(m in normalized for m in _LIBRARY_MARKERS))


def location_of(stack_trace: Optional[str]) -> Optional[SourceLocation]:
    """The innermost user frame of an FX stack trace (torch-free)."""
    if not stack_trace:
        return None
    for frame in reversed(list(_FRAME.finditer(stack_trace))):
        path = frame.group("file")
        if _is_library(path):
            continue
        code = (frame.group("code") or "").strip() or None
        text = source_line(path, int(frame.group("line")))
        found = text.find(code) if code and text else -1
        column = found + 1 if found >= 0 else (len(text) - len(text.lstrip()) + 1 if text else 1)
        return SourceLocation(file=os.path.abspath(path), line=int(frame.group("line")), column=column,
                              function=frame.group("func").strip(), code=code)
    return None


def _locator() -> Callable[[Optional[str]], Optional[SourceLocation]]:
    """`location_of`, once per distinct stack trace: the instructions of one model line (a
    kernel and its copies, a delegate and the nodes it absorbed) repeat its trace, and one
    SourceLocation serves them all."""
    return lru_cache(maxsize=None)(location_of)


def _handles(entry: Any) -> list[int]:
    items = entry if isinstance(entry, list) else [entry]
    out = []
    for item in items:
        try:
            out.append(int(item))
        except (TypeError, ValueError):
            continue
    return out


def _nodes_with_traces(doc: Any, depth: int = 0) -> Iterator[tuple[int, str]]:
    """(debug handle, stack trace) of every node of a serialized program, nested ones too."""
    if depth > 32:
        return
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            meta = item.get("metadata")
            if isinstance(meta, dict) and "debug_handle" in meta and meta.get("stack_trace"):
                try:
                    yield int(meta["debug_handle"]), str(meta["stack_trace"])
                except (TypeError, ValueError):
                    pass
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.startswith("{") and '"graph_module"' in item:
            try:
                nested = json.loads(item)
            except ValueError:
                continue
            yield from _nodes_with_traces(nested, depth + 1)


def _to_source_map(debug_handle_map: dict, traces: dict[str, dict[int, str]]) -> SourceMap:
    result: SourceMap = {}
    locate = _locator()
    for method, instructions in debug_handle_map.items():
        if not isinstance(instructions, dict):
            continue
        known = traces.get(method, {})
        located: dict[int, SourceLocation] = {}
        for key, entry in instructions.items():
            try:
                index = int(key)
            except (TypeError, ValueError):
                continue
            # a delegate lists every node it absorbed; its result comes from the last one
            for handle in reversed(_handles(entry)):
                loc = locate(known.get(handle))
                if loc is not None:
                    located[index] = loc
                    break
        result[str(method)] = located
    return result


def read_etrecord(path: str) -> SourceMap:
    """The source map of an ETRecord file (raises ETRecordError with one line)."""
    try:
        check_regular(path, path, what="an ETRecord", limit=_MAX_ETRECORD)
    except InputError as exc:
        raise ETRecordError(str(exc)) from None
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ETRecordError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ETRecordError(f"{path}: not an ETRecord (not a zip archive: {exc})") from None
    with archive:
        names = set(archive.namelist())
        if "ETRECORD_V0" not in names:
            raise ETRecordError(f"{path}: not an ETRecord (no ETRECORD_V0 marker)")
        if "debug_handle_map" not in names:
            raise ETRecordError(f"{path}: the ETRecord has no debug_handle_map (generate it with the "
                                "ExecutorchProgramManager: generate_etrecord(path, edge, executorch_program))")

        def read_json(name: str) -> Any:
            info = archive.getinfo(name)
            if info.file_size > _MAX_MEMBER:
                raise ETRecordError(f"{path}: member {name} is too large ({info.file_size} bytes)")
            try:
                return json.loads(archive.read(name))
            except (ValueError, zipfile.BadZipFile, OSError, RuntimeError) as exc:
                raise ETRecordError(f"{path}: member {name} is unreadable ({exc})") from None

        debug_handle_map = read_json("debug_handle_map")
        if not isinstance(debug_handle_map, dict):
            raise ETRecordError(f"{path}: debug_handle_map is not a mapping")
        traces: dict[str, dict[int, str]] = {}
        for name in sorted(names):
            if name == _EDGE:
                method = "forward"
            elif name.startswith(_EDGE + "/") and not name.endswith(("_state_dict", "_constants", "_example_inputs")):
                method = name[len(_EDGE) + 1:]
            else:
                continue
            traces.setdefault(method, {}).update(_nodes_with_traces(read_json(name)))
    return _to_source_map(debug_handle_map, traces)


def source_map_of_program(program: Any) -> SourceMap:
    """The source map of an ExecutorchProgramManager, from its debug-handle map and graphs
    (torch is imported by whoever built the manager). After emission a kernel node's debug
    handle is its instruction index; a delegate's entry lists the handles of the nodes of
    its original (pre-lowering) graph."""
    debug_handle_map = getattr(program, "debug_handle_map", None) or {}
    result: SourceMap = {}
    locate = _locator()
    for method, instructions in debug_handle_map.items():
        try:
            gm = program.exported_program(method).graph_module
        except Exception:  # noqa: BLE001 - a method without a graph has no locations
            continue
        kernels: dict[int, str] = {}
        originals: dict[int, str] = {}
        for node in gm.graph.nodes:
            handle, trace = node.meta.get("debug_handle"), node.meta.get("stack_trace")
            if isinstance(handle, int) and trace:
                kernels.setdefault(handle, trace)
        for module in gm.modules():
            inner = getattr(getattr(module, "original_module", None), "graph_module", None)
            if inner is not None:
                for node in inner.graph.nodes:
                    handle, trace = node.meta.get("debug_handle"), node.meta.get("stack_trace")
                    if isinstance(handle, int) and trace:
                        originals.setdefault(handle, trace)
        located: dict[int, SourceLocation] = {}
        for key, entry in dict(instructions).items():
            index = int(key)
            if isinstance(entry, (list, tuple)):
                traces = [originals.get(h) for h in reversed(_handles(list(entry)))]
            else:
                traces = [kernels.get(index)]
            loc = next((loc for loc in map(locate, traces) if loc is not None), None)
            if loc is not None:
                located[index] = loc
        result[str(method)] = located
    return result
