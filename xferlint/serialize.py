"""Plain data at the boundaries: frozen slotted dataclasses, their JSON form and JSON Schema.

Findings, reports and settings are stdlib dataclasses rather than pydantic models: building
one costs a plain `__init__` (a check builds thousands), and nothing here imports more than
the standard library, so the torch-free `.pte` path starts fast. The JSON output and its
JSON Schema (`xferlint schema`) are both derived from the same class definitions:

- `to_jsonable(obj)` turns a dataclass (recursively) into dicts, lists and scalars, fields
  in their declared order, enums as their values;
- `json_schema(cls)` describes it: one `$defs` entry per dataclass and enum, each field's
  description from `described(...)`, required fields those without a default, no extra keys.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import sys
import types
import typing
from typing import Any, Literal, Optional, Union

from xferlint.records import field_names

BOUNDARY = dict(frozen=True, slots=True, kw_only=True)  # the dataclass options of boundary classes


def described(description: str, **kwargs: Any) -> Any:
    """A dataclass field with a description for the JSON Schema (and the docs)."""
    return dataclasses.field(metadata={"description": description}, **kwargs)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, Optional[tuple[str, ...]]] = {}  # per class: its dataclass fields, or None


def to_jsonable(obj: Any) -> Any:
    """The JSON-ready form of a dataclass tree (dicts, lists, str, int, float, bool, None)."""
    cls = type(obj)
    if cls in _SCALARS:
        return obj
    names = _FIELD_NAMES.get(cls, ())
    if names == ():
        names = field_names(cls) if dataclasses.is_dataclass(cls) else None
        _FIELD_NAMES[cls] = names
    if names is not None:
        return {name: to_jsonable(getattr(obj, name)) for name in names}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(item) for item in obj]
    if isinstance(obj, dict):
        return {str(key): to_jsonable(value) for key, value in obj.items()}
    return obj


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(cls)


def to_json_text(obj: Any, end: str = "") -> str:
    """`json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False) + end`, byte for byte,
    written in one walk over the dataclasses: no intermediate dicts, and the C string
    encoder for every string (with `indent`, json.dumps falls back to its pure-Python
    encoder, which yields a chunk per token: most of a report's output time). A dataclass
    gets `end` inside its own text's join, not by copying the whole text once more."""
    try:
        if dataclasses.is_dataclass(type(obj)):
            return _flat_text(obj, end)
        return _text(obj, "\n") + end if end else _text(obj, "\n")
    finally:  # the texts are keyed by id: forget them before their objects can go
        for memo in _MEMOS:
            memo.clear()
        _ENCODED.clear()


def _flat_text(obj: Any, end: str) -> str:
    """The text of a top-level dataclass (a report), joined once from one list of parts: a
    field that is a list of objects of one dataclass (the findings) has each object's parts
    in that list, not a text of each object joined into a text of the list joined into
    the report. A report's bytes were otherwise copied once per level, into memory fresh
    each time (five times its size: ~300 MB of page faults for a 56 MB report)."""
    names = field_names(type(obj))
    if not names:
        return "{}" + end
    pad = "\n  "
    via = _texts_at(pad)
    out: list[str] = []
    for k, name in enumerate(names):
        out.append(("{" if k == 0 else ",") + pad + encode_string(name) + ": ")
        value = getattr(obj, name)
        parts = _parts_writer(type(value[0]), pad + "  ") if type(value) is list and value else None
        if parts is not None and len(set(map(type, value))) == 1:
            _list_parts(value, pad, parts, out)
        else:
            out.append(via[type(value)](value))
    out.append("\n}" + end)
    return "".join(out)


def _list_parts(items: list, pad: str, parts: Any, out: list[str]) -> None:
    """A list of objects of one dataclass at indentation `pad`, as its writer writes it, in parts."""
    start, separator, end = _list_marks(pad)
    out.append(start)
    parts(items[0], out)
    for item in items[1:]:
        out.append(separator)
        parts(item, out)
    out.append(end)


_PARTS: dict[tuple[type, str], Any] = {}  # (dataclass, indentation) -> its parts writer; None: no dataclass


def _parts_writer(cls: type, pad: str) -> Any:
    """What `_writer(cls, pad)` writes, added to a list of parts instead of joined (no memo:
    used where each object is met once)."""
    key = (cls, pad)
    if key not in _PARTS:
        names = field_names(cls) if dataclasses.is_dataclass(cls) else None
        _PARTS[key] = _compile_writer(names, pad, parts=True) if names else None
    return _PARTS[key]


def _text(obj: Any, pad: str) -> str:
    """The JSON text of `obj` at indentation `pad` (a newline and spaces): its type's text
    function (`_text_function`), looked up once per type and indentation."""
    return _texts_at(pad)[type(obj)](obj)


def _other_text(obj: Any, pad: str) -> str:
    """The text of what has no text function of its own type: a subclass of list, tuple,
    dict or a scalar."""
    if isinstance(obj, (list, tuple)):
        return _list_text(obj, pad)
    if isinstance(obj, dict):
        return _object_text([(str(k), v) for k, v in obj.items()], pad)
    import json  # here: a check writes no such value (`encode_string`)

    return json.dumps(obj, ensure_ascii=False)  # a subclass of a scalar: json decides


_WRITERS: dict[type, Optional[dict[str, Any]]] = {}  # per class: per indentation; None: no dataclass
_MEMOS: list[dict[int, str]] = []  # every writer's texts of one `to_json_text` call, by id(obj)


def _writer(cls: type, pad: str) -> Any:
    """The text function of dataclass `cls` at indentation `pad` (None for other classes):
    generated once, straight-line, its field values fetched in one C call, each string
    encoded in place and every other value through `_text` (a call per scalar, or a loop
    over the fields, was most of a report's output time)."""
    by_pad = _WRITERS.get(cls, ())
    if by_pad == ():
        by_pad = _WRITERS[cls] = {} if dataclasses.is_dataclass(cls) else None
    if by_pad is None:
        return None
    writer = by_pad.get(pad)
    if writer is None:
        writer = by_pad[pad] = _compile_writer(field_names(cls), pad)
    return writer


def _compile_writer(names: tuple[str, ...], pad: str, parts: bool = False) -> Any:
    """`write(obj) -> text` (memoised per object), or with `parts`, `write(obj, out)`, which
    adds the same text to list `out` in parts."""
    if not names:
        return (lambda obj, out: out.append("{}")) if parts else (lambda obj: "{}")
    inner = pad + "  "
    memo: dict[int, str] = {}
    if not parts:
        _MEMOS.append(memo)
    env: dict[str, Any] = {"_enc": _ENCODED, "_via": _texts_at(inner), "_str": str, "_join": "".join,
                           "_close": pad + "}", "_memo": memo, "_seen": memo.get, "_id": id,
                           "_values": operator.attrgetter(*names) if len(names) > 1 else None}
    pieces = []
    for k, name in enumerate(names):
        env[f"_p{k}"] = ("{" if k == 0 else ",") + inner + encode_string(name) + ": "
        # a string or None in place; any other value by its type's text function (one look-up)
        pieces.append(f"_p{k}, _enc[v{k}] if type(v{k}) is _str else 'null' if v{k} is None "
                      f"else _via[type(v{k})](v{k})")
    fetch = (f"({', '.join(f'v{k}' for k in range(len(names)))},) = _values(obj)" if len(names) > 1
             else f"v0 = obj.{names[0]}")
    if parts:
        source = f"def write(obj, out):\n {fetch}\n out.extend(({', '.join(pieces)}, _close))\n"
    else:  # one join: a chain of `+` would copy the growing text once per field
        source = (f"def write(obj):\n text = _seen(_id(obj))\n if text is not None:\n  return text\n {fetch}\n"
                  f" text = _memo[_id(obj)] = _join(({', '.join(pieces)}, _close))\n return text\n")
    exec(source, env)  # noqa: S102 - generated from the class's own field names
    return env["write"]


def _list_text(items: Any, pad: str) -> str:
    return _texts_at(pad)[list](items)


class _Texts(dict):
    """The text function of each type met at one indentation (`_text_function`), made on
    first use."""

    def __init__(self, pad: str) -> None:
        super().__init__()
        self.pad = pad

    def __missing__(self, cls: type) -> Any:
        function = self[cls] = _text_function(cls, self.pad)
        return function


_TEXTS: dict[str, _Texts] = {}  # by indentation


def _texts_at(pad: str) -> _Texts:
    texts = _TEXTS.get(pad)
    if texts is None:
        texts = _TEXTS[pad] = _Texts(pad)
    return texts


def _text_function(cls: type, pad: str) -> Any:
    """The text function of objects of exactly class `cls` at indentation `pad`: the one
    dispatch on type, made once per class (a dataclass's field or a list's item is then
    written through one look-up, not a chain of type tests per value)."""
    if cls is str:
        return encode_string
    if cls is type(None):
        return lambda obj: "null"
    if cls is bool:
        return lambda obj: "true" if obj else "false"
    if cls is int:
        return int.__repr__
    if cls is float:
        return _FLOAT
    if cls is list or cls is tuple:
        return _list_writer(pad)
    writer = _writer(cls, pad)
    if writer is not None:
        return writer
    if issubclass(cls, enum.Enum):  # each member's text once (reading `.value` is a Python call)
        members = {id(member): _text(member.value, pad) for member in cls}
        return lambda obj: members.get(id(obj)) or _text(obj.value, pad)
    return lambda obj: _other_text(obj, pad)


def _list_writer(pad: str) -> Any:
    """The text function of a list (or tuple) at indentation `pad`."""
    inner = pad + "  "
    start, comma, end = _list_marks(pad)
    via = _texts_at(inner)

    def write(items: Any) -> str:
        if not items:
            return "[]"
        kind = type(items[0])
        if kind is str:
            try:  # a list of strings (a finding's nodes, devices, copies) in one C pass
                return start + comma.join(map(_ENCODED.__getitem__, items)) + end
            except TypeError:  # some later item is no string
                pass
        first = via[kind]  # a list of findings, of steps: one function for all
        return start + comma.join([first(item) if type(item) is kind else via[type(item)](item)
                                   for item in items]) + end

    return write


def _list_marks(pad: str) -> tuple[str, str, str]:
    """What opens, separates and closes the items of a list written at indentation `pad`."""
    inner = pad + "  "
    return "[" + inner, "," + inner, pad + "]"


def _object_text(items: list, pad: str) -> str:
    if not items:
        return "{}"
    inner = pad + "  "
    return "{" + inner + ("," + inner).join(encode_string(k) + ": " + _text(v, inner) for k, v in items) + pad + "}"


def float_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


_FLOAT = float_text


def _string_encoder() -> Any:
    """json's C string encoder (`json.encoder.c_encode_basestring`), taken from `_json`
    without importing json, whose decoder compiles its regexes at import (1 % of a one-file
    check, which reads no JSON); json's Python encoder where the C one is missing."""
    try:
        from _json import encode_basestring
    except ImportError:
        from json.encoder import py_encode_basestring as encode_basestring
    return encode_basestring


encode_string = _string_encoder()


class _Encoded(dict):
    """Each string's JSON text, encoded once per `to_json_text` call: a report repeats its
    strings (a node's name in its finding's nodes, steps, copies and removes and in the
    next finding; the input and file of every finding), and a look-up of a string whose
    hash is known costs less than encoding it again."""

    def __missing__(self, text: str) -> str:
        encoded = self[text] = encode_string(text)
        return encoded


_ENCODED = _Encoded()


def json_schema(cls: type) -> dict:
    """The JSON Schema (draft 2020-12) of dataclass `cls`, with `$defs` for what it holds."""
    defs: dict[str, dict] = {}
    root = _object_schema(cls, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **root, "$defs": dict(sorted(defs.items()))}


def _object_schema(cls: type, defs: dict[str, dict]) -> dict:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    properties, required = {}, []
    for f in _fields(cls):
        prop = _type_schema(hints[f.name], defs)
        if "description" in f.metadata:
            prop = {**prop, "description": f.metadata["description"]}
        if f.default is not dataclasses.MISSING and _plain(f.default):
            prop = {**prop, "default": to_jsonable(f.default)}
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
        properties[f.name] = prop
    schema: dict[str, Any] = {"title": cls.__name__, "type": "object", "properties": properties,
                              "additionalProperties": False}
    if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):  # not the dataclass repr doc
        schema["description"] = " ".join(cls.__doc__.split())
    if required:
        schema["required"] = required
    return schema


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, enum.Enum))


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(hint: Any, defs: dict[str, dict]) -> dict:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type_schema(a, defs) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple) or hint in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [_type_schema(a, defs) for a in args], "items": False}
        return {"type": "array", "items": _type_schema(args[0], defs) if args else {}}
    if origin is dict or hint is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs) if args else {}}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        defs.setdefault(hint.__name__, {"title": hint.__name__, "enum": [m.value for m in hint], "type": "string"})
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if dataclasses.is_dataclass(hint):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # placeholder: recursive types terminate
            defs[hint.__name__] = _object_schema(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    raise TypeError(f"no JSON Schema for {hint!r}")





class InvalidField(ValueError):
    """A mapping does not fit a dataclass: `key` is the offending field, `str()` says why."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(problem)
        self.key = key


def from_mapping(cls: type, data: dict) -> Any:
    """An instance of dataclass `cls` from plain data (parsed TOML): every key a field, every
    value of its declared type (scalars, Optional, Literal, list[...] and dict[str, ...])."""
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    names = {f.name for f in _fields(cls)}
    for key, value in data.items():
        if key not in names:
            raise InvalidField(key, "unknown key")
        problem = _mismatch(hints[key], value)
        if problem:
            raise InvalidField(key, problem)
    return cls(**data)


def _mismatch(hint: Any, value: Any) -> Optional[str]:
    """Why `value` is not a `hint`, or None when it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        problems = [_mismatch(a, value) for a in args]
        return None if None in problems else next(p for p in problems if p)
    if hint is type(None):
        return None if value is None else f"expected nothing, got {value!r}"
    if origin is Literal:
        return None if value in args else f"expected one of {', '.join(repr(a) for a in args)}, got {value!r}"
    if hint is bool:
        return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected a whole number, got {value!r}"
        return None
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected a number, got {value!r}"
        return None
    if hint is str:
        return None if isinstance(value, str) else f"expected a string, got {value!r}"
    if origin in (list, tuple):
        if not isinstance(value, list):
            return f"expected a list, got {value!r}"
        return next((f"item {i}: {p}" for i, item in enumerate(value) if (p := _mismatch(args[0], item))), None)
    if origin is dict:
        if not isinstance(value, dict):
            return f"expected a table, got {value!r}"
        return next((f"{k!r}: {p}" for k, v in value.items() if (p := _mismatch(args[1], v))), None)
    raise TypeError(f"cannot check a value against {hint!r}")
