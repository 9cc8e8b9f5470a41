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
import json
import json.encoder
import operator
import sys
import types
import typing
from typing import Any, Literal, Optional, Union

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
        names = tuple(f.name for f in _fields(cls)) if dataclasses.is_dataclass(cls) else None
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


def fast_constructor(cls: type) -> Any:
    """A function that builds instances of frozen slotted dataclass `cls` like `cls(**kw)`,
    fields by keyword, defaults the same, without the generated `__init__`'s
    `object.__setattr__` per field (each slot set through its descriptor, in straight-line
    code: a third of the cost; a check builds a Finding and a few Steps per finding).
    Classes with a `__post_init__` or without slots get `cls` itself."""
    spec = _fields(cls)
    if hasattr(cls, "__post_init__") or not hasattr(cls, "__slots__") or any(not f.init for f in spec):
        return cls
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    params, body = [], []
    for k, f in enumerate(spec):
        env[f"_set{k}"] = getattr(cls, f.name).__set__
        if f.default is not dataclasses.MISSING:
            env[f"_default{k}"] = f.default
            params.append(f"{f.name}=_default{k}")
            body.append(f" _set{k}(obj, {f.name})")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory{k}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f" _set{k}(obj, _factory{k}() if {f.name} is _MISSING else {f.name})")
        else:
            params.append(f.name)
            body.append(f" _set{k}(obj, {f.name})")
    env["_MISSING"] = dataclasses.MISSING
    source = f"def new(*, {', '.join(params)}):\n obj = _new(_cls)\n" + "\n".join(body) + "\n return obj\n"
    exec(source, env)  # noqa: S102 - generated from the class's own field names
    new = env["new"]
    new.__doc__ = f"`{cls.__name__}(**fields)`, without its generated __init__."
    return new


def to_json_text(obj: Any) -> str:
    """`json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False)`, byte for byte, written
    in one walk over the dataclasses: no intermediate dicts, and the C string encoder for
    every string (with `indent`, json.dumps falls back to its pure-Python encoder, which
    yields a chunk per token: most of a report's output time)."""
    out: list[str] = []
    _write_json(obj, "\n", out)
    return "".join(out)


@dataclasses.dataclass(frozen=True, slots=True)
class _Layout:
    """How one dataclass is written at one indentation: its field values fetched in one
    C call, and the text before each (`{` or `,`, the newline and indent, the key)."""

    values: Any  # obj -> tuple of its field values, in declared order
    prefixes: tuple[str, ...]
    inner: str  # the indentation of the fields
    close: str  # the newline, the object's own indentation and `}`


_LAYOUTS: dict[type, Optional[dict[str, _Layout]]] = {}  # per class: per indentation; None: no dataclass


def _layout(cls: type, pad: str) -> Optional[_Layout]:
    by_pad = _LAYOUTS.get(cls, ())
    if by_pad == ():
        by_pad = _LAYOUTS[cls] = {} if dataclasses.is_dataclass(cls) else None
    if by_pad is None:
        return None
    layout = by_pad.get(pad)
    if layout is None:
        names = tuple(f.name for f in _fields(cls))
        inner = pad + "  "
        getter = operator.attrgetter(*names) if len(names) > 1 else (lambda obj: (getattr(obj, names[0]),))
        prefixes = tuple(("{" if k == 0 else ",") + inner + _encode_string(name) + ": " for k, name in enumerate(names))
        layout = by_pad[pad] = _Layout(values=getter, prefixes=prefixes, inner=inner, close=pad + "}")
    return layout


def _write_json(obj: Any, pad: str, out: list) -> None:
    cls = type(obj)
    if cls is str:
        out.append(_encode_string(obj))
    elif obj is None:
        out.append("null")
    elif cls is bool:
        out.append("true" if obj else "false")
    elif cls is int:
        out.append(int.__repr__(obj))
    elif cls is float:
        out.append(_FLOAT(obj))
    elif cls is list or cls is tuple:
        _write_list(obj, pad, out)
    else:
        layout = _layout(cls, pad)
        if layout is not None:
            _write_fields(obj, layout, out)
        elif isinstance(obj, enum.Enum):
            _write_json(obj.value, pad, out)
        elif isinstance(obj, (list, tuple)):
            _write_list(obj, pad, out)
        elif isinstance(obj, dict):
            _write_object(((str(k), v) for k, v in obj.items()), bool(obj), pad, out)
        else:
            out.append(json.dumps(obj, ensure_ascii=False))  # a subclass of a scalar: json decides


def _write_fields(obj: Any, layout: _Layout, out: list) -> None:
    """A dataclass: its scalars (most of a finding) written here, containers and enums by
    `_write_list` and `_write_json` (a call per scalar was most of a report's output time)."""
    if not layout.prefixes:
        out.append("{}")
        return
    append = out.append
    inner = layout.inner
    for prefix, value in zip(layout.prefixes, layout.values(obj)):
        cls = type(value)
        if cls is str:
            append(prefix + _encode_string(value))
        elif value is None:
            append(prefix + "null")
        elif cls is bool:
            append(prefix + ("true" if value else "false"))
        elif cls is int:
            append(prefix + int.__repr__(value))
        else:
            append(prefix)
            if cls is list:
                _write_list(value, inner, out)
            else:
                _write_json(value, inner, out)
    append(layout.close)


def _write_list(items: Any, pad: str, out: list) -> None:
    if not items:
        out.append("[]")
        return
    inner = pad + "  "
    if type(items[0]) is str:
        try:  # a list of strings (a finding's nodes, devices, copies) in one C pass
            out.append("[" + inner + ("," + inner).join(map(_encode_string, items)) + pad + "]")
            return
        except TypeError:  # some later item is no string
            pass
    kind = type(items[0])
    layout = _layout(kind, inner)  # a list of findings, of steps: one layout for all
    out.append("[")
    first = True
    for item in items:
        out.append(inner if first else "," + inner)
        first = False
        if layout is not None and type(item) is kind:
            _write_fields(item, layout, out)
        else:
            _write_json(item, inner, out)
    out.append(pad + "]")


def _write_object(items: Any, nonempty: bool, pad: str, out: list) -> None:
    if not nonempty:
        out.append("{}")
        return
    inner = pad + "  "
    out.append("{")
    first = True
    for key, value in items:
        out.append(inner if first else "," + inner)
        first = False
        out.append(_encode_string(key))
        out.append(": ")
        _write_json(value, inner, out)
    out.append(pad + "}")


def _float_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


_FLOAT = _float_text
_encode_string = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring


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
