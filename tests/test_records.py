"""`xferlint.records.dataclass` makes the classes `dataclasses.dataclass` makes: the same
fields, signature, docstring, repr, equality, hashing, ordering, immutability and pickling."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import sys
from dataclasses import FrozenInstanceError, field
from typing import ClassVar, Optional

import pytest

from xferlint import records

OPTIONS = [
    dict(frozen=True, slots=True, kw_only=True),
    dict(frozen=True),
    dict(frozen=True, order=True),
    dict(),
    dict(slots=True),
    dict(eq=False),
    dict(repr=False, frozen=True),
]


def _both(body, **options):
    """The class `body` defines, made by the standard decorator and by ours."""
    made = []
    for decorate in (dataclasses.dataclass, records.dataclass):
        cls = body()
        made.append(decorate(**options)(cls))
    return made


def _point():
    class Point:
        """A point."""

        x: int
        y: float = 0.0
        tags: list = field(default_factory=list)
        note: Optional[str] = field(default=None, repr=False, compare=False)
    return Point


def _bare():
    class Bare:
        name: str
        size: int = 1
        parts: tuple = field(default_factory=tuple)
    return Bare


def _empty():
    class Empty:
        """Nothing."""
    return Empty


# Pickling looks classes up by name: the pair made for the pickling test lives here.
Pickled = records.dataclass(frozen=True, slots=True, kw_only=True)(_point())
Pickled.__qualname__ = Pickled.__name__ = "Pickled"


def _instances(cls, kw_only):
    args = [dict(x=1, y=2.5, tags=[1], note="a"), dict(x=1, y=2.5, tags=[1], note="b"),
            dict(x=2, y=float("nan")), dict(x=0)]
    return [cls(**kw) for kw in args]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "plain")
@pytest.mark.parametrize("body", [_point, _bare, _empty])
def test_same_class(body, options):
    theirs, ours = _both(body, **options)
    if body is not _empty:  # the signature is compiled with the first instance
        ours(x=1) if body is _point else ours(name="a")
    else:
        ours()
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert ours.__doc__ == theirs.__doc__
    assert getattr(ours, "__match_args__", None) == getattr(theirs, "__match_args__", None)
    assert getattr(ours, "__slots__", None) == getattr(theirs, "__slots__", None)
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)
    assert dataclasses.is_dataclass(ours)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "plain")
def test_same_behaviour(options):
    theirs, ours = _both(_point, **options)
    a, b = _instances(theirs, options.get("kw_only")), _instances(ours, options.get("kw_only"))
    if options.get("repr", True):
        assert [repr(x) for x in a] == [repr(x) for x in b]
    assert [[x == y for y in a] for x in a] == [[x == y for y in b] for x in b]
    assert [[x != y for y in a] for x in a] == [[x != y for y in b] for x in b]
    assert (a[0] == 1) == (b[0] == 1)
    if options.get("order"):
        for op in ("__lt__", "__le__", "__gt__", "__ge__"):
            assert [[getattr(x, op)(y) for y in a[2:]] for x in a[2:]] == \
                [[getattr(x, op)(y) for y in b[2:]] for x in b[2:]]
    assert dataclasses.asdict(dataclasses.replace(b[0], x=5)) == \
        dataclasses.asdict(dataclasses.replace(a[0], x=5))
    assert dataclasses.asdict(b[0]) == dataclasses.asdict(a[0])


def test_hash_of_a_frozen_class():
    theirs, ours = _both(_bare, frozen=True, slots=True)
    assert hash(theirs("a", 2)) == hash(ours("a", 2))
    assert hash(theirs("a", 2, (1,))) == hash(ours("a", 2, (1,)))


@pytest.mark.parametrize("options", [o for o in OPTIONS if o.get("frozen")],
                         ids=lambda o: ",".join(o))
def test_frozen(options):
    _, ours = _both(_point, **options)
    obj = ours(x=1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'"):
        obj.x = 2
    with pytest.raises(FrozenInstanceError, match="cannot delete field 'y'"):
        del obj.y
    assert obj.x == 1


def test_pickles():
    obj = Pickled(x=1, y=2.0, tags=[3], note="n")
    sys.modules[__name__].Pickled = Pickled
    back = pickle.loads(pickle.dumps(obj))
    assert back == obj and back.note == "n"


One = records.dataclass(frozen=True, slots=True)(type("One", (), {"__annotations__": {"value": int}}))
Nothing = records.dataclass(frozen=True, slots=True)(type("Nothing", (), {}))


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_frozen_slotted_instances_pickle_and_copy_whole(protocol):
    """Every field comes back (nested records, one field, none), by pickle and by copy, and
    the copies stay frozen."""
    import copy

    sys.modules[__name__].Pickled = Pickled
    objects = [Pickled(x=One(7), y=2.0, tags=[Nothing(), One(8)], note="n"), One(3), Nothing()]
    for obj in objects:
        for back in (pickle.loads(pickle.dumps(obj, protocol=protocol)), copy.copy(obj), copy.deepcopy(obj)):
            assert type(back) is type(obj) and back == obj
            assert [getattr(back, f.name) for f in dataclasses.fields(back)] == \
                [getattr(obj, f.name) for f in dataclasses.fields(obj)]
            with pytest.raises(FrozenInstanceError):
                back.value = 1
    deep = copy.deepcopy(objects[0])
    assert deep.tags == objects[0].tags and deep.tags is not objects[0].tags


def test_init_compiled_with_the_first_instance():
    _, ours = _both(_point, frozen=True)
    assert str(inspect.signature(ours)) == "(*args, **kwargs)"
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        ours()
    assert str(inspect.signature(ours)).startswith("(x: 'int', y: 'float' = 0.0")
    assert ours(1).x == 1


def test_subclass_and_own_methods():
    @records.dataclass(frozen=True)
    class Base:
        a: int

        def __repr__(self):
            return "mine"

    @records.dataclass(frozen=True)
    class Child(Base):
        b: int = 2

    assert Child(1) == Child(1, 2) and Child(1) != Base(1)
    assert repr(Child(1)).endswith("Child(a=1, b=2)") and repr(Base(1)) == "mine"
    with pytest.raises(FrozenInstanceError):
        Child(1).b = 3


def test_left_to_the_standard_decorator():
    @records.dataclass
    class WithPost:
        a: int
        b: int = field(init=False, default=0)
        c: ClassVar[int] = 3

        def __post_init__(self):
            self.b = self.a + 1

    assert WithPost(1).b == 2 and [f.name for f in dataclasses.fields(WithPost)] == ["a", "b"]
