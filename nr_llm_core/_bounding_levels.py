"""The walk by levels: a long list copied and charged a level at a time, in C passes per level."""

from __future__ import annotations

import enum
import json
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import reduce
from itertools import chain, compress, repeat
from typing import Any, Final

import attrs

from nr_llm_core._bounds import (
    _TOO_LARGE,
    _UNENCODABLE,
    INT_MAX,
    INT_MIN,
    MAX_ARTIFACT_BYTES,
    MAX_ARTIFACT_DEPTH,
    _dict_charge,
    coerce_utf8,
    read_str,
)

__all__ = ["_walk_levels"]


def _walk_levels(root: object, depth: int, budget: int, texts: list[str]) -> tuple[Any, int]:
    """Copy ``root`` (a container at nesting level ``depth``) into plain JSON values, as
    :func:`nr_llm_core.bounding._walk` does.

    Returns the copy and what is left of the byte budget; the text of its strings and keys goes
    to ``texts``. Raises ``_Refused``. The walk goes level by level: every container of a level
    is charged before any is copied, and the values they hold are then read together, in a few
    passes in C over all of them (their types, the strings' lengths, the numbers' range and
    size), so that the Python work is per level and per nested container, not per scalar.
    """
    holder: list[Any] = [None]
    level = _Level([root], [holder], [0])
    while level.nodes:
        if depth > MAX_ARTIFACT_DEPTH:
            raise _UNENCODABLE
        level, budget = _copy_level(level, budget, texts)
        depth += 1
    return holder[0], budget


@attrs.define
class _Level:
    """Containers of one nesting level, and where each one's copy goes
    (``parents[i][keys[i]]``)."""

    nodes: list[Any] = attrs.field(factory=list)
    parents: list[Any] = attrs.field(factory=list)
    keys: list[Any] = attrs.field(factory=list)

    def add(self, node: Any, parent: Any, key: Any) -> None:
        self.nodes.append(node)
        self.parents.append(parent)
        self.keys.append(key)


@attrs.define
class _Copies:
    """The copies of one level's containers, and where each goes: ``lists``; ``dicts`` whose
    keys are all exact, valid strings (``keys``: all their keys, in order); ``odd`` dicts,
    filled entry by entry from ``pairs`` (a dict subclass, or keys to read one by one)."""

    lists: list[list[Any]] = attrs.field(factory=list)
    list_at: _Level = attrs.field(factory=_Level)
    dicts: list[dict[str, Any]] = attrs.field(factory=list)
    dict_at: _Level = attrs.field(factory=_Level)
    keys: list[str] = attrs.field(factory=list)
    odd: list[dict[str, Any]] = attrs.field(factory=list)
    odd_at: _Level = attrs.field(factory=_Level)
    pairs: list[list[tuple[Any, Any]]] = attrs.field(factory=list)

    def place(self) -> None:
        """Put every copy in its parent's copy (setitem over three lists, in C)."""
        any(map(operator.setitem, self.list_at.parents, self.list_at.keys, self.lists))
        any(map(operator.setitem, self.dict_at.parents, self.dict_at.keys, self.dicts))
        any(map(operator.setitem, self.odd_at.parents, self.odd_at.keys, self.odd))

    def values(self) -> list[Any]:
        """The values the copies hold: the lists' items, the dicts' values, the odd dicts'."""
        values: list[Any] = reduce(operator.iadd, self.lists, [])
        values += chain.from_iterable(map(dict.values, self.dicts))
        values += chain.from_iterable(map(dict.values, self.odd))
        return values

    def owners(self) -> tuple[Iterator[Any], Iterator[Any]]:
        """The parent copy and the key of each value of :meth:`values`, in its order (built
        in C: each copy repeated once per value it holds; a list's indexes, a dict's keys)."""
        list_lengths = list(map(len, self.lists))
        parents = chain(
            chain.from_iterable(map(repeat, self.lists, list_lengths)),
            chain.from_iterable(map(repeat, self.dicts, map(len, self.dicts))),
            chain.from_iterable(map(repeat, self.odd, map(len, self.odd))),
        )
        keys = chain(
            chain.from_iterable(map(range, list_lengths)),
            self.keys,
            chain.from_iterable(self.odd),
        )
        return parents, keys


#: The exact types of the values a level reads in bulk; every other value is read on its own.
_SCALAR_TYPES: Final = frozenset({str, int, float, bool, type(None)})
_CONTAINER_TYPES: Final = frozenset({list, dict})
_BULK_TYPES: Final = _SCALAR_TYPES | _CONTAINER_TYPES
#: Measures flat lists of exact ints, floats, bools and None (never anything else): the size of
#: a number is the length of what the encoder writes for it, and a NaN or an infinity is what
#: it refuses.
_NUMBERS: Final = json.JSONEncoder(allow_nan=False, check_circular=False, separators=(",", ":"))
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)


def _not_measured(value: object) -> Any:
    raise TypeError  # pragma: no cover (only exact numbers, bools and None are measured)


if _c_make_encoder is not None:
    # The same C encoder, called without JSONEncoder.encode's per-call set-up (a level reads
    # a few columns of numbers each; no containers: nothing to guard against recursion).
    _measure = _c_make_encoder(
        None,
        _not_measured,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        False,
    )

    def _written(numbers: Sequence[Any]) -> int:
        """How many characters the encoder writes for the list ``numbers``."""
        return sum(map(len, _measure(numbers, 0)))

else:  # pragma: no cover (CPython without its C accelerator)

    def _written(numbers: Sequence[Any]) -> int:
        """How many characters the encoder writes for the list ``numbers``."""
        return len(_NUMBERS.encode(numbers))


def _copy_level(level: _Level, budget: int, texts: list[str]) -> tuple[_Level, int]:
    """Charge and copy the containers of ``level``; charge and check the scalars they hold;
    return the containers they hold (the next level) and the budget left."""
    copies = _Copies()
    budget = _copy_containers(level, copies, budget, texts)
    copies.place()
    nested = _Level()
    rest = _Copies(odd=copies.odd)
    lists = copies.lists
    lengths = list(map(len, lists))
    if _is_table(lists, lengths):
        # Rows of one length: read column by column (slices of their items, in C), each
        # column usually of one type.
        width = lengths[0]
        items = list(chain.from_iterable(lists))
        for index in range(width):
            column = items[index::width]
            budget = _read_values(column, _column(lists, index), nested, budget, texts)
    else:
        rest.lists = lists
    dicts = copies.dicts
    lengths = list(map(len, dicts))
    width = lengths[0] if dicts else 0
    if _is_table(dicts, lengths) and copies.keys == copies.keys[:width] * len(dicts):
        # Records with the same keys in the same order: read key by key.
        items = list(chain.from_iterable(map(dict.values, dicts)))
        for index, key in enumerate(copies.keys[:width]):
            column = items[index::width]
            budget = _read_values(column, _column(dicts, key), nested, budget, texts)
    else:
        rest.dicts, rest.keys = dicts, copies.keys
    if rest.lists or rest.dicts or rest.odd:
        budget = _read_values(rest.values(), rest.owners, nested, budget, texts)
    return _read_others(nested, budget, texts)


#: The fewest containers of one shape that a level reads column by column.
_MIN_ROWS: Final = 16


def _is_table(containers: list[Any], lengths: list[int]) -> bool:
    """Whether ``containers`` (of one kind) are rows of one length, at least as many rows as
    columns: then a column's Python work is shared by enough values."""
    return (
        len(containers) >= _MIN_ROWS
        and 0 < lengths[0] <= len(containers)
        and lengths.count(lengths[0]) == len(lengths)
    )


_Owners = Callable[[], tuple[Iterable[Any], Iterable[Any]]]


def _column(parents: list[Any], key: Any) -> _Owners:
    """The owners of a column: every parent, each at ``key``."""
    return lambda: (parents, repeat(key, len(parents)))


def _masked(owners: _Owners, mask: list[bool]) -> _Owners:
    """The owners of the values ``mask`` selects."""

    def selected() -> tuple[Iterable[Any], Iterable[Any]]:
        parents, keys = owners()
        return compress(parents, mask), compress(keys, mask)

    return selected


def _read_values(
    values: Sequence[Any], owners: _Owners, nested: _Level, budget: int, texts: list[str]
) -> int:
    """Charge and check the exact scalars among ``values`` (each held by its parent copy at its
    key, as ``owners`` tells); every other value goes to ``nested``, the next level."""
    types = list(map(type, values))
    # One type (a column of a table, usually): counted, faster than a set of them all.
    kinds = {types[0]} if types and types.count(types[0]) == len(types) else set(types)
    if kinds <= _SCALAR_TYPES:
        return _charge_scalars(values, kinds, owners, budget, texts)
    parents, keys = owners()
    if len(kinds) == 1:  # one type, not a scalar one: all of them go on
        nested.nodes += values
        nested.parents += parents
        nested.keys += keys
        return budget
    nested_mask = list(map(operator.not_, map(_SCALAR_TYPES.__contains__, types)))
    nested.nodes += compress(values, nested_mask)
    nested.parents += compress(parents, nested_mask)
    nested.keys += compress(keys, nested_mask)
    kinds &= _SCALAR_TYPES
    if not kinds:
        return budget
    scalar_mask = list(map(operator.not_, nested_mask))
    scalars = list(compress(values, scalar_mask))
    return _charge_scalars(scalars, kinds, _masked(owners, scalar_mask), budget, texts)


def _copy_containers(level: _Level, copies: _Copies, budget: int, texts: list[str]) -> int:
    """Charge and copy each container of ``level`` into ``copies``; dict keys are charged and
    their text goes to ``texts``."""
    nodes = level.nodes
    types = list(map(type, nodes))
    kinds = set(types)
    lists: list[list[Any]] = []
    dicts: list[dict[Any, Any]] = []
    if kinds == {list}:
        lists, copies.list_at = nodes, level
    elif kinds == {dict}:
        dicts, copies.dict_at = nodes, level
    elif kinds == _CONTAINER_TYPES:  # rows holding both: split in C
        is_list = list(map(operator.is_, types, repeat(list)))
        is_dict = list(map(operator.not_, is_list))
        lists = list(compress(nodes, is_list))
        dicts = list(compress(nodes, is_dict))
        for at, mask in ((copies.list_at, is_list), (copies.dict_at, is_dict)):
            at.parents = list(compress(level.parents, mask))
            at.keys = list(compress(level.keys, mask))
    else:
        budget = _odd_nodes(level, copies, dicts, budget)
    if lists:
        # Refused before anything is copied; charged on the copies (another thread could
        # change a list in between: what is charged is what was copied).
        _charge_lists(lists, budget)
        copies.lists = list(map(list.copy, lists))
        budget = _charge_lists(copies.lists, budget)
    if dicts:
        budget = _plain_dicts(dicts, copies, budget, texts)
    for copy, pairs in zip(copies.odd, copies.pairs, strict=True):
        budget = _odd_dict(copy, pairs, budget, texts)
    return budget


def _odd_nodes(level: _Level, copies: _Copies, dicts: list[dict[Any, Any]], budget: int) -> int:
    """Sort a level holding tuples or subclasses, one container at a time: exact lists are
    charged and copied, exact dicts go to ``dicts``; a dict subclass is charged and its
    entries read through ``dict``; a tuple, or a list or tuple subclass, has its items read
    through its base type once its length is charged."""
    for node, parent, key in zip(level.nodes, level.parents, level.keys, strict=True):
        t = type(node)
        if t is dict:
            dicts.append(node)
            copies.dict_at.add(node, parent, key)
            continue
        if issubclass(t, dict):
            budget -= _dict_charge(dict.__len__(node))
            if budget < 0:
                raise _TOO_LARGE
            copies.odd.append({})
            copies.pairs.append(list(dict.items(node)))
            copies.odd_at.add(node, parent, key)
            continue
        base: Any = list if issubclass(t, list) else tuple
        if 2 * base.__len__(node) > budget:  # refused before anything is read
            raise _TOO_LARGE
        items = list(base.__iter__(node))
        budget = _charge_lists([items], budget)
        copies.lists.append(items)
        copies.list_at.add(node, parent, key)
    return budget


def _charge_lists(lists: list[list[Any]], budget: int) -> int:
    """Charge lists before they are copied: `0,` per item, or `]` when empty."""
    lengths = list(map(len, lists))
    budget -= 2 * sum(lengths) + lengths.count(0)
    if budget < 0:
        raise _TOO_LARGE
    return budget


def _charge_dicts(dicts: list[dict[Any, Any]], budget: int) -> int:
    """Charge dicts: `"":0,` per entry, or `}` when empty (their keys' text is charged on its
    own)."""
    lengths = list(map(len, dicts))
    budget -= 5 * sum(lengths) + lengths.count(0)
    if budget < 0:
        raise _TOO_LARGE
    return budget


def _plain_dicts(
    dicts: list[dict[Any, Any]], copies: _Copies, budget: int, texts: list[str]
) -> int:
    """Charge exact dicts and their keys, and copy them. When their keys are all exact strings
    and valid UTF-8 (none can then collide with another once coerced), the dicts are copied
    whole; otherwise they are read entry by entry, as ``odd`` dicts."""
    _charge_dicts(dicts, budget)  # refused before anything is copied
    copied = list(map(dict.copy, dicts))
    budget = _charge_dicts(copied, budget)  # charged on the copies, as lists are
    keys = list(chain.from_iterable(copied))
    if set(map(type, keys)) <= {str}:
        chars = sum(map(len, keys))
        if budget < chars:
            raise _TOO_LARGE
        joined = "".join(keys)  # pragma: no mutate (as in _text_excess)
        if joined.isascii() or _valid_utf8(joined):
            texts.append(joined)
            copies.dicts = copied
            copies.keys = keys
            return budget - chars
    at = copies.dict_at
    for node, parent, key in zip(copied, at.parents, at.keys, strict=True):
        copies.odd.append({})
        copies.pairs.append(list(node.items()))
        copies.odd_at.add(node, parent, key)
    copies.dict_at = _Level()
    return budget


def _valid_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _odd_dict(
    copy: dict[str, Any], pairs: list[tuple[Any, Any]], budget: int, texts: list[str]
) -> int:
    """Fill ``copy`` (its entries already charged) with ``pairs``, whose keys are read through
    ``str`` and coerced one by one: a key that is not a string, or that collides with another
    once coerced, refuses the whole list. The values are read with the level's."""
    for raw_key, value in pairs:
        key = read_str(raw_key, MAX_ARTIFACT_BYTES + 1)
        if key is None:
            raise _UNENCODABLE
        budget -= len(key)
        if budget < 0:
            raise _TOO_LARGE
        key = coerce_utf8(key)
        if key in copy:
            raise _UNENCODABLE
        texts.append(key)
        copy[key] = value
    return budget


def _charge_scalars(
    values: Sequence[Any], kinds: set[type], owners: _Owners, budget: int, texts: list[str]
) -> int:
    """Charge and check exact strings, ints, floats, bools and nulls (``kinds``: which of them
    are there; ``owners``: where each is held): strings their quote and one byte per code point
    (their text goes to ``texts``; one that is not valid UTF-8 is replaced in its parent's copy
    by its coerced copy), the others the rest of what the encoder writes for them (64-bit ints
    and finite floats only)."""
    others = values
    if str in kinds:
        is_str = None if len(kinds) == 1 else list(map(str.__instancecheck__, values))
        strings = values if is_str is None else list(compress(values, is_str))
        budget -= sum(map(len, strings)) + len(strings)
        if budget < 0:
            raise _TOO_LARGE
        joined = "".join(strings)  # pragma: no mutate (as in _text_excess)
        if not (joined.isascii() or _valid_utf8(joined)):
            joined = _coerce_in_place(
                strings, owners if is_str is None else _masked(owners, is_str)
            )
        texts.append(joined)
        if is_str is None:
            return budget
        others = list(compress(values, map(operator.not_, is_str)))
    if kinds <= _WORDS:  # true, false, null: the letters after the first
        # (only bools and None here: ``count(False)`` finds exactly the falses)
        return _charge(budget - 3 * len(others) - others.count(False))
    if int in kinds:
        ints = others if len(kinds) == 1 else [v for v in others if type(v) is int]
        if min(ints) < INT_MIN or max(ints) > INT_MAX:  # before any is written out
            raise _UNENCODABLE
    try:
        written = _written(others)
    except ValueError:  # a NaN or an infinity
        raise _UNENCODABLE from None
    # What the values add, less the byte each has charged: the brackets, the commas, and one
    # byte per value come off.
    return _charge(budget - (written - 1 - 2 * len(others)))


_WORDS: Final = frozenset({bool, type(None)})


def _charge(budget: int) -> int:
    """``budget``, unless it is spent."""
    if budget < 0:
        raise _TOO_LARGE
    return budget


def _coerce_in_place(strings: Sequence[str], owners: _Owners) -> str:
    """Replace each string that is not valid UTF-8 by its coerced copy, in its parent (as
    ``owners`` tells); the joined text of them all."""
    parents, keys = owners()
    coerced = []
    for text, parent, key in zip(strings, parents, keys, strict=False):
        valid = coerce_utf8(text)
        if valid is not text:
            parent[key] = valid
        coerced.append(valid)
    return "".join(coerced)  # pragma: no mutate (as in _text_excess)


def _read_others(nested: _Level, budget: int, texts: list[str]) -> tuple[_Level, int]:
    """Of the values that are not exact scalars: exact lists and dicts go to the next level as
    they are; a subclass of str, int or float is read through its base type's slots (charged
    as the base type is) and put in its parent's copy; tuples and subclasses of list, tuple
    and dict go to the next level too, which reads them through their base; enums and every
    other type refuse the list."""
    if set(map(type, nested.nodes)) <= _CONTAINER_TYPES:
        return nested, budget
    after = _Level()
    for value, parent, key in zip(nested.nodes, nested.parents, nested.keys, strict=True):
        t = type(value)
        if t is list or t is dict:
            after.add(value, parent, key)
        elif issubclass(t, enum.Enum):
            raise _UNENCODABLE
        elif issubclass(t, str):
            size = str.__len__(value)
            budget -= size + 1
            if budget < 0:  # before anything is copied (as _walk_other)
                raise _TOO_LARGE
            text = coerce_utf8(str.__getitem__(value, slice(0, size)))
            texts.append(text)
            parent[key] = text
        elif issubclass(t, int):
            if int.bit_length(value) > 64:  # refused before a huge one is copied
                raise _UNENCODABLE
            number = int.__index__(value)
            if not INT_MIN <= number <= INT_MAX:
                raise _UNENCODABLE
            budget -= len(int.__repr__(number)) - 1
            parent[key] = number
        elif issubclass(t, float):
            real = float.__float__(value)
            if not math.isfinite(real):
                raise _UNENCODABLE
            budget -= len(float.__repr__(real)) - 1
            parent[key] = real
        elif issubclass(t, (dict, list, tuple)):
            after.add(value, parent, key)
        else:
            raise _UNENCODABLE
    if budget < 0:
        raise _TOO_LARGE
    return after, budget
