"""The typed result of a tool call, its two channels, and a tool's spec.

A :class:`ToolResult` has exactly one model-facing string, ``content``, and a tuple of
:class:`Artifact` values that never reach a model provider. Nothing in this module knows
about pluggy, providers or storage.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NoReturn, final

__all__ = [
    "Artifact",
    "ArtifactType",
    "DataClass",
    "ToolResult",
    "ToolSpec",
]

#: OpenAI and Anthropic both accept function names of this shape; anything else would be
#: refused by some provider long after the tool was loaded.
TOOL_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ArtifactType(enum.StrEnum):
    """The kinds of artifact a tool can return (host vocabulary).

    ``TABLE`` data is ``{"columns": [str], "rows": [[str]]}``; ``TEXT`` data is ``{"text": str}``.
    """

    TABLE = "table"
    TEXT = "text"


class DataClass(enum.StrEnum):
    """What a tool may return, ordered from least to most sensitive.

    A tool that declares nothing is treated as :attr:`SECRET_ADJACENT` (unknown = strictest).
    """

    PUBLIC = "public"
    INTERNAL = "internal"
    SECRET_ADJACENT = "secret-adjacent"  # noqa: S105  # a data class name, not a secret

    @property
    def rank(self) -> int:
        """0 for public, 1 for internal, 2 for secret-adjacent."""
        return _DATA_CLASS_RANK[self]


_DATA_CLASS_RANK: Final = {
    DataClass.PUBLIC: 0,
    DataClass.INTERNAL: 1,
    DataClass.SECRET_ADJACENT: 2,
}


def _frozen(self: object, name: str, value: object = None) -> NoReturn:
    raise AttributeError(f"{type(self).__name__} is frozen; cannot change {name!r}")


def _require_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


@final
class Artifact:
    """Run-scoped structured data shown to people and stored for audit, never sent to a model.

    Build one with :meth:`table` or :meth:`text`. The host re-reads every artifact through its
    canonicalising walk, so the data a tool hands over is copied, bounded and made plain JSON.
    """

    __slots__ = ("data", "label", "type")

    type: ArtifactType
    label: str
    data: dict[str, Any]

    def __init__(self, type: ArtifactType, label: str, data: dict[str, Any]) -> None:
        if not isinstance(type, ArtifactType):
            raise TypeError(f"type must be an ArtifactType, not {type.__class__.__name__}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "label", _require_str(label, "label"))
        if not isinstance(data, dict):
            raise TypeError(f"data must be a dict, not {data.__class__.__name__}")
        object.__setattr__(self, "data", data)

    __setattr__ = _frozen
    __delattr__ = _frozen

    @classmethod
    def table(cls, label: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Artifact:
        """A TABLE artifact: ``columns`` names and ``rows`` of string cells, one per column."""
        cols = [_require_str(c, "column name") for c in columns]
        copied: list[list[str]] = []
        for i, row in enumerate(rows):
            cells = [_require_str(c, f"cell in row {i}") for c in row]
            if len(cells) != len(cols):
                raise ValueError(f"row {i} has {len(cells)} cells for {len(cols)} columns")
            copied.append(cells)
        return cls(ArtifactType.TABLE, label, {"columns": cols, "rows": copied})

    @classmethod
    def text(cls, label: str, text: str) -> Artifact:
        """A TEXT artifact: one preformatted block."""
        return cls(ArtifactType.TEXT, label, {"text": _require_str(text, "text")})

    def to_dict(self) -> dict[str, Any]:
        """``{"type", "label", "data"}`` as plain JSON values."""
        return {"type": self.type.value, "label": self.label, "data": self.data}

    def __eq__(self, other: object) -> bool:
        if type(other) is not Artifact:
            return NotImplemented
        return (self.type, self.label, self.data) == (other.type, other.label, other.data)

    __hash__ = None  # type: ignore[assignment]  # data is a dict: artifacts are not hashable

    def __repr__(self) -> str:
        # Labels and data are tool bytes: a repr can end up in logs, so neither is shown.
        return f"<Artifact {self.type.value}>"


@final
class ToolResult:
    """What a tool returns: one model-facing string and run-scoped artifacts.

    ``ToolResult(...)`` cannot be called: use :meth:`text` or :meth:`error`. ``repr``, ``str``
    and ``format`` show the content's size and the artifacts' count and types, never their data.
    """

    # One slot holding (content, is_error, artifacts): the seam builds a new result on every
    # call, and setting one slot is the cheapest way past the frozen __setattr__.
    __slots__ = ("_fields",)

    _fields: tuple[str, bool, tuple[Artifact, ...]]

    @property
    def content(self) -> str:
        """The one model-facing string."""
        return self._fields[0]

    @property
    def is_error(self) -> bool:
        """Whether the call failed."""
        return self._fields[1]

    @property
    def artifacts(self) -> tuple[Artifact, ...]:
        """Run-scoped data for people and the audit store; never sent to a model."""
        return self._fields[2]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("build a ToolResult with ToolResult.text(...) or ToolResult.error(...)")

    __setattr__ = _frozen
    __delattr__ = _frozen

    @staticmethod
    def _build(content: str, is_error: bool, artifacts: tuple[Artifact, ...]) -> ToolResult:
        self = _new_result(ToolResult)
        _set_fields(self, (content, is_error, artifacts))
        return self

    @classmethod
    def text(cls, content: str, *artifacts: Artifact) -> ToolResult:
        """A successful result: ``content`` for the model, ``artifacts`` for people and audit."""
        if type(content) is not str:
            _require_str(content, "content")
        for a in artifacts:
            if not isinstance(a, Artifact):
                raise TypeError(f"artifacts must be Artifact values, not {type(a).__name__}")
        # ToolResult._build, inline: this runs for most tool calls.
        self = _new_result(ToolResult)
        _set_fields(self, (content, False, artifacts))
        return self

    @classmethod
    def error(cls, content: str) -> ToolResult:
        """A failed call: ``content`` tells the model what went wrong. Carries no artifacts."""
        return ToolResult._build(_require_str(content, "content"), True, ())

    def __eq__(self, other: object) -> bool:
        if type(other) is not ToolResult:
            return NotImplemented
        return self._fields == other._fields

    __hash__ = None  # type: ignore[assignment]  # artifacts hold dicts

    def __repr__(self) -> str:
        kinds = ", ".join(a.type.value for a in self.artifacts)
        return (
            f"ToolResult(is_error={self.is_error}, content=<{len(self.content)} chars>, "
            f"artifacts=<{len(self.artifacts)}{': ' + kinds if kinds else ''}>)"
        )

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)


_new_result: Final = object.__new__
_set_fields: Final = ToolResult.__dict__["_fields"].__set__


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@final
class ToolSpec:
    """A tool's name, description and JSON Schema, plus host-side metadata.

    Only ``name``, ``description`` and ``parameters`` go on a provider's wire (:meth:`to_wire`);
    ``group``, ``enabled_by_default``, ``data_class`` and ``requires_approval`` stay in the host.
    """

    __slots__ = (
        "data_class",
        "description",
        "enabled_by_default",
        "group",
        "name",
        "parameters",
        "requires_approval",
    )

    name: str
    description: str
    parameters: Mapping[str, Any]
    group: str | None
    enabled_by_default: bool
    data_class: DataClass | None
    requires_approval: bool

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | None = None,
        *,
        group: str | None = None,
        enabled_by_default: bool = True,
        data_class: DataClass | str | None = None,
        requires_approval: bool = False,
    ) -> None:
        _require_str(name, "name")
        if TOOL_NAME_RE.fullmatch(name) is None:
            raise ValueError(f"tool name {name!r} must match [A-Za-z0-9_-]{{1,64}}")
        params = _empty_object_schema() if parameters is None else dict(parameters)
        if params.get("type") != "object":
            raise ValueError(f"tool {name!r}: parameters must be a JSON Schema with type 'object'")
        if group is not None:
            _require_str(group, "group")
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "description", _require_str(description, "description"))
        set_(self, "parameters", params)
        set_(self, "group", group)
        set_(self, "enabled_by_default", bool(enabled_by_default))
        set_(self, "data_class", None if data_class is None else DataClass(data_class))
        set_(self, "requires_approval", bool(requires_approval))

    __setattr__ = _frozen
    __delattr__ = _frozen

    @property
    def effective_data_class(self) -> DataClass:
        """The declared data class, or the strictest one when none is declared."""
        return self.data_class or DataClass.SECRET_ADJACENT

    def to_wire(self) -> dict[str, Any]:
        """The three fields a provider may see."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def to_dict(self) -> dict[str, Any]:
        """Everything, for the CLI and the inspector (never for a provider)."""
        return {
            **self.to_wire(),
            "group": self.group,
            "enabled_by_default": self.enabled_by_default,
            "data_class": None if self.data_class is None else self.data_class.value,
            "requires_approval": self.requires_approval,
        }

    def __eq__(self, other: object) -> bool:
        if type(other) is not ToolSpec:
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # parameters is a dict

    def __repr__(self) -> str:
        return f"ToolSpec(name={self.name!r}, group={self.group!r})"
