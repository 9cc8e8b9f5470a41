"""Build sarif-om objects and serialize them without losing a field we set.

sarif-om's classes are attrs classes generated from the SARIF schema; the package has no
serializer of its own, and the usual one (`jschema_to_python.to_json`) drops every field
whose value equals its attrs default. Several defaults are meaningful values in SARIF
(`result.level = "warning"`, `reportingConfiguration.enabled = true`, ...): dropping them
changes what a consumer reads (a dropped result `level` falls back to the rule's default
configuration, which may be `error`).

`new(cls, **fields)` builds an object and records which fields the caller set;
`to_dict()` writes exactly those (None means "not set"), under each field's
`schema_property_name`, in the class's field order. Plain dicts (property bags,
`partialFingerprints`, `originalUriBaseIds`) and lists are written as they are.
"""

from __future__ import annotations

from typing import Any, Optional, TypeVar

import attr

from xferlint.serialize import encode_string, float_text

T = TypeVar("T")

_SET = "_xferlint_set_fields"


_CHOSEN: dict[frozenset, frozenset] = {}  # one set of field names per combination: objects share it


def new(cls: type[T], **fields: Any) -> T:
    """`cls(**fields)`, remembering that exactly these fields were set."""
    obj = cls(**fields)
    chosen = frozenset(fields)
    object.__setattr__(obj, _SET, _CHOSEN.setdefault(chosen, chosen))
    return obj


_SHARED = "_xferlint_shared"
_MEMO: dict[tuple[int, str], str] = {}  # (id of a shared object, indentation) -> its text, during one `dumps`


def shared(obj: T) -> T:
    """Mark an object that the log names in many places (a node's logical location, a
    file's artifact): `dumps` writes its text once per indentation and reuses it. The log
    must not change while it is written (its objects are kept alive by it)."""
    object.__setattr__(obj, _SHARED, True)
    return obj


_FIELDS: dict[type, Optional[tuple[tuple[str, str], ...]]] = {}  # class -> (field, property) pairs; None: no attrs class
_UNSEEN = object()  # a class `_FIELDS` has no answer for yet
_LONG = 64  # a list this long has each item's text joined on its own (`_write`)


def _fields(cls: type) -> Optional[tuple[tuple[str, str], ...]]:
    """(attribute, SARIF property name) of each field of attrs class `cls`, in order; None
    for other types. Once per class: a log of 100,000 locations has a million objects."""
    try:
        return _FIELDS[cls]
    except KeyError:
        found = _FIELDS[cls] = (tuple((f.name, f.metadata.get("schema_property_name", f.name))
                                      for f in attr.fields(cls)) if attr.has(cls) else None)
        return found


def to_dict(obj: Any) -> Any:
    """A JSON-ready value for a sarif-om object, dict, list or scalar. An object's field is
    written when it was set through `new()`; for an object built some other way, when its
    value is not None (defaults included: better one field too many than a silently
    changed meaning)."""
    members = _members(obj)
    if members is not None:
        return {key: to_dict(value) for key, value in members}
    if isinstance(obj, (list, tuple)):
        return [to_dict(item) for item in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot serialize a {type(obj).__name__} into SARIF")


def dumps(log: Any) -> str:
    """The SARIF text: `$schema` and `version` first, two-space indent, UTF-8, newline.

    `json.dumps(to_dict(log), indent=2, ensure_ascii=False)`, byte for byte, written in one
    walk over the objects: no intermediate dicts, and json's C string encoder for every
    string (with `indent`, json.dumps runs its pure-Python encoder: a log of 100,000
    locations took a minute)."""
    items = _members(log)
    if items is None:
        raise TypeError(f"cannot serialize a {type(log).__name__} into SARIF")
    first = [item for key in ("$schema", "version") for item in items if item[0] == key]
    out: list[str] = []
    try:
        _write_items(first + [item for item in items if item[0] not in ("$schema", "version")], "\n", out)
    finally:  # keyed by id: forgotten before the objects can go
        _MEMO.clear()
    out.append("\n")
    return "".join(out)


def _members(obj: Any) -> Optional[list[tuple[str, Any]]]:
    """(property, value) of what `to_dict` writes of a sarif-om object or a dict; None for
    any other value (its class's fields looked up once, not once to ask and again to read)."""
    cls = type(obj)
    fields = _fields(cls)
    if fields is None:
        return [(str(key), value) for key, value in obj.items()] if isinstance(obj, dict) else None
    return [(prop, value) for name, prop, _ in _plan(cls, fields, getattr(obj, _SET, None))
            if (value := getattr(obj, name)) is not None]


def _write_items(items: list[tuple[str, Any]], pad: str, out: list[str]) -> None:
    """An object's members at indentation `pad` (a newline and spaces), as json writes them."""
    if not items:
        out.append("{}")
        return
    inner = pad + "  "
    opening = "{" + inner
    for key, value in items:
        out.append(opening + encode_string(key) + ": ")
        _write(value, inner, out)
        opening = "," + inner
    out.append(pad + "}")


_PLANS: dict[tuple, tuple[tuple[str, str, str], ...]] = {}  # (class, set fields) -> `_plan`


def _plan(cls: type, fields: tuple[tuple[str, str], ...],
          chosen: Optional[frozenset]) -> tuple[tuple[str, str, str], ...]:
    """(attribute, SARIF property, its JSON key and `: `) of each field an object of attrs
    class `cls` whose set fields are `chosen` writes when its value is not None: the one
    choice `_members` and `_write_fields` make, with the keys encoded once per class and
    choice rather than once per object (a log of 20,000 results has a million members)."""
    key = (cls, chosen)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = tuple((name, prop, encode_string(prop) + ": ") for name, prop in fields
                                   if chosen is None or name in chosen)
    return plan


def _write(obj: Any, pad: str, out: list[str]) -> None:
    """The JSON text of `obj` (what `to_dict` makes of it) at indentation `pad`."""
    cls = type(obj)
    if cls is str:
        out.append(encode_string(obj))
        return
    fields = _FIELDS.get(cls, _UNSEEN)
    if fields is _UNSEEN:
        fields = _fields(cls)
    if fields is not None:  # a sarif-om object
        if getattr(obj, _SHARED, False):
            key = (id(obj), pad)
            text = _MEMO.get(key)
            if text is None:
                parts: list[str] = []
                _write_fields(obj, cls, fields, pad, parts)
                text = _MEMO[key] = "".join(parts)
            out.append(text)
        else:
            _write_fields(obj, cls, fields, pad, out)
        return
    members = _members(obj)
    if members is not None:
        _write_items(members, pad, out)
    elif isinstance(obj, (list, tuple)):
        if not obj:
            out.append("[]")
            return
        inner = pad + "  "
        opening = "[" + inner
        if len(obj) < _LONG:
            for item in obj:
                out.append(opening)
                _write(item, inner, out)
                opening = "," + inner
        else:  # each item's parts joined as it is written: a log's results are millions of parts
            for item in obj:
                parts = [opening]
                _write(item, inner, parts)
                out.append("".join(parts))
                opening = "," + inner
        out.append(pad + "]")
    else:
        out.append(_scalar(obj))


def _write_fields(obj: Any, cls: type, fields: tuple[tuple[str, str], ...], pad: str, out: list[str]) -> None:
    """A sarif-om object's members (`_write_items(_members(obj))`, inline)."""
    inner = pad + "  "
    opening = "{" + inner
    for name, _, key in _plan(cls, fields, getattr(obj, _SET, None)):
        value = getattr(obj, name)
        if value is not None:
            out.append(opening + key)
            _write(value, inner, out)
            opening = "," + inner
    out.append("{}" if opening[0] == "{" else pad + "}")


def _scalar(obj: Any) -> str:
    if isinstance(obj, str):
        return encode_string(obj)
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return int.__repr__(obj)
    if isinstance(obj, float):
        return float_text(obj)
    raise TypeError(f"cannot serialize a {type(obj).__name__} into SARIF")
