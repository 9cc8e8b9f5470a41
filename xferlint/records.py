"""`dataclass`: the standard decorator, with one compiled method per class instead of six.

A check creates ~50 dataclasses at import, and the standard decorator compiles each of
their generated methods with its own `exec` (`__init__`, `__repr__`, `__eq__`, `__hash__`,
and a frozen class's `__setattr__` and `__delattr__`; four more with `order=True`): ~0.8 ms
a class, 40 ms of a one-file check's start-up. This decorator lets `dataclasses` do
everything but the methods (the fields, `__dataclass_fields__`, slots, `__match_args__`),
compiles `__init__` alone, the same source the standard decorator writes, so building an
instance costs the same, and gives the other methods as closures over the class's fields,
which behave as the generated ones do (`tests/test_records.py` compares them).

The classes are real dataclasses: `dataclasses.fields`, `replace`, `asdict` and
`is_dataclass` work, and so do pickling and `xferlint.frozen`. Two differences, both
unseen by the project: `__dataclass_params__` records the options the standard decorator
was asked for (no `repr`, `eq`, `order` or `frozen`: it made none of those methods), and a
class mixing these bases with standard frozen dataclasses is made by the standard
decorator whole. So are the cases the short path does not cover (`__post_init__`,
`InitVar`, `ClassVar`, fields outside `__init__`, `unsafe_hash`, a field named `self`).
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
from dataclasses import MISSING, FrozenInstanceError, fields
from typing import Any, Callable

_OURS = "__xferlint_record__"  # set on the classes made here: their bases need no fallback
_ORDER = {"__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt, "__ge__": operator.ge}


class _Factory:
    """The default of a field with a default factory in `__init__`'s signature (the
    standard decorator's sentinel prints the same, so a generated docstring matches)."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _Factory()


def dataclass(cls: type | None = None, /, *, init: bool = True, repr: bool = True,
              eq: bool = True, order: bool = False, unsafe_hash: bool = False,
              frozen: bool = False, **options: Any) -> Any:
    """`dataclasses.dataclass`, same arguments, same classes, made faster (module docstring)."""
    def wrap(cls: type) -> type:
        if not _short_path_fits(cls, init, order, unsafe_hash, frozen):
            return dataclasses.dataclass(cls, init=init, repr=repr, eq=eq, order=order,
                                         unsafe_hash=unsafe_hash, frozen=frozen, **options)
        return _make(cls, init, repr, eq, order, frozen, options)
    return wrap if cls is None else wrap(cls)


def _short_path_fits(cls: type, init: bool, order: bool, unsafe_hash: bool, frozen: bool) -> bool:
    """Whether `_make` covers the class; the rest goes to the standard decorator, which
    also raises the errors (a frozen class defining `__setattr__`, ...)."""
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    theirs = any(dataclasses.is_dataclass(base) and not base.__dict__.get(_OURS)
                 for base in cls.__mro__[1:])
    pseudo = any("ClassVar" in str(hint) or "InitVar" in str(hint) for hint in annotations.values())
    outside_init = any(isinstance(value, dataclasses.Field) and not value.init
                       for value in own.values())
    conflicts = (order and any(name in own for name in _ORDER)) or (
        frozen and ("__setattr__" in own or "__delattr__" in own))
    return not (theirs or pseudo or outside_init or conflicts or unsafe_hash
                or "self" in annotations or hasattr(cls, "__post_init__"))


def _make(cls: type, init: bool, repr: bool, eq: bool, order: bool, frozen: bool,
          options: dict) -> type:
    """The standard decorator asked for no methods, then the methods."""
    own = dict(cls.__dict__)  # before the decorator adds to it (or replaces the class)
    made = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False, **options)
    spec = fields(made)
    methods: dict[str, Callable] = {}
    if init:
        methods["__init__"] = _init(made, spec, frozen)
    if repr:
        methods["__repr__"] = _repr([f.name for f in spec if f.repr])
    if eq:
        compared = _key([f.name for f in spec if f.compare])
        methods["__eq__"] = _compare(operator.eq, compared)
        methods.update((name, _compare(op, compared)) for name, op in _ORDER.items() if order)
        methods.update(_hash(own, frozen, [f.name for f in spec
                                            if (f.compare if f.hash is None else f.hash)]))
    if frozen:
        methods.update(_frozen(made, {f.name for f in spec}, options.get("slots", False)))
    for name, method in methods.items():
        if name not in own or name == "__hash__":  # the decorator's rule: never replace
            if callable(method):
                method.__qualname__ = f"{made.__qualname__}.{name}"
            setattr(made, name, method)
    setattr(made, _OURS, True)
    if not own.get("__doc__") and init:  # the standard decorator's docstring, now
        made.__doc__ = made.__name__ + str(_signature(made)).replace(" -> None", "")
    return made


def _init(cls: type, spec: tuple, frozen: bool) -> Callable:
    """`__init__`, compiled from the source the standard decorator writes (same cost per
    instance): each field set through `object.__setattr__` where the class is frozen."""
    env: dict[str, Any] = {"__name__": cls.__module__, "_object": object,
                           "_HAS_FACTORY": _HAS_FACTORY}
    positional, keyword, body = [], [], []
    for f in spec:
        value, param = f.name, f.name
        if f.default is not MISSING:
            env[f"_dflt_{f.name}"] = f.default
            param = f"{f.name}=_dflt_{f.name}"
        elif f.default_factory is not MISSING:
            env[f"_dflt_{f.name}"] = f.default_factory
            param = f"{f.name}=_HAS_FACTORY"
            value = f"_dflt_{f.name}() if {f.name} is _HAS_FACTORY else {f.name}"
        (keyword if f.kw_only else positional).append(param)
        body.append(f"_object.__setattr__(self, {f.name!r}, {value})" if frozen
                    else f"self.{f.name} = {value}")
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({params}):\n " + ("\n ".join(body) or "pass") + "\n"
    exec(source, env)  # noqa: S102 - generated from the class's own field names
    function = env["__init__"]
    function.__annotations__ = {**{f.name: f.type for f in spec}, "return": None}
    return function


def _repr(names: list[str]) -> Callable:
    """`Class(a=1, b='x')`, fields with `repr=True`; `...` for an object inside itself."""
    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"
    return __repr__


def _key(names: list[str]) -> Callable[[Any], tuple]:
    """The tuple of the named fields' values, as the generated methods compare and hash it
    (a tuple even of one field: `(x,) == (x,)` holds for a NaN, `x == x` does not)."""
    if not names:
        return lambda obj: ()
    get = operator.attrgetter(*names)
    return get if len(names) > 1 else lambda obj: (get(obj),)


def _compare(op: Callable[[Any, Any], Any], key: Callable[[Any], tuple]) -> Callable:
    """`__eq__` (or `__lt__`, ...): the field tuples compared, for two of the same class."""
    def compare(self, other):
        if other.__class__ is self.__class__:
            return op(key(self), key(other))
        return NotImplemented
    return compare


def _hash(own: dict, frozen: bool, names: list[str]) -> dict[str, Any]:
    """`__hash__` as the standard decorator sets it beside `__eq__`: a class's own kept,
    the field tuple's hash for a frozen class, unhashable otherwise."""
    explicit = own.get("__hash__", MISSING)
    if not (explicit is MISSING or (explicit is None and "__eq__" in own)):
        return {}
    if not frozen:
        return {"__hash__": None}
    key = _key(names)
    return {"__hash__": lambda self: hash(key(self))}


def _frozen(cls: type, names: set[str], slotted: bool) -> dict[str, Callable]:
    """The frozen class's `__setattr__` and `__delattr__` (and, slotted, the pickling
    state the standard decorator adds, which sets the slots past `__setattr__`)."""
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    methods = {"__setattr__": __setattr__, "__delattr__": __delattr__}
    if slotted:
        methods.update(__getstate__=_getstate, __setstate__=_setstate)
    return methods


def _getstate(self) -> list:
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self, state: list) -> None:
    for f, value in zip(fields(self), state):
        object.__setattr__(self, f.name, value)  # frozen: plain assignment raises


def _signature(cls: type) -> Any:
    """`inspect.signature(cls)` (`dataclasses` has imported inspect already)."""
    import inspect

    try:
        return inspect.signature(cls)
    except (TypeError, ValueError):
        return ""
