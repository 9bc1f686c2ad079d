"""Records behave as the frozen dataclasses they replace: each case runs the same class both ways."""

from __future__ import annotations

import dataclasses
import pickle
from functools import cached_property

import pytest

from projector.core.record import Factory, FrozenInstanceError, Record, fields, replace


class Point(Record):
    """A record with a required field, a default and a fresh default."""

    x: int
    y: int = 0
    tags: list[str] = Factory(list)

    @cached_property
    def norm(self) -> int:
        return abs(self.x) + abs(self.y)


@dataclasses.dataclass(frozen=True)
class DataPoint:
    """The dataclass Point stands for."""

    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


@pytest.mark.parametrize("kind", [Point, DataPoint])
def test_a_record_is_made_hashed_compared_and_shown_as_a_frozen_dataclass_is(kind):
    one = kind(1)
    assert (one.x, one.y, one.tags) == (1, 0, [])
    assert kind(1, 2) == kind(x=1, y=2) == kind(1, y=2)
    assert kind(1) != kind(2) and kind(1, tags=["a"]) != kind(1)
    assert hash(kind(1, 2, ())) == hash(kind(x=1, y=2, tags=())) and len({kind(1, 2, ()), kind(1, 2, ())}) == 1
    assert kind(1).tags is not kind(1).tags  # a fresh list each time
    assert repr(kind(1, 2)) == f"{kind.__qualname__}(x=1, y=2, tags=[])"
    with pytest.raises(AttributeError):
        one.x = 5
    with pytest.raises(AttributeError):
        del one.x
    assert one.x == 1


@pytest.mark.parametrize("kind", [Point, DataPoint])
@pytest.mark.parametrize(("args", "kwargs"), [((), {}), ((1, 2, [], 4), {}), ((1,), {"x": 1}), ((1,), {"z": 1})])
def test_wrong_arguments_are_a_type_error_as_for_a_dataclass(kind, args, kwargs):
    with pytest.raises(TypeError):
        kind(*args, **kwargs)


def test_records_of_different_classes_or_other_values_are_not_equal():
    class Other(Record):
        """Same fields as Point."""

        x: int
        y: int = 0
        tags: list[str] = Factory(list)

    assert Point(1) != Other(1) and Point(1) != (1, 0, []) and Point(1) != 1


def test_replace_and_fields_answer_as_dataclasses_do():
    assert fields(Point) == tuple(f.name for f in dataclasses.fields(DataPoint))
    assert replace(Point(1, 2), y=5) == Point(1, 5)
    assert dataclasses.replace(DataPoint(1, 2), y=5) == DataPoint(1, 5)
    with pytest.raises(TypeError):
        replace(Point(1), z=3)


def test_a_cached_property_works_on_a_frozen_record_and_is_not_a_field():
    point = Point(3, -4)
    assert point.norm == 7 and point.norm == 7
    assert point == Point(3, -4) and repr(point) == "Point(x=3, y=-4, tags=[])"
    with pytest.raises(FrozenInstanceError):
        point.norm = 1


def test_a_subclass_adds_fields_after_its_base_and_may_be_mutable():
    class Base(Record, frozen=False):
        """A mutable record."""

        a: int
        seen: dict[str, int] = Factory(dict)

    class Sub(Base, frozen=False):
        """It adds one field."""

        b: int = 2

    record = Sub(1)
    assert fields(Sub) == ("a", "seen", "b") and record == Sub(1, {}, 2)
    record.a = 5
    record.seen["x"] = 1
    assert record == Sub(5, {"x": 1}) and Sub(1).seen == {}
    with pytest.raises(TypeError):
        hash(record)  # equal by value and mutable: not hashable, as a mutable dataclass


def test_a_field_left_out_of_comparison_does_not_count():
    class Cached(Record):
        """``memo`` is not part of its value."""

        key: str
        memo: dict[str, int] = Factory(dict, compare=False)

    assert Cached("a", {"x": 1}) == Cached("a") and hash(Cached("a", {"x": 1})) == hash(Cached("a"))
    assert Cached("a") != Cached("b")


def test_a_record_survives_pickling_and_copying():
    import copy

    point = Point(1, 2, ["t"])
    assert pickle.loads(pickle.dumps(point)) == point
    assert copy.deepcopy(point) == point and copy.copy(point) == point
