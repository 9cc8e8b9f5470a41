"""Building frozen dataclass instances cheaply, without their generated `__init__`.

Frontends build one Node per operation and one Value per value, rules a Finding and a few
Steps per finding; on programs of 100,000+ of them the `__init__` of a frozen dataclass,
which calls `object.__setattr__` once per field, is a large share of each stage. Two
tools: `fast_constructor(cls)` for keyword calls (`cls(**kw)`, defaults and slots included),
`Frozen(cls)` for building from a dict of fields, from a prototype (`replace`) and renaming
in batches. Nothing here imports more than the standard library: every stage may use it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, fields, replace
from functools import lru_cache
from typing import Any


class Frozen:
    """Instances of a frozen dataclass without its generated `__init__`, which calls
    `object.__setattr__` once per field (~1.3 us a Value, ~1.9 us a Node: a third of
    a frontend's time on a program of 200,000 values and nodes). A dict-backed instance's
    `__dict__` is the one `__init__` leaves: every field, in declaration order (`direct`);
    a slotted one is filled as its twin (below), by `fast_constructor`'s code and, from a
    prototype, by code generated here (`slotted`). Where neither shortcut holds
    (`__post_init__`, fields outside `__init__`, a dict-backed class with default
    factories), the class is called."""

    __slots__ = ("cls", "template", "direct", "slotted")

    def __init__(self, cls: type) -> None:
        spec = fields(cls)
        self.cls = cls
        self.template = {f.name: f.default for f in spec}
        generated = not (hasattr(cls, "__post_init__") or any(not f.init for f in spec))
        plain = generated and all(f.default_factory is MISSING for f in spec)
        self.direct = plain and not hasattr(cls, "__slots__")
        # a slotted class: (its keyword constructor, its `replace`, its `renamed` loop), built as
        # `fast_constructor` builds (a default factory is called there as `__init__` calls it)
        names = [f.name for f in spec]
        self.slotted = ((fast_constructor(cls), _slotted_like(cls, names), _slotted_renamed(cls, names))
                        if generated and "__slots__" in vars(cls) else None)

    def new(self, **values):
        """`cls(**values)`."""
        return self.of(values)

    def of(self, values: dict):
        """`cls(**values)`, from a dict of the values."""
        if not self.direct:
            return (self.slotted[0] if self.slotted is not None else self.cls)(**values)
        obj = object.__new__(self.cls)
        state = obj.__dict__
        state.update(self.template)
        state.update(values)
        return obj

    def whole(self, values: dict):
        """`cls(**values)`, where `values` names every field in declaration order (the
        dict `__init__` would leave): it becomes the instance's `__dict__` as it is, not
        copied over the defaults (a third of `of`'s cost). The caller hands the dict over."""
        if not self.direct:
            return (self.slotted[0] if self.slotted is not None else self.cls)(**values)
        obj = object.__new__(self.cls)
        object.__setattr__(obj, "__dict__", values)  # frozen: plain assignment raises
        return obj

    def like(self, proto, **changes):
        """`dataclasses.replace(proto, **changes)`."""
        if not self.direct:
            return self.slotted[1](proto, changes) if self.slotted is not None else replace(proto, **changes)
        obj = object.__new__(self.cls)
        state = obj.__dict__
        state.update(proto.__dict__)
        state.update(changes)
        return obj

    def renamed(self, pairs) -> dict:
        """`{ident: replace(proto, id=ident)}` over `(ident, proto)` pairs, in one loop (a
        method's every value: a call with keywords each cost as much as the object). A
        proto that already has its id is taken as it is (immutable: nothing else holds it)."""
        if self.slotted is not None:
            if self.slotted[2] is not None:
                return self.slotted[2](pairs)
            like = self.slotted[1]
            return {ident: like(proto, {"id": ident}) for ident, proto in pairs}
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


def _slotted_like(cls: type, names: list[str]) -> Any:
    """`like(proto, changes)`, `replace(proto, **changes)` for a slotted class: each slot set
    past the frozen `__setattr__` (on its twin, else through its member descriptor), from
    `changes` or `proto`."""
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": _twin(cls)}
    lines = ["def like(proto, changes):", f" obj = _new({_start(env)})"]
    for k, name in enumerate(names):
        lines.append(" " + _store(env, cls, k, name, f"changes[{name!r}] if {name!r} in changes else proto.{name}"))
    exec("\n".join(lines + [_finish(env, " "), " return obj", ""]), env)  # noqa: S102 - generated from the class's own field names
    return env["like"]


def _slotted_renamed(cls: type, names: list[str]) -> Any:
    """`renamed(pairs)` for a slotted class with an `id` field: one generated loop that sets
    each slot of each copy (as `_slotted_like` does), the id from the pair and the rest from
    the prototype (a `like` call per value, with its dict of changes, cost a quarter more:
    200,000 Values in 0.17 s against 0.13 s). A prototype that already has its id is taken
    as it is."""
    if "id" not in names:
        return None
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": _twin(cls)}
    body = ["  " + _store(env, cls, k, name, "ident" if name == "id" else f"proto.{name}")
            for k, name in enumerate(names)]
    lines = ["def renamed(pairs):", " out = {}", " for ident, proto in pairs:", "  if proto.id is ident:",
             "   out[ident] = proto", "   continue", f"  obj = _new({_start(env)})", *body, _finish(env, "  "),
             "  out[ident] = obj", " return out"]
    exec("\n".join(lines + [""]), env)  # noqa: S102 - generated from the class's own field names
    return env["renamed"]


_OWN_NAMES = frozenset({"obj", "state"})  # locals of the code `fast_constructor` generates


def fast_constructor(cls: type) -> Any:
    """A function that builds instances of frozen dataclass `cls` like `cls(**kw)`, fields
    by keyword, defaults the same, without the generated `__init__`'s `object.__setattr__`
    per field: straight-line code that fills a slotted instance as its twin (or, without
    one, through each slot's descriptor), or a dict-backed one's dict as `__init__` leaves
    it (a third of the cost; a check builds a Finding and a few Steps per finding). Classes
    with a `__post_init__` or fields outside `__init__` get `cls` itself."""
    spec = fields(cls)
    # a field named as the generated code's own names would shadow them: the class builds it
    if hasattr(cls, "__post_init__") or any(not f.init or f.name in _OWN_NAMES or f.name.startswith("_")
                                            for f in spec):
        return cls
    slotted = "__slots__" in vars(cls)
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_MISSING": dataclasses.MISSING,
                           "_twin": _twin(cls)}
    params, body = [], [] if slotted else [" state = obj.__dict__"]
    for k, f in enumerate(spec):
        value = f.name
        if f.default is not dataclasses.MISSING:
            env[f"_default{k}"] = f.default
            params.append(f"{f.name}=_default{k}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory{k}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            value = f"_factory{k}() if {f.name} is _MISSING else {f.name}"
        else:
            params.append(f.name)
        body.append(" " + (_store(env, cls, k, f.name, value) if slotted else f"state[{f.name!r}] = {value}"))
    body.append(_finish(env, " "))
    source = f"def new(*, {', '.join(params)}):\n obj = _new({_start(env)})\n" + "\n".join(body) + "\n return obj\n"
    exec(source, env)  # noqa: S102 - generated from the class's own field names
    new = env["new"]
    new.__doc__ = f"`{cls.__name__}(**fields)`, without its generated __init__."
    return new


# -- slotted classes: a twin to fill ------------------------------------------------------
# A frozen slotted instance's slots can only be set through their member descriptors
# (`descriptor.__set__(obj, value)`: a call, ~45 ns, per field; a Node has eleven). An
# instance of a plain class with the same slots takes a store per field instead (the
# interpreter's own slot store, a fifth of that), and CPython lets an object change its
# `__class__` to a class of the same layout: built as the twin, it becomes the frozen class
# (a Node in 330 ns instead of 850). Where the layouts differ (CPython refuses the swap) or
# the bases set attributes their own way, the descriptors are used.


@lru_cache(maxsize=None)
def _twin(cls: type) -> Any:
    """A plain class whose instances have `cls`'s layout and may become `cls`'s, or None;
    one per class, whichever of the generated builders asks."""
    slots = vars(cls).get("__slots__")
    if slots is None or any(base.__setattr__ is not object.__setattr__ for base in cls.__bases__):
        return None
    try:
        twin = type(f"_{cls.__name__}Twin", cls.__bases__,
                    {"__slots__": (slots,) if isinstance(slots, str) else tuple(slots)})
        object.__new__(twin).__class__ = cls  # CPython checks the layouts here
    except TypeError:
        return None
    return twin


def _start(env: dict[str, Any]) -> str:
    """What a generated constructor allocates: the twin, else the class itself."""
    return "_twin" if env["_twin"] is not None else "_cls"


def _store(env: dict[str, Any], cls: type, k: int, name: str, value: str) -> str:
    """The generated statement that sets field `name` (the k-th) of `obj` to `value`."""
    if env["_twin"] is not None:
        return f"obj.{name} = {value}"
    env[f"_set{k}"] = getattr(cls, name).__set__
    return f"_set{k}(obj, {value})"


def _finish(env: dict[str, Any], indent: str) -> str:
    """The generated statement that turns a filled twin into an instance of the class."""
    return f"{indent}obj.__class__ = _cls" if env["_twin"] is not None else f"{indent}pass"
