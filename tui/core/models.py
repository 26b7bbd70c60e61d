"""Wire models for the OpenCode server API (v1), tolerant of what newer servers add.

Unknown fields are ignored; every field the server may omit has a default. Only the fields ocwatch
reads are modelled. Times on the wire are epoch milliseconds; they stay milliseconds here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Wire(BaseModel):
    """Base for wire models: unknown fields ignored, populated by alias or name, frozen."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class SessionTime(Wire):
    created: float = 0
    updated: float = 0
    archived: float | None = None


class Tokens(Wire):
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache: dict[str, int] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.input + self.output + self.reasoning + sum(self.cache.values())


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


class SessionStatus(Wire):
    """An entry of `GET /session/status`: busy, retry or idle (idle may carry a reason)."""

    type: str = "busy"
    attempt: int | None = None
    message: str | None = None
    next: float | None = None
    reason: str | None = None


class MessageError(Wire):
    name: str = "UnknownError"
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        msg = self.data.get("message") if isinstance(self.data, dict) else None
        return f"{self.name}: {msg}" if msg else self.name


class MessageTime(Wire):
    created: float = 0
    completed: float | None = None


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


class ToolState(Wire):
    status: str = "pending"
    input: dict[str, Any] | None = None
    title: str | None = None
    error: str | None = None


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
        return self.type == "tool" and self.state is not None and self.state.status in (
            "pending",
            "running",
        )


class Message(Wire):
    """`{"info": ..., "parts": [...]}` as returned by `GET /session/{id}/message`."""

    info: MessageInfo
    parts: tuple[Part, ...] = ()


class ToolRef(Wire):
    message_id: str | None = Field(default=None, alias="messageID")
    call_id: str | None = Field(default=None, alias="callID")


class PermissionRequest(Wire):
    """An open permission request (`GET /permission`, `permission.asked`)."""

    id: str
    session_id: str = Field(alias="sessionID")
    permission: str = ""
    patterns: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    always: tuple[str, ...] = ()
    tool: ToolRef | None = None


class QuestionOption(Wire):
    label: str = ""
    description: str = ""


class QuestionItem(Wire):
    question: str = ""
    header: str = ""
    options: tuple[QuestionOption, ...] = ()
    multiple: bool = False
    custom: bool = True


class QuestionRequest(Wire):
    """An open question request (`GET /question`, `question.asked`)."""

    id: str
    session_id: str = Field(alias="sessionID")
    questions: tuple[QuestionItem, ...] = ()
    tool: ToolRef | None = None


class Health(Wire):
    healthy: bool = False
    version: str | None = None


StateName = Literal["busy", "retry", "input", "idle", "unknown"]
ReasonName = Literal["completed", "aborted", "error", "interrupted"]
