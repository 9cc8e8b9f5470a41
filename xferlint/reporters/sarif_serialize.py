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

import json
from typing import Any, TypeVar

import attr

T = TypeVar("T")

_SET = "_xferlint_set_fields"


def new(cls: type[T], **fields: Any) -> T:
    """`cls(**fields)`, remembering that exactly these fields were set."""
    obj = cls(**fields)
    object.__setattr__(obj, _SET, frozenset(fields))
    return obj


def _explicit(obj: Any, field: attr.Attribute) -> bool:
    """Whether the field is written: set through `new()`; for an object built some other
    way, any value that is not None (defaults included: better one field too many than a
    silently changed meaning)."""
    value = getattr(obj, field.name)
    if value is None:
        return False
    chosen = getattr(obj, _SET, None)
    return chosen is None or field.name in chosen


def to_dict(obj: Any) -> Any:
    """A JSON-ready value for a sarif-om object, dict, list or scalar."""
    if attr.has(type(obj)):
        out: dict[str, Any] = {}
        for field in attr.fields(type(obj)):
            if _explicit(obj, field):
                out[field.metadata.get("schema_property_name", field.name)] = to_dict(getattr(obj, field.name))
        return out
    if isinstance(obj, dict):
        return {str(key): to_dict(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(item) for item in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot serialize a {type(obj).__name__} into SARIF")


def dumps(log: Any) -> str:
    """The SARIF text: `$schema` and `version` first, two-space indent, UTF-8, newline."""
    data = to_dict(log)
    ordered = {key: data[key] for key in ("$schema", "version") if key in data}
    ordered.update((key, value) for key, value in data.items() if key not in ordered)
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
