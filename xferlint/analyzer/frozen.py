"""Building frozen dataclass instances (the view's Nodes and Values) cheaply.

Frontends build one Node per operation and one Value per value; on programs of 100,000+
of them the dataclass `__init__` of a frozen class is a large share of the frontend.
"""

from __future__ import annotations

from dataclasses import MISSING, fields, replace


class Frozen:
    """Instances of a frozen dataclass without its generated `__init__`, which calls
    `object.__setattr__` once per field (~1.3 us a Value, ~1.9 us a Node: a third of
    a frontend's time on a program of 200,000 values and nodes). The instance's `__dict__` is the one
    `__init__` leaves: every field, in declaration order. Where that shortcut would not hold
    (slots, `__post_init__`, default factories, fields outside `__init__`), the class is called."""

    __slots__ = ("cls", "template", "direct")

    def __init__(self, cls: type) -> None:
        spec = fields(cls)
        self.cls = cls
        self.template = {f.name: f.default for f in spec}
        self.direct = not (hasattr(cls, "__slots__") or hasattr(cls, "__post_init__")
                           or any(not f.init or f.default_factory is not MISSING for f in spec))

    def new(self, **values):
        """`cls(**values)`."""
        return self.of(values)

    def of(self, values: dict):
        """`cls(**values)`, from a dict of the values."""
        if not self.direct:
            return self.cls(**values)
        obj = object.__new__(self.cls)
        state = obj.__dict__
        state.update(self.template)
        state.update(values)
        return obj

    def like(self, proto, **changes):
        """`dataclasses.replace(proto, **changes)`."""
        if not self.direct:
            return replace(proto, **changes)
        obj = object.__new__(self.cls)
        state = obj.__dict__
        state.update(proto.__dict__)
        state.update(changes)
        return obj

    def renamed(self, pairs) -> dict:
        """`{ident: replace(proto, id=ident)}` over `(ident, proto)` pairs, in one loop (a
        method's every value: a call with keywords each cost as much as the object)."""
        if not self.direct:
            return {ident: replace(proto, id=ident) for ident, proto in pairs}
        new, cls = object.__new__, self.cls
        out = {}
        for ident, proto in pairs:
            obj = new(cls)
            state = obj.__dict__
            state.update(proto.__dict__)
            state["id"] = ident  # `id` is already in place (first): the order stays
            out[ident] = obj
        return out
