"""Wire models for the OpenCode server API (v1), tolerant of what newer servers add.

Unknown fields are ignored; every field the server may omit has a default. Only the fields ocwatch
reads are modelled. Times on the wire are epoch milliseconds; they stay milliseconds here.

The models are frozen, slotted pydantic dataclasses rather than BaseModels. A monitor holds one
Session and one last Message per session, and derive() reads them all on every snapshot; slotted
objects keep their fields inline instead of in a per-object dict plus a fields-set, so they parse
faster, hold a fraction of the memory, and derive() reads them with fewer cache misses
(benchmarks/bench_parse.py and bench_derive.py; the figures are in docs/PERFORMANCE.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Self, TypeVar, cast, dataclass_transform

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

_CONFIG = ConfigDict(extra="ignore", populate_by_name=True)
_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, field_specifiers=(Field,))
def wire(cls: type[_T]) -> type[_T]:
    """Make `cls` a wire model: a frozen, slotted pydantic dataclass that ignores unknown fields
    and can be built from wire names (aliases) or field names."""
    return dataclass(frozen=True, slots=True, config=_CONFIG)(cls)  # type: ignore[return-value]


#: The last millisecond a datetime can show (9999-12-31T23:59:59.999Z)
MAX_MS = 253_402_300_799_999.0


#: Epoch-ms times outside [0, MAX_MS] are no time: the field falls back to its default
Millis = Annotated[float, Field(ge=0, le=MAX_MS)]
OptMillis = Annotated[float | None, Field(ge=0, le=MAX_MS)]

_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def _without(raw: Any, exc: ValidationError) -> Any:
    """`raw` without the fields `exc` found wrong (copied along their paths), or None when an
    error is not about one field of an object."""
    if not isinstance(raw, dict):
        return None
    fixed: dict[str, Any] = dict(raw)
    for err in exc.errors():
        loc = err.get("loc", ())
        if not loc or err.get("type") == "missing":
            return None
        node: Any = fixed
        for key in loc[:-1]:
            child = _child(node, key)
            if not isinstance(child, dict | list):
                node = None
                break
            node[key] = child = type(child)(child)  # copied: `raw` stays as it was
            node = child
        last = loc[-1]
        if isinstance(node, dict) and last in node:
            del node[last]
        elif isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
            node[last] = None
        else:
            return None
    return fixed


def _child(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


class Wire:
    """Base of the wire models: parsing from and dumping to wire JSON (aliases, epoch ms)."""

    __slots__ = ()

    @classmethod
    def parse(cls, raw: Any) -> Self:
        """Validate a decoded JSON value. A field of an unexpected type or out of range (a null
        title, 1.5 tokens, a time of 1e300) takes its default instead of losing the whole
        record; a record still invalid without them raises pydantic.ValidationError."""
        # its schema validator called straight: the adapter's `validate_python` passes eight
        # keyword arguments on to it (0.24 of 2.2 us a small message)
        validate = _adapter(cls).validator.validate_python
        try:
            return cast(Self, validate(raw))
        except ValidationError as exc:
            fixed = _without(raw, exc)
            if fixed is None:
                raise
            return cast(Self, validate(fixed))

    def to_wire(self) -> dict[str, Any]:
        """The wire form (aliases, unset optional fields left out), as the server sends it."""
        return cast(
            dict[str, Any], _adapter(type(self)).dump_python(self, by_alias=True, exclude_none=True)
        )


@wire
class SessionTime(Wire):
    created: Millis = 0
    updated: Millis = 0
    archived: OptMillis = None


@wire
class Tokens(Wire):
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache: dict[str, int] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.input + self.output + self.reasoning + sum(self.cache.values())


@wire
class Session(Wire):
    """One session as listed by `GET /session`."""

    id: str
    title: str = ""
    directory: str = ""
    project_id: str | None = Field(default=None, alias="projectID")
    parent_id: str | None = Field(default=None, alias="parentID")
    version: str | None = None
    time: SessionTime = Field(default_factory=SessionTime)
    cost: float | None = None
    tokens: Tokens | None = None


@wire
class SessionStatus(Wire):
    """An entry of `GET /session/status`: busy, retry or idle (idle may carry a reason)."""

    type: str = "busy"
    attempt: int | None = None
    message: str | None = None
    next: OptMillis = None
    reason: str | None = None


@wire
class MessageError(Wire):
    name: str = "UnknownError"
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        msg = self.data.get("message") if isinstance(self.data, dict) else None
        return f"{self.name}: {msg}" if msg else self.name


@wire
class MessageTime(Wire):
    created: Millis = 0
    completed: OptMillis = None


@wire
class MessageInfo(Wire):
    """A message's `info`: user or assistant."""

    id: str
    session_id: str = Field(default="", alias="sessionID")
    role: str = "assistant"
    time: MessageTime = Field(default_factory=MessageTime)
    finish: str | None = None
    error: MessageError | None = None
    cost: float | None = None
    tokens: Tokens | None = None
    parent_id: str | None = Field(default=None, alias="parentID")
    model_id: str | None = Field(default=None, alias="modelID")
    provider_id: str | None = Field(default=None, alias="providerID")
    agent: str | None = None


@wire
class ToolState(Wire):
    status: str = "pending"
    input: dict[str, Any] | None = None
    title: str | None = None
    error: str | None = None
    time: Any = None  # {start, end} epoch ms, not validated (a nested model, or a dict,
    # validated for every tool part, made messages parse much slower); read through `ended`

    @property
    def ended(self) -> float | None:
        """When the tool call ended, epoch ms (None if not, or not a time)."""
        end = self.time.get("end") if isinstance(self.time, dict) else None
        if isinstance(end, int | float) and not isinstance(end, bool) and 0 < end <= MAX_MS:
            return float(end)
        return None


@wire
class Part(Wire):
    """A message part. Only tool parts carry state ocwatch reads; the rest are kept by type."""

    id: str = ""
    session_id: str = Field(default="", alias="sessionID")
    message_id: str = Field(default="", alias="messageID")
    type: str = "text"
    tool: str | None = None
    call_id: str | None = Field(default=None, alias="callID")
    state: ToolState | None = None

    @property
    def is_open_tool(self) -> bool:
        """A tool call that has not finished (pending or running)."""
        return (
            self.type == "tool"
            and self.state is not None
            and self.state.status
            in (
                "pending",
                "running",
            )
        )


@wire
class Message(Wire):
    """`{"info": ..., "parts": [...]}` as returned by `GET /session/{id}/message`."""

    info: MessageInfo
    parts: tuple[Part, ...] = ()


@wire
class ToolRef(Wire):
    message_id: str | None = Field(default=None, alias="messageID")
    call_id: str | None = Field(default=None, alias="callID")


@wire
class PermissionRequest(Wire):
    """An open permission request (`GET /permission`, `permission.asked`)."""

    id: str
    session_id: str = Field(alias="sessionID")
    permission: str = ""
    patterns: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    always: tuple[str, ...] = ()
    tool: ToolRef | None = None

    @property
    def command(self) -> Any:
        """What it would run or touch, in a word: the command, else its description, else the
        file (None when the metadata says none)."""
        meta = self.metadata or {}
        return meta.get("command") or meta.get("description") or meta.get("filepath")


@wire
class QuestionOption(Wire):
    label: str = ""
    description: str = ""


@wire
class QuestionItem(Wire):
    question: str = ""
    header: str = ""
    options: tuple[QuestionOption, ...] = ()
    multiple: bool = False
    custom: bool = True


@wire
class QuestionRequest(Wire):
    """An open question request (`GET /question`, `question.asked`)."""

    id: str
    session_id: str = Field(alias="sessionID")
    questions: tuple[QuestionItem, ...] = ()
    tool: ToolRef | None = None


@wire
class Health(Wire):
    healthy: bool = False
    version: str | None = None


#: OpenCode ids (`msg_`, `per_`, `que_`, `evt_`: ascending) carry their creation time: 12 hex
#: digits of `(ms * 0x1000 + counter)` cut to 48 bits, so the milliseconds modulo 2**36 (~795 days).
_ID_WRAP = 1 << 36
_HEX = frozenset("0123456789abcdef")


def id_time(ident: str | None, near: float) -> float | None:
    """When the server created an ascending id (epoch seconds), or None when `ident` is not one.

    The id keeps the time modulo 2**36 ms; of the times it may stand for, the one closest to
    `near` (epoch seconds, e.g. now) that is not more than a day after it is taken. Pure: the same
    id and `near` give the same time."""
    if not ident or len(ident) < 17 or ident[3] != "_":
        return None
    digits = ident[4:16]
    if not _HEX.issuperset(digits):
        return None
    low = int(digits, 16) >> 12
    near_ms = near * 1000.0
    base = int((near_ms + 86_400_000 - low) // _ID_WRAP) * _ID_WRAP
    return (base + low) / 1000.0
