"""Records: dataclasses' behaviour without compiling code when a class is made.

``@dataclass(frozen=True)`` writes the source of six methods for each class and compiles each
one as the class is created: about 3.4 M instructions a class, paid by every start of every
command (the bridge's whole start is about 110 M, and a sync defines some forty records). A
``Record`` subclass gets the same behaviour from methods written once, here: its fields are its
annotations in order (a base record's first), a field's default is the value the class gives
it (``Factory(list)`` for a fresh one per record), it is made with positional or keyword
arguments, compares and hashes by class and field values, has a repr like a dataclass's, and
refuses assignment (``class Survey(Record, frozen=False)`` allows it and is not hashable).
``replace`` and ``fields`` are dataclasses' functions of the same names; tests/core/test_record.py
holds records to what dataclasses do.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    R = TypeVar("R", bound="Record")
else:

    def dataclass_transform(**_: object) -> object:  # typing's marker, for type checkers only
        return lambda cls: cls


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class Factory:
    """A field's default made afresh for each record (dataclasses' ``default_factory``);
    ``compare=False``: equality and hashing leave the field out."""

    __slots__ = ("make", "compare")

    def __init__(self, make: Callable[[], Any], compare: bool = True) -> None:
        self.make = make
        self.compare = compare


def _no_values(record: object) -> tuple[()]:
    return ()


@dataclass_transform(frozen_default=True, field_specifiers=(Factory,))
class Record:
    """A record: subclass it and annotate its fields."""

    _fields: tuple[str, ...] = ()
    _names: frozenset[str] = frozenset()
    _defaults: dict[str, Any] = {}  # noqa: RUF012  (class-level, read only)
    _values: Callable[[Any], Any] = staticmethod(_no_values)  # the compared fields' values

    def __init_subclass__(cls, frozen: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, kind in cls.__dict__.get("__annotations__", {}).items() if not str(kind).startswith("ClassVar")]
        cls._fields = cls._fields + tuple(name for name in own if name not in cls._fields)
        cls._names = frozenset(cls._fields)
        cls._defaults = {**cls._defaults, **{name: cls.__dict__[name] for name in own if name in cls.__dict__}}
        compared = [name for name in cls._fields if getattr(cls._defaults.get(name), "compare", True)]
        cls._values = staticmethod(attrgetter(*compared) if compared else _no_values)
        if frozen:
            cls.__setattr__ = Record._refuse  # type: ignore[assignment,method-assign]
            cls.__delattr__ = Record._refuse  # type: ignore[assignment,method-assign]
        else:
            cls.__setattr__ = object.__setattr__  # type: ignore[assignment,method-assign]
            cls.__delattr__ = object.__delattr__  # type: ignore[assignment,method-assign]
            cls.__hash__ = None  # type: ignore[assignment]  (as a mutable dataclass: equal by value, so not hashable)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = self._fields
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments but {len(args)} were given")
        values = dict(zip(names, args))
        if kwargs:
            if args and not kwargs.keys().isdisjoint(values):
                raise TypeError(f"{type(self).__name__}() got multiple values for an argument")
            values.update(kwargs)
        if len(values) != len(names) or kwargs and not kwargs.keys() <= self._names:
            values = self._completed(values)
        object.__setattr__(self, "__dict__", values)

    def _completed(self, values: dict[str, Any]) -> dict[str, Any]:
        unknown = [name for name in values if name not in self._names]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        missing = [name for name in self._fields if name not in values and name not in self._defaults]
        if missing:
            raise TypeError(f"{type(self).__name__}() missing required argument{'s' if len(missing) > 1 else ''}: "
                            + ", ".join(repr(name) for name in missing))
        for name in self._fields:
            if name not in values:
                default = self._defaults[name]
                values[name] = default.make() if isinstance(default, Factory) else default
        return values

    def _refuse(self, name: str, value: object = None) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._values(self) == self._values(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self._fields)})"


def fields(record: Record | type[Record]) -> tuple[str, ...]:
    """The names of a record's fields, in order."""
    return record._fields


def replace(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes`` (dataclasses.replace)."""
    return type(record)(**{**{name: getattr(record, name) for name in record._fields}, **changes})
