"""The walk by columns: a long list copied and charged a column at a time, in C passes."""

from __future__ import annotations

import enum
import json
import operator
from collections.abc import Callable, Sequence
from itertools import chain, compress, cycle, islice, repeat
from typing import Any, Final

from nr_llm_core._bounds import (
    _TOO_LARGE,
    _UNENCODABLE,
    INT_MAX,
    INT_MIN,
    MAX_ARTIFACT_DEPTH,
    _dict_charge,
    all_of,
    coerce_utf8,
    read_key,
)

__all__ = ["OneByOne", "_walk_columns"]

#: The value-by-value walk (``bounding._walk``): copies one value at a nesting level, charges
#: the budget, keeps its text; the walk by columns hands it what it does not read itself.
OneByOne = Callable[[Any, int, int, list[str]], tuple[Any, int]]


def _walk_columns(
    items: list[Any], depth: int, budget: int, texts: list[str], one_by_one: OneByOne
) -> tuple[list[Any], int]:
    """Copy the items of a list into plain JSON values, as :func:`nr_llm_core.bounding._walk`
    does. ``items`` is the list's own copy, already charged (its brackets and a byte and a
    comma per item), at nesting level ``depth``.

    Returns the copy and what is left of the byte budget; the text of its strings and keys goes
    to ``texts``. Raises ``_Refused``. The values are read a column at a time: the items of the
    list, then the values the containers among them hold, either all together or, for rows of
    one length and records with the same keys, position by position (a column of a table,
    usually of one type). Every container of a column is charged before any is copied; the
    scalars of a column are checked and charged together, in a few passes in C (their types,
    the strings' lengths, the numbers' range and what the encoder writes for them), so that
    the Python work is per column, not per value.
    """
    walk = _Columns(budget, texts, one_by_one)
    copied: Any = walk.column(items, depth + 1)  # a list in, a list out
    return copied, walk.budget


#: The exact types of the values a column reads in bulk; every other value is read on its own.
#: Sets of types hold their identities (``id``): a set of the classes would hash them, and a
#: plugin's metaclass can define ``__hash__`` and ``__eq__``. Classes are told apart with ``is``.
_CONTAINER_TYPES: Final = (list, tuple, dict)
_SCALARS: Final = frozenset(map(id, (str, int, float, bool, type(None))))
_BULK: Final = _SCALARS | frozenset(map(id, _CONTAINER_TYPES))
_WORDS: Final = frozenset(map(id, (bool, type(None))))
_STR: Final = id(str)
_INT: Final = id(int)
#: The fewest containers of one shape that are read position by position.
_MIN_ROWS: Final = 16


class _Columns:
    """One walk by columns: the budget left, where the text goes, the value-by-value walk."""

    __slots__ = ("budget", "one_by_one", "texts")

    def __init__(self, budget: int, texts: list[str], one_by_one: OneByOne) -> None:
        self.budget = budget
        self.texts = texts
        self.one_by_one = one_by_one

    def spend(self, size: int) -> None:
        """Charge ``size`` bytes; refuse when the budget is spent."""
        self.budget -= size
        if self.budget < 0:
            raise _TOO_LARGE

    def afford(self, size: int) -> None:
        """Refuse, before anything is copied, what could not fit (nothing is charged)."""
        if size > self.budget:
            raise _TOO_LARGE

    def column(self, values: Sequence[Any], depth: int) -> Sequence[Any]:
        """The copies of ``values`` (not empty; at nesting level ``depth``), in their order:
        ``values`` itself when each is its own copy (exact scalars, valid text)."""
        first = type(values[0])
        if all_of(map(type, values), first):  # one type: a table's column, usually
            if id(first) in _SCALARS:
                return self.scalars(values, {id(first)}, [])
            if first is list or first is tuple or first is dict:
                return self.containers(first, values, depth)
        types = list(map(type, values))
        kinds = set(map(id, types))
        if kinds <= _SCALARS:
            return self.scalars(values, kinds, types)
        return self.mixed(values, types, kinds, depth)

    def mixed(
        self, values: Sequence[Any], types: list[type], kinds: set[int], depth: int
    ) -> list[Any]:
        """A column of several types (``kinds``: their identities), or of types read on their
        own: the scalars together, the exact containers kind by kind, then every other
        value."""
        out = list(values)
        if kinds & _SCALARS:
            mask = list(map(_SCALARS.__contains__, map(id, types)))
            scalars = list(compress(values, mask))
            kept = self.scalars(scalars, kinds & _SCALARS, list(compress(types, mask)))
            if kept is not scalars:
                _put(out, mask, kept)
        for kind in _CONTAINER_TYPES:
            if id(kind) in kinds:
                mask = list(map(operator.is_, types, repeat(kind)))
                _put(out, mask, self.containers(kind, list(compress(values, mask)), depth))
        odd = kinds - _BULK
        if odd:
            mask = list(map(odd.__contains__, map(id, types)))
            _put(out, mask, self.others(list(compress(values, mask)), depth))
        return out

    def containers(self, kind: type, nodes: Sequence[Any], depth: int) -> list[Any]:
        """Copies of exact lists, tuples (as lists) or dicts, all of ``kind``."""
        if depth > MAX_ARTIFACT_DEPTH:
            raise _UNENCODABLE
        if kind is dict:
            # Refused before anything is copied (`"":0,` per entry: the empty ones' `}` is
            # charged on the copies), then charged on the copies: another thread could change
            # a container in between, and what is charged is what was copied.
            self.afford(5 * sum(map(len, nodes)))
            mappings = list(map(dict.copy, nodes))
            lengths = list(map(len, mappings))
            self.spend(5 * sum(lengths) + lengths.count(0))
            return self.dicts(mappings, lengths, depth)
        if kind is tuple:  # a tuple cannot change: charged before it is copied
            lengths = list(map(len, nodes))
            self.spend(2 * sum(lengths) + lengths.count(0))
            return self.lists(list(map(list, nodes)), lengths, depth)
        self.afford(2 * sum(map(len, nodes)))  # `0,` per item (`]` when empty: below)
        copies = list(map(list.copy, nodes))
        lengths = list(map(len, copies))
        self.spend(2 * sum(lengths) + lengths.count(0))
        return self.lists(copies, lengths, depth)

    def lists(self, copies: list[list[Any]], lengths: list[int], depth: int) -> list[list[Any]]:
        """Fill lists already copied and charged (of these ``lengths``) with the copies of
        their items."""
        width = lengths[0]
        if _is_table(lengths, width):  # rows of one length: read position by position
            for index, column in enumerate(zip(*copies, strict=True)):
                kept = self.column(column, depth + 1)
                if kept is not column:
                    any(map(operator.setitem, copies, repeat(index), kept))
            return copies
        items = list(chain.from_iterable(copies))
        if not items:
            return copies
        kept = self.column(items, depth + 1)
        if kept is items:
            return copies
        rest = iter(kept)  # the lists again, cut from the copied items
        return list(map(list, map(islice, repeat(rest), lengths)))

    def dicts(
        self, copies: list[dict[Any, Any]], lengths: list[int], depth: int
    ) -> list[dict[str, Any]]:
        """Fill dicts already copied and charged (their entries, of these ``lengths``; not
        yet their keys) with the copies of their values. Their keys are charged and kept
        together when they are all exact, valid strings (none can then collide with another);
        otherwise every dict is built again entry by entry, its keys read as the
        value-by-value walk reads them."""
        width = lengths[0]
        if _is_table(lengths, width) and self.records(copies, width, depth):
            return copies
        keys = list(chain.from_iterable(copies))
        texts = self.texts
        if all_of(map(type, keys), str):
            size = sum(map(len, keys))
            self.spend(size)
            joined = "".join(keys)  # pragma: no mutate (any ASCII separator adds no excess)
            valid = joined.isascii() or _valid_utf8(joined)
            if valid:
                texts.append(joined)
            else:  # charged again entry by entry, with the coerced keys
                self.budget += size
        else:
            valid = False
        if not valid:
            copies = list(map(self.keyed, map(dict.items, copies)))
        return self.values(copies, depth)

    def values(self, copies: list[dict[str, Any]], depth: int) -> list[dict[str, Any]]:
        """Fill dicts whose keys are read (exact, valid strings) with the copies of their
        values, all read together."""
        values = list(chain.from_iterable(map(dict.values, copies)))
        if not values:
            return copies
        kept = self.column(values, depth + 1)
        if kept is not values:
            owners = chain.from_iterable(map(repeat, copies, map(len, copies)))
            any(map(operator.setitem, owners, chain.from_iterable(copies), kept))
        return copies

    def records(self, copies: list[dict[Any, Any]], width: int, depth: int) -> bool:
        """Read dicts of ``width`` entries each as records, key by key, when they all hold
        the very same key objects in the same order (a test of identity, which runs no code
        of a key), and those keys are exact, valid strings: their text is then charged and
        kept once per dict. Whether they were read (nothing is charged otherwise)."""
        names = list(copies[0])
        if not all_of(map(type, names), str):
            return False
        size = sum(map(len, names)) * len(copies)
        if size > self.budget:  # before any key is copied
            return False  # (the other dicts' keys may be shorter: `dicts` reads them all)
        joined = "".join(names)  # pragma: no mutate (as in dicts)
        if not (joined.isascii() or _valid_utf8(joined)):
            return False
        same = map(operator.is_, chain.from_iterable(copies), cycle(names))
        if not all(same):
            return False
        self.spend(size)
        self.texts.append(joined * len(copies))
        for key, column in zip(names, zip(*map(dict.values, copies), strict=True), strict=True):
            kept = self.column(column, depth + 1)
            if kept is not column:
                any(map(operator.setitem, copies, repeat(key), kept))
        return True

    def keyed(self, pairs: Any) -> dict[str, Any]:
        """A dict built from ``pairs`` (its entries already charged), each key read through
        ``str``, charged and coerced: a key that is not a string, or that collides with another
        once coerced, refuses the list."""
        built: dict[str, Any] = {}
        keep = self.texts.append
        for raw_key, value in list(pairs):
            key, self.budget = read_key(raw_key, built, self.budget)
            keep(key)
            built[key] = value
        return built

    def others(self, values: list[Any], depth: int) -> list[Any]:
        """Values of other types, one by one: a subclass of list or tuple is read through its
        base and a subclass of dict through ``dict`` (each charged before it is read), then
        copied with the other containers of its kind; everything else (a subclass of str, int
        or float; an enum; any other type) goes to the value-by-value walk."""
        out = list(values)
        lists: list[list[Any]] = []
        dicts: list[list[tuple[Any, Any]]] = []
        at_lists: list[bool] = []
        at_dicts: list[bool] = []
        for index, value in enumerate(values):
            t = type(value)
            is_list = is_dict = False
            if issubclass(t, enum.Enum) or not issubclass(t, _CONTAINER_TYPES):
                out[index], self.budget = self.one_by_one(value, depth, self.budget, self.texts)
            elif depth > MAX_ARTIFACT_DEPTH:
                raise _UNENCODABLE
            elif issubclass(t, dict):
                size = _dict_charge(dict.__len__(value))
                self.spend(size)  # before its entries are read
                pairs = list(dict.items(value))
                self.spend(_dict_charge(len(pairs)) - size)  # charged as read
                dicts.append(pairs)
                is_dict = True
            else:
                base: Any = list if issubclass(t, list) else tuple
                size = _list_charge(base.__len__(value))
                self.spend(size)  # before its items are read
                items = list(base.__iter__(value))
                self.spend(_list_charge(len(items)) - size)  # charged as read
                lists.append(items)
                is_list = True
            at_lists.append(is_list)
            at_dicts.append(is_dict)
        if lists:
            _put(out, at_lists, self.lists(lists, list(map(len, lists)), depth))
        if dicts:
            _put(out, at_dicts, self.values(list(map(self.keyed, dicts)), depth))
        return out

    def scalars(self, values: Sequence[Any], kinds: set[int], types: list[type]) -> Sequence[Any]:
        """Charge and check exact strings, ints, floats, bools and nulls (``kinds``: which of
        them are there, by identity; ``types``: each one's, when there are several): strings
        their quote and one byte per code point (their text is kept; one that is not valid
        UTF-8 is replaced by its coerced copy), the others the rest of what the encoder writes
        for them (64-bit ints and finite floats only). Returns ``values``, or a list with the
        coerced strings."""
        out = values
        others = values
        if _STR in kinds:
            is_str = None if len(kinds) == 1 else list(map(operator.is_, types, repeat(str)))
            strings = values if is_str is None else list(compress(values, is_str))
            size = sum(map(len, strings))
            self.spend(size + len(strings))
            joined = "".join(strings)  # pragma: no mutate (as in dicts)
            if not (joined.isascii() or _valid_utf8(joined)):
                coerced = list(map(coerce_utf8, strings))
                self.budget += size - sum(map(len, coerced))  # a rejoined pair: one code point
                joined = "".join(coerced)  # pragma: no mutate (as in dicts)
                out = coerced if is_str is None else _put(list(values), is_str, coerced)
            self.texts.append(joined)
            if is_str is None:
                return out
            others = list(compress(values, map(operator.not_, is_str)))
            kinds = kinds - {_STR}
        self.numbers(others, kinds)
        return out

    def numbers(self, values: Sequence[Any], kinds: set[int]) -> None:
        """Charge and check exact ints, floats, bools and nulls (not empty)."""
        if kinds <= _WORDS:  # true, false, null: the letters after the first
            # (only bools and None here: ``count(False)`` finds exactly the falses)
            self.spend(3 * len(values) + values.count(False))
            return
        if _INT in kinds:
            ints = values
            if len(kinds) > 1:
                ints = list(compress(values, map(operator.is_, map(type, values), repeat(int))))
            low, high = min(ints), max(ints)
            if low < INT_MIN or high > INT_MAX:  # before any is written out
                raise _UNENCODABLE
            if len(kinds) == 1:
                digits = len(int.__repr__(low))
                if (low >= 0 or high < 0) and digits == len(int.__repr__(high)):
                    # Every int between two of the same sign and length is that long.
                    self.spend((digits - 1) * len(values))
                    return
        try:
            written = _written(values)
        except ValueError:  # a NaN or an infinity
            raise _UNENCODABLE from None
        # What the values add, less the byte each has charged: the brackets, the commas, and
        # one byte per value come off.
        self.spend(written - 1 - 2 * len(values))


def _put(out: list[Any], mask: Sequence[bool], kept: Sequence[Any]) -> list[Any]:
    """Put ``kept`` in ``out`` at the places ``mask`` selects, in order; ``out``."""
    any(map(operator.setitem, repeat(out), compress(range(len(out)), mask), kept))
    return out


def _is_table(lengths: list[int], width: int) -> bool:
    """Whether containers of these lengths are rows of one length (``width``), at least as
    many rows as columns: then a column's Python work is shared by enough values."""
    return (
        len(lengths) >= _MIN_ROWS
        and 0 < width <= len(lengths)
        and lengths.count(width) == len(lengths)
    )


def _list_charge(n: int) -> int:
    """What a list of ``n`` items adds up front: `0,` per item, or `]` when empty."""
    return 2 * n if n else 1


def _valid_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


#: Measures flat lists of exact ints, floats, bools and None (never anything else): the size of
#: a number is the length of what the encoder writes for it, and a NaN or an infinity is what
#: it refuses.
_NUMBERS: Final = json.JSONEncoder(allow_nan=False, check_circular=False, separators=(",", ":"))
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)


def _not_measured(value: object) -> Any:
    raise TypeError  # pragma: no cover (only exact numbers, bools and None are measured)


if _c_make_encoder is not None:
    # The same C encoder, called without JSONEncoder.encode's per-call set-up (a walk reads
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
