"""`dataclass`: the standard decorator, its methods compiled when first called.

A check creates ~50 dataclasses at import, and the standard decorator compiles each of
their generated methods with its own `exec` (`__init__`, `__repr__`, `__eq__`, `__hash__`,
and a frozen class's `__setattr__` and `__delattr__`; four more with `order=True`): ~0.8 ms
a class, 40 ms of a one-file check's start-up, for methods most classes never run in that
check. This decorator lets `dataclasses` do everything but the methods (the fields,
`__dataclass_fields__`, slots, `__match_args__`) and adds them itself: `__init__`, the
comparisons and `__hash__` from the source the standard decorator writes, compiled at their
first call (then the same cost per call), `__repr__` and the frozen `__setattr__` and
`__delattr__` as closures (no call is hot). `tests/test_records.py` compares the classes.

The classes are real dataclasses: `dataclasses.fields`, `replace`, `asdict` and
`is_dataclass` work, and so do pickling and `xferlint.frozen`. The differences, all unseen
by the project: `__dataclass_params__` records the options the standard decorator was
asked for (no `repr`, `eq`, `order` or `frozen`: it made none of those methods), and a
class mixing these bases with standard frozen dataclasses is made by the standard
decorator whole; `inspect.signature(cls)` shows `(*args, **kwargs)` until the first
instance. The standard decorator also makes the classes the short path does not cover
(`__post_init__`, `InitVar`, `ClassVar`, fields outside `__init__`, `unsafe_hash`, a field
named `self`).
"""

from __future__ import annotations

import dataclasses
import reprlib
from dataclasses import MISSING, FrozenInstanceError, fields
from functools import partial
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, Callable

_OURS = "__xferlint_record__"  # set on the classes made here: their bases need no fallback
_ORDER = {"__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}


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
    compared = tuple(f.name for f in spec if f.compare)
    eager = not own.get("__doc__")  # the docstring to write shows `__init__`'s signature
    methods: dict[str, Any] = {}  # a partial: source to compile (`first_call`)
    if init:
        methods["__init__"] = partial(_init, spec, frozen)
    if repr:
        methods["__repr__"] = _repr([f.name for f in spec if f.repr])
    if eq:
        methods["__eq__"] = partial(_compare, "==", compared)
        methods.update((name, partial(_compare, op, compared)) for name, op in _ORDER.items() if order)
        methods.update(_hash(own, frozen, [f.name for f in spec
                                            if (f.compare if f.hash is None else f.hash)]))
    if frozen:
        methods.update(_frozen(made, {f.name for f in spec}, options.get("slots", False)))
    for name, method in methods.items():
        if name not in own or name == "__hash__":  # the decorator's rule: never replace
            if isinstance(method, partial):
                method = (method(made, name) if eager and name == "__init__"
                          else _on_first_call(made, name, method))
            if callable(method) and method not in _SHARED:  # each class's own function: named for it
                method.__qualname__ = f"{made.__qualname__}.{name}"
            setattr(made, name, method)
    setattr(made, _OURS, True)
    if eager and init:  # the standard decorator's docstring
        made.__doc__ = made.__name__ + str(_signature(made)).replace(" -> None", "")
    return made


def _on_first_call(cls: type, name: str, compile_method: Callable[[type, str], Callable]) -> Callable:
    """A method that compiles the real one at its first call, puts it on the class in its
    place and hands over to it: half the classes a check imports never build an instance
    in a run, more never compare or hash one (they serve other commands, formats and
    frontends). Until then `inspect.signature(cls)` shows `(*args, **kwargs)`."""
    def first_call(self, *args, **kwargs):
        method = compile_method(cls, name)
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        type.__setattr__(cls, name, method)
        return method(self, *args, **kwargs)
    return first_call


def _compiled(cls: type, name: str, params: str, body: list[str], env: dict[str, Any]) -> Callable:
    """Function `name` of `cls`, compiled from its source."""
    source = f"def {name}({params}):\n " + "\n ".join(body) + "\n"
    env["__name__"] = cls.__module__
    exec(source, env)  # noqa: S102 - generated from the class's own field names
    return env[name]


def _init(spec: tuple, frozen: bool, cls: type, name: str) -> Callable:
    """`__init__`, the source the standard decorator writes (same cost per instance): each
    field set through `object.__setattr__` where the class is frozen."""
    env: dict[str, Any] = {"_object": object, "_HAS_FACTORY": _HAS_FACTORY}
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
    function = _compiled(cls, name, params, body or ["pass"], env)
    function.__annotations__ = {**{f.name: f.type for f in spec}, "return": None}
    return function


def _compare(op: str, names: tuple[str, ...], cls: type, name: str) -> Callable:
    """`__eq__` (or `__lt__`, ...) as the standard decorator writes it: the tuples of the
    compared fields (a tuple even of one: `(x,) == (x,)` holds for a NaN, `x == x` does not)."""
    mine, theirs = _fields_tuple("self", names), _fields_tuple("other", names)
    return _compiled(cls, name, "self, other", [
        "if other.__class__ is self.__class__:", f" return {mine} {op} {theirs}",
        "return NotImplemented"], {})


def _fields_tuple(obj: str, names: tuple[str, ...]) -> str:
    return "(" + "".join(f"{obj}.{name}," for name in names) + ")"


def _repr(names: list[str]) -> Callable:
    """`Class(a=1, b='x')`, fields with `repr=True`; `...` for an object inside itself."""
    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"
    return __repr__


def _hash(own: dict, frozen: bool, names: list[str]) -> dict[str, Any]:
    """`__hash__` as the standard decorator sets it beside `__eq__`: a class's own kept,
    the hash of the field tuple for a frozen class, unhashable otherwise."""
    explicit = own.get("__hash__", MISSING)
    if not (explicit is MISSING or (explicit is None and "__eq__" in own)):
        return {}
    if not frozen:
        return {"__hash__": None}
    return {"__hash__": partial(_hashed, tuple(names))}


def _hashed(names: tuple[str, ...], cls: type, name: str) -> Callable:
    return _compiled(cls, name, "self", [f"return hash({_fields_tuple('self', names)})"], {})


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
        methods.update(__getstate__=_getstate, __setstate__=_setstate, __reduce__=_reduce)
    return methods


def _getstate(self) -> list:
    return [getattr(self, name) for name in field_names(type(self))]


def _setstate(self, state: list) -> None:
    setter = object.__setattr__  # frozen: plain assignment raises
    for name, value in zip(field_names(type(self)), state):
        setter(self, name, value)


def _reduce(self) -> tuple:
    """How pickle and copy rebuild a frozen slotted instance: `_rebuild(cls, values)`, the
    values read in one C call. What the standard decorator's `__getstate__` and
    `__setstate__` do (kept for callers of those), at about half the cost each way: a
    worker's results are tens of thousands of findings and steps, unpickled one after
    another in the parent."""
    cls = type(self)
    values = _VALUES.get(cls)
    if values is None:
        values = _VALUES[cls] = _values_of(field_names(cls))
    return _rebuild, (cls, values(self))


def _values_of(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    if len(names) > 1:
        return attrgetter(*names)  # a tuple, in one C call
    if names:
        return lambda obj: (getattr(obj, names[0]),)
    return lambda obj: ()


def _rebuild(cls: type, values: tuple) -> Any:
    """An instance of frozen slotted `cls` with its fields' `values`, in order, each set
    through its slot (straight-line code compiled once per class)."""
    build = _BUILDERS.get(cls)
    if build is None:
        build = _BUILDERS[cls] = _builder(cls)
    return build(values)


def _builder(cls: type) -> Callable[[tuple], Any]:
    names = field_names(cls)
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = ["obj = _new(_cls)"]
    for k, name in enumerate(names):
        slot = getattr(cls, name, None)
        if type(slot) is MemberDescriptorType:  # set through the slot: past the frozen __setattr__
            env[f"_set{k}"] = slot.__set__
            body.append(f"_set{k}(obj, values[{k}])")
        else:  # a field kept elsewhere (a base class's __dict__)
            env["_setattr"] = object.__setattr__
            body.append(f"_setattr(obj, {name!r}, values[{k}])")
    return _compiled(cls, "_rebuild", "values", [*body, "return obj"], env)


_SHARED = (_getstate, _setstate, _reduce)  # one function for every class: keeps its own name
_VALUES: dict[type, Callable[[Any], tuple]] = {}  # per class: its field values as a tuple
_BUILDERS: dict[type, Callable[[tuple], Any]] = {}  # per class: `_rebuild`'s compiled body


_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """The names of dataclass `cls`'s fields, in order, looked up once per class: the
    standard decorator's pickling state calls `fields()` per object (a worker's results are
    tens of thousands of them), and the JSON writers ask per class too."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _signature(cls: type) -> Any:
    """`inspect.signature(cls)` (`dataclasses` has imported inspect already)."""
    import inspect

    try:
        return inspect.signature(cls)
    except (TypeError, ValueError):
        return ""
