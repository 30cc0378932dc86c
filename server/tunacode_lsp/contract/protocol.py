"""The wire contract in types: every command's params, every result and every event.

Params are attrs classes structured from the client's JSON with a strict cattrs converter
(camelCase on the wire, snake_case here, no silent coercion), so a bad field becomes one
message that names it. Results and events unstructure to camelCase dicts. docs/protocol.md
is the prose form of this module: change both together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from tunacode_lsp.contract import names

# The version, the error codes, the command names and the notification, from contract/names.py
# (plain constants the server loads before it answers `initialize`).
CHANGED_SINCE = names.CHANGED_SINCE
CHECKPOINTS_UNAVAILABLE = names.CHECKPOINTS_UNAVAILABLE
COMMAND_ABORT = names.COMMAND_ABORT
COMMAND_CHANGES = names.COMMAND_CHANGES
COMMAND_COMMANDS_LIST = names.COMMAND_COMMANDS_LIST
COMMAND_MODELS_LIST = names.COMMAND_MODELS_LIST
COMMAND_REQUEST = names.COMMAND_REQUEST
COMMAND_REQUEST_RESULT = names.COMMAND_REQUEST_RESULT
COMMAND_SESSION_ALLOWS = names.COMMAND_SESSION_ALLOWS
COMMAND_SESSION_COMPACT = names.COMMAND_SESSION_COMPACT
COMMAND_SESSION_DELETE = names.COMMAND_SESSION_DELETE
COMMAND_SESSION_EXPORT = names.COMMAND_SESSION_EXPORT
COMMAND_SESSION_FORK = names.COMMAND_SESSION_FORK
COMMAND_SESSION_GET = names.COMMAND_SESSION_GET
COMMAND_SESSION_IMPORT = names.COMMAND_SESSION_IMPORT
COMMAND_SESSION_LIST = names.COMMAND_SESSION_LIST
COMMAND_SESSION_NEW = names.COMMAND_SESSION_NEW
COMMAND_SESSION_REWIND = names.COMMAND_SESSION_REWIND
COMMAND_SETTINGS_CONSENT = names.COMMAND_SETTINGS_CONSENT
COMMAND_STATUS = names.COMMAND_STATUS
COMMAND_STEER = names.COMMAND_STEER
COMPACTION_FAILED = names.COMPACTION_FAILED
EVENT_NOTIFICATION = names.EVENT_NOTIFICATION
MODEL_NOT_USABLE = names.MODEL_NOT_USABLE
PROTOCOL_VERSION = names.PROTOCOL_VERSION
REQUEST_CANCELLED = names.REQUEST_CANCELLED
REQUEST_RUNNING = names.REQUEST_RUNNING
SESSION_BUSY = names.SESSION_BUSY
UNKNOWN_SESSION = names.UNKNOWN_SESSION

REQUEST_MODES = ("agent", "plan")  # v3: tunacode.request mode

StopReason = Literal["end_turn", "cancelled", "max_turns", "max_cost", "timeout", "error"]
ToolStatus = Literal[
    "pending", "awaiting_approval", "in_progress", "completed", "failed", "cancelled"
]
TOOL_STATUSES = ("pending", "awaiting_approval", "in_progress", "completed", "failed", "cancelled")
FINAL_TOOL_STATUSES = frozenset({"completed", "failed", "cancelled"})
# Why a call ended failed or cancelled: the user said no; a mode, a rule or a hook refused it;
# the tool failed; it ran out of time; the request was stopped.
ToolEndReason = Literal["denied", "policy", "error", "timeout", "aborted"]
TOOL_END_REASONS = ("denied", "policy", "error", "timeout", "aborted")
TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "fetch", "think", "other")
STOP_REASONS = ("end_turn", "cancelled", "max_turns", "max_cost", "timeout", "error")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _strict(kind: type, label: str) -> Callable[[Any, type], Any]:
    def structure(value: Any, _: type) -> Any:
        # bool is an int subclass in Python; on the wire it is not a number.
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"expected {label}, got a boolean")
        if kind is float and isinstance(value, int):
            return float(value)
        if not isinstance(value, kind):
            raise TypeError(f"expected {label}, got {type(value).__name__}")
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise TypeError("not valid Unicode text (a lone surrogate)") from None
        return value

    return structure


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(float, _strict(float, "a number"))
    conv.register_structure_hook(bool, _strict(bool, "a boolean"))
    conv.register_structure_hook(dict, _strict(dict, "an object"))
    conv.register_structure_hook_func(
        lambda t: t is dict or getattr(t, "__origin__", None) is dict, _strict(dict, "an object")
    )
    conv.register_structure_hook(Any, lambda value, _: value)

    def array_structure(kind: type) -> Any:
        # cattrs would take "bash" for ["b", "a", "s", "h"]: on the wire a list is an array
        (item_kind,) = getattr(kind, "__args__", (Any,))

        def structure(value: Any, _: type) -> Any:
            if not isinstance(value, list):
                raise TypeError(f"expected an array, got {'a string' if isinstance(value, str) else type(value).__name__}")
            items = []
            for index, item in enumerate(value):
                try:
                    items.append(conv.structure(item, item_kind))
                except (TypeError, ValueError, cattrs.BaseValidationError) as exc:
                    problem = "; ".join(cattrs.transform_error(exc)) if isinstance(exc, cattrs.BaseValidationError) else str(exc)
                    raise TypeError(f"item {index}: {problem}") from None
            return items

        return structure

    conv.register_structure_hook_factory(lambda t: getattr(t, "__origin__", None) is list, array_structure)

    def camel_structure(cls: type) -> Any:
        renames = {a.name: override(rename=_camel(a.name)) for a in attrs.fields(cls)}
        return make_dict_structure_fn(cls, conv, **renames)  # type: ignore[arg-type]

    def camel_unstructure(cls: type) -> Any:
        renames = {
            a.name: override(rename=_camel(a.name), omit_if_default=a.metadata.get("omit", False))
            for a in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **renames)  # type: ignore[arg-type]

    conv.register_structure_hook_factory(attrs.has, camel_structure)
    conv.register_unstructure_hook_factory(attrs.has, camel_unstructure)
    return conv


converter = _make_converter()


def _wire_path(problem: str) -> str:
    """'expected int @ params.max_turns' -> 'params.maxTurns: expected int' (the client's names)."""

    text, sep, path = problem.rpartition(" @ ")
    if not sep:
        return problem
    return ".".join(_camel(part) for part in path.split(".")) + ": " + text


class ParamsError(ValueError):
    """Params that do not fit a command: becomes InvalidParams (-32602) naming the field."""


P = TypeVar("P")


def parse_params(cls: type[P], arguments: Any) -> P:
    """Turn executeCommand `arguments` (a list holding one object) into typed params."""

    if arguments is None or (isinstance(arguments, list | tuple) and len(arguments) == 0):
        arguments = [{}]  # no argument at all is the same as an empty object
    if not isinstance(arguments, list | tuple) or len(arguments) != 1:
        raise ParamsError("expected exactly one argument, a JSON object")
    raw = arguments[0]
    if not isinstance(raw, dict):
        raise ParamsError(f"the argument must be a JSON object, got {type(raw).__name__}")
    try:
        params = converter.structure(raw, cls)
    except cattrs.BaseValidationError as exc:
        problems = [_wire_path(p) for p in cattrs.transform_error(exc, path="params")]
        raise ParamsError("; ".join(problems)) from None
    validate = getattr(params, "validate", None)
    if validate is not None:
        validate()
    return params


def to_wire(value: Any) -> Any:
    return converter.unstructure(value)


def _non_empty(field: str, value: str | None) -> None:
    if value is not None and not value.strip():
        raise ParamsError(f"params.{_camel(field)} must not be empty")


def _positive(field: str, value: int | float | None, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if value < 0 or (value == 0 and not allow_zero):
        raise ParamsError(f"params.{_camel(field)} must be {'>= 0' if allow_zero else '> 0'}")


MAX_PROMPT_CHARS = 1_000_000
MAX_COST_USD = 1_000_000


# ---------------------------------------------------------------- command params


# ---------------------------------------------------------------- context items

MAX_CONTEXT_ITEMS = 50
MAX_SELECTION_CHARS = 200_000
MAX_DIAGNOSTIC_CHARS = 4_000
MAX_IMAGE_BASE64_CHARS = 7_000_000  # about 5 MB of image
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@attrs.define
class Position:
    line: int
    character: int


@attrs.define
class Range:
    start: Position
    end: Position


@attrs.define
class FileContext:
    uri: str
    type: str = "file"


@attrs.define
class SelectionContext:
    uri: str
    range: Range
    text: str | None = attrs.field(default=None, metadata={"omit": True})
    type: str = "selection"


@attrs.define
class DiagnosticContext:
    uri: str
    range: Range
    message: str
    severity: int | None = attrs.field(default=None, metadata={"omit": True})
    source: str | None = attrs.field(default=None, metadata={"omit": True})
    code: Any = attrs.field(default=None, metadata={"omit": True})  # a number or a string (LSP)
    type: str = "diagnostic"


@attrs.define
class ImageContext:
    mime_type: str
    data: str  # base64
    type: str = "image"


ContextItem = FileContext | SelectionContext | DiagnosticContext | ImageContext
CONTEXT_TYPES: dict[str, type] = {
    "file": FileContext,
    "selection": SelectionContext,
    "diagnostic": DiagnosticContext,
    "image": ImageContext,
}


def parse_context(raw: list[dict[str, Any]] | None) -> list[ContextItem]:
    """Typed context items, or ParamsError naming the bad one (`params.context[2].range`)."""

    if not raw:
        return []
    if len(raw) > MAX_CONTEXT_ITEMS:
        raise ParamsError(f"params.context: at most {MAX_CONTEXT_ITEMS} items")
    items: list[ContextItem] = []
    for index, item in enumerate(raw):
        where = f"params.context[{index}]"
        kind = item.get("type")
        cls = CONTEXT_TYPES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            known = ", ".join(CONTEXT_TYPES)
            raise ParamsError(f"{where}.type: unknown context item type {str(kind)[:40]!r} (expected one of {known})")
        try:
            parsed: ContextItem = converter.structure(item, cls)
        except cattrs.BaseValidationError as exc:
            problems = [_wire_path(p) for p in cattrs.transform_error(exc, path=where)]
            raise ParamsError("; ".join(problems)) from None
        _check_context_item(parsed, where)
        items.append(parsed)
    return items


def _check_context_item(item: ContextItem, where: str) -> None:
    if isinstance(item, SelectionContext | DiagnosticContext):
        start, end = item.range.start, item.range.end
        if min(start.line, start.character, end.line, end.character) < 0 or (end.line, end.character) < (start.line, start.character):
            raise ParamsError(f"{where}.range: not a valid range (negative, or its end before its start)")
    if isinstance(item, SelectionContext) and item.text is not None and len(item.text) > MAX_SELECTION_CHARS:
        raise ParamsError(f"{where}.text is longer than {MAX_SELECTION_CHARS:,} characters")
    if isinstance(item, DiagnosticContext):
        if len(item.message) > MAX_DIAGNOSTIC_CHARS:
            raise ParamsError(f"{where}.message is longer than {MAX_DIAGNOSTIC_CHARS:,} characters")
        if item.code is not None and (isinstance(item.code, bool) or not isinstance(item.code, int | str)):
            raise ParamsError(f"{where}.code: expected a number or a string")
    if isinstance(item, ImageContext):
        if item.mime_type not in IMAGE_MIME_TYPES:
            raise ParamsError(f"{where}.mimeType: {item.mime_type[:40]!r} is not an accepted image type ({', '.join(IMAGE_MIME_TYPES)})")
        if len(item.data) > MAX_IMAGE_BASE64_CHARS:
            raise ParamsError(f"{where}.data: the image is larger than about 5 MB")


@attrs.define
class RequestParams:
    prompt: str
    session_id: str | None = None
    model: str | None = None
    max_turns: int | None = None
    context: list[dict[str, Any]] | None = None
    mode: str | None = None  # v3: agent (default) | plan
    queue: bool = False  # on a busy session: wait for its turn instead of -32002
    detach: bool = False  # answer at once with {requestId, sessionId}; the result by tunacode.request.result
    max_cost: float | None = None  # USD: no model call starts that would take the request's cost past it

    def validate(self) -> None:
        if self.mode is not None and self.mode not in REQUEST_MODES:
            raise ParamsError(f"params.mode: expected one of {', '.join(REQUEST_MODES)}")
        _non_empty("prompt", self.prompt)
        if len(self.prompt) > MAX_PROMPT_CHARS:
            raise ParamsError(f"params.prompt is longer than {MAX_PROMPT_CHARS} characters")
        _non_empty("session_id", self.session_id)
        _non_empty("model", self.model)
        _positive("max_turns", self.max_turns)
        _positive("max_cost", self.max_cost)
        if self.max_cost is not None and (isinstance(self.max_cost, bool) or not self.max_cost <= MAX_COST_USD):
            raise ParamsError(f"params.maxCost must be a number of US dollars above 0 and at most {MAX_COST_USD:,}")
        parse_context(self.context)


@attrs.define
class AbortParams:
    session_id: str | None = None
    request_id: str | None = None

    def validate(self) -> None:
        if self.session_id is None and self.request_id is None:
            raise ParamsError("params.sessionId or params.requestId is required")


@attrs.define
class SessionNewParams:
    cwd: str | None = None
    model: str | None = None
    title: str | None = None

    def validate(self) -> None:
        _non_empty("model", self.model)


@attrs.define
class SessionListParams:
    cwd: str | None = None
    limit: int | None = None

    def validate(self) -> None:
        _positive("limit", self.limit)


@attrs.define
class SessionIdParams:
    session_id: str

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)


@attrs.define
class SessionGetParams:
    session_id: str
    events: bool | None = None  # also the stored requests as the events a client received live

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)


@attrs.define
class SessionImportParams:
    document: dict[str, Any]


@attrs.define
class SessionForkParams:
    session_id: str
    message_count: int | None = None
    request_id: str | None = None  # fork before this request's prompt

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)
        _positive("message_count", self.message_count, allow_zero=True)
        _non_empty("request_id", self.request_id)
        if self.message_count is not None and self.request_id is not None:
            raise ParamsError("params.messageCount and params.requestId: give one of them, not both")


MAX_STEER_CHARS = 100_000


@attrs.define
class SteerParams:
    session_id: str
    text: str

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)
        _non_empty("text", self.text)
        if len(self.text) > MAX_STEER_CHARS:
            raise ParamsError(f"params.text is longer than {MAX_STEER_CHARS} characters")


@attrs.define
class RequestIdParams:
    request_id: str

    def validate(self) -> None:
        _non_empty("request_id", self.request_id)


@attrs.define
class EmptyParams:
    pass


@attrs.define
class ChangesParams:
    session_id: str
    request_id: str | None = None

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)
        _non_empty("request_id", self.request_id)


@attrs.define
class RewindParams:
    session_id: str
    request_id: str
    files: bool = True
    force: bool = False

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)
        _non_empty("request_id", self.request_id)


# ---------------------------------------------------------------- results


@attrs.define
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    total_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.total_tokens + other.total_tokens,
            round(self.cost + other.cost, 10),
        )

    def as_store_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_store_dict(cls, data: dict[str, Any] | None) -> Usage:
        data = data or {}
        names = {a.name for a in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@attrs.define
class ErrorInfo:
    message: str
    # v3: what failed, for a client's buttons: auth | rate_limit | overloaded | context_length |
    # network | timeout | bad_request | server | unknown (agent/error_kinds.py)
    kind: str | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class ToolCallSummary:
    tool_call_id: str
    name: str
    status: str
    duration_ms: int | None = None


@attrs.define
class RequestResult:
    session_id: str
    request_id: str
    stop_reason: str
    text: str
    usage: Usage
    turns: int
    tool_calls: list[ToolCallSummary]
    error: ErrorInfo | None = attrs.field(default=None, metadata={"omit": True})
    # paths relative to the workspace root; absent when the checkpoints could not be taken
    changed_files: list[str] | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class SessionInfo:
    session_id: str
    title: str
    cwd: str
    project_id: str
    model: str
    created_at: str
    modified_at: str
    message_count: int
    usage: Usage
    busy: bool


@attrs.define
class ActiveRequest:
    request_id: str
    session_id: str
    started_at: str
    queued: bool = attrs.field(default=False, metadata={"omit": True})  # waiting for its turn (queue: true)


@attrs.define
class SteerResult:
    accepted: bool  # False: no turn boundary is left (send the text as a new request)


@attrs.define
class SessionAllowsParams:
    session_id: str
    revoke: list[str] | None = None  # tool names whose session-wide allow ends now
    revoke_all: bool = False

    def validate(self) -> None:
        _non_empty("session_id", self.session_id)
        if self.revoke is not None and (len(self.revoke) > 1000 or any(len(name) > 200 for name in self.revoke)):
            raise ParamsError("params.revoke: at most 1000 tool names of at most 200 characters")


@attrs.define
class SessionAllowsResult:
    allowed: list[str]  # the tools this session runs without asking, after the revocation, sorted


@attrs.define
class DetachedRequest:
    request_id: str
    session_id: str


@attrs.define
class McpServerInfo:
    name: str
    state: str  # starting | ready | failed | not_allowed
    tools: int
    error: str | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class SandboxInfo:
    mode: str  # auto | required | off
    active: bool  # shell commands run inside bubblewrap
    reason: str | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class SettingValue:
    value: Any
    source: str  # editor | environment | project | user | default | joined (rules, hooks)


@attrs.define
class SettingsFileInfo:
    source: str  # user | project
    path: str
    exists: bool
    fingerprint: str | None = attrs.field(default=None, metadata={"omit": True})
    consented: bool | None = attrs.field(default=None, metadata={"omit": True})
    held_back: list[str] = attrs.field(factory=list)
    problems: list[str] = attrs.field(factory=list)


@attrs.define
class SettingsInfo:
    values: dict[str, SettingValue]
    files: list[SettingsFileInfo]


@attrs.define
class SettingsConsentParams:
    fingerprint: str
    persist: bool = True

    def validate(self) -> None:
        _non_empty("fingerprint", self.fingerprint)


@attrs.define
class SettingsConsentResult:
    consented: bool
    path: str


@attrs.define
class CommandInfo:  # v3: tunacode.commands.list
    name: str
    description: str
    argument_hint: str
    source: str  # project | user | builtin


@attrs.define
class CommandsListResult:
    commands: list[CommandInfo]


@attrs.define
class BackgroundProcessInfo:
    process_id: str
    session_id: str
    command: str  # its first 200 characters
    pid: int
    running: bool
    exit_code: int | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class StatusResult:
    version: str
    protocol_version: int
    active_requests: list[ActiveRequest]
    session_store: str
    mcp_servers: list[McpServerInfo] = attrs.field(factory=list)
    sandbox: SandboxInfo | None = attrs.field(default=None, metadata={"omit": True})
    background_processes: list[BackgroundProcessInfo] = attrs.field(factory=list)  # bash {background: true}
    settings: SettingsInfo | None = attrs.field(default=None, metadata={"omit": True})  # v3


@attrs.define
class ModelCostInfo:
    """USD per million tokens (the catalog's, agent/catalog.py)."""

    input: float
    output: float
    cache_read: float | None = attrs.field(default=None, metadata={"omit": True})
    cache_write: float | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class ModelInfo:
    id: str
    provider: str
    configured: bool
    # from the model catalog; absent for a model it does not know
    context_window: int | None = attrs.field(default=None, metadata={"omit": True})
    max_output: int | None = attrs.field(default=None, metadata={"omit": True})
    input: list[str] | None = attrs.field(default=None, metadata={"omit": True})  # "text", "image"
    reasoning: bool | None = attrs.field(default=None, metadata={"omit": True})
    cost: ModelCostInfo | None = attrs.field(default=None, metadata={"omit": True})


@attrs.define
class ModelsListResult:
    models: list[ModelInfo]
    default: str


@attrs.define
class AbortResult:
    aborted: int


@attrs.define
class DeleteResult:
    deleted: bool


@attrs.define
class SessionListResult:
    sessions: list[SessionInfo]


@attrs.define
class ChangedFile:
    path: str  # relative to the workspace root
    status: str  # added | modified | deleted
    diff: str  # unified diff (--- a/path, +++ b/path, hunks), cut when long


@attrs.define
class ChangesResult:
    files: list[ChangedFile]
    truncated: bool


@attrs.define
class RewindResult:
    session: SessionInfo
    restored: list[str]


@attrs.define
class RequestMark:
    request_id: str
    first_message: int  # index in `messages` of the request's prompt


@attrs.define
class SessionGetResult:
    session: SessionInfo
    messages: list[dict[str, Any]]
    plan: list[dict[str, Any]] = attrs.field(factory=list)
    requests: list[RequestMark] = attrs.field(factory=list)  # the requests with checkpoints, oldest first
    # with `events: true`: every stored request as its events ({sessionId, requestId, seq, type, ...})
    events: list[dict[str, Any]] | None = attrs.field(default=None, metadata={"omit": True})


# ---------------------------------------------------------------- server -> client requests


@attrs.define
class ApproveParams:
    """`tunacode/approve`: the server asks a rich client to approve one tool call."""

    session_id: str
    request_id: str
    tool_call_id: str
    tool: str
    summary: str
    detail: str
    detail_kind: str  # command | diff | arguments
    truncated: bool = False
    runs_code_outside: bool = False  # the file changed is one a tool runs outside the sandbox (.vscode/tasks.json)
    rule: str | None = attrs.field(default=None, metadata={"omit": True})  # the permission rule that made it ask
    always_allow: list[str] | None = attrs.field(default=None, metadata={"omit": True})  # where "Always allow" can save


# ---------------------------------------------------------------- events

# Events are sent as {sessionId, requestId, seq, type, ...fields}; the agent layer builds
# them with these classes and the server adds the envelope.


@attrs.define
class RequestStart:
    prompt: str
    model: str
    type: str = "request_start"


@attrs.define
class TextDelta:
    text: str
    type: str = "text_delta"


@attrs.define
class ThinkingDelta:
    text: str
    type: str = "thinking_delta"


@attrs.define
class ToolCallEvent:
    tool_call_id: str
    name: str
    args: dict[str, Any]
    status: str = "pending"
    summary: str = ""  # one line, computed by the server (clients show it as is)
    kind: str = "other"  # ACP's ToolKind: read | edit | delete | move | search | execute | fetch | think | other
    title: str = ""  # plain words for a person: "Read calc.py", "Edit calc.py (+1 -1)", "Run python3 check.py"
    type: str = "tool_call"


@attrs.define
class ToolCallUpdate:
    tool_call_id: str
    name: str
    status: str
    result: str | None = attrs.field(default=None, metadata={"omit": True})
    duration_ms: int | None = attrs.field(default=None, metadata={"omit": True})
    denied: bool | None = attrs.field(default=None, metadata={"omit": True})  # final update of a declined call
    exit_code: int | None = attrs.field(default=None, metadata={"omit": True})  # final update of a bash call
    reason: str | None = attrs.field(default=None, metadata={"omit": True})  # failed/cancelled: TOOL_END_REASONS
    type: str = "tool_call_update"


@attrs.define
class TurnEnd:
    turn: int
    usage: Usage
    context_tokens: int = 0  # what the last call sent: provider usage when given, else the estimate
    context_window: int = 0  # the model's context window; 0 when unknown
    type: str = "turn_end"


@attrs.define
class PlanItem:
    content: str
    status: str  # pending | in_progress | completed
    active_form: str


@attrs.define
class Plan:
    items: list[PlanItem]
    type: str = "plan"


@attrs.define
class Compaction:
    before: int  # estimated tokens of what the model was sent before
    after: int  # ... and after the older turns were replaced by a summary
    type: str = "compaction"


@attrs.define
class Notice:
    message: str
    type: str = "notice"


@attrs.define
class RequestQueued:
    position: int  # 1: next to start
    type: str = "request_queued"


@attrs.define
class UserMessageEvent:
    text: str  # a steer, as the model saw it (stored as a user message at that point)
    type: str = "user_message"


@attrs.define
class RequestEnd:
    stop_reason: str
    usage: Usage
    error: ErrorInfo | None = attrs.field(default=None, metadata={"omit": True})
    type: str = "request_end"


Event = (
    RequestStart
    | TextDelta
    | ThinkingDelta
    | ToolCallEvent
    | ToolCallUpdate
    | TurnEnd
    | Plan
    | Compaction
    | Notice
    | RequestEnd
    | RequestQueued
    | UserMessageEvent
)

EVENT_TYPES: dict[str, type] = {
    str(attrs.fields_dict(cls)["type"].default): cls
    for cls in (
        RequestStart, TextDelta, ThinkingDelta, ToolCallEvent, ToolCallUpdate, TurnEnd, Plan, Compaction, Notice,
        RequestEnd, UserMessageEvent,
    )
}


def event_from_wire(body: dict[str, Any]) -> Event | None:
    """An event as sent (its envelope ignored) back as its class; None for an unknown or bad one."""
    kind = body.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    try:
        event: Event = converter.structure(body, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError):
        return None
    return event
