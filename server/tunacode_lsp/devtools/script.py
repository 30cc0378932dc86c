"""The scripted model's script format: parse and validate JSON into typed turns and steps.

A script is ``{"turns": [Turn, ...], "on_exhausted": "error" | "repeat_last"}`` (a bare
list is shorthand for ``{"turns": [...]}``). A turn is ``{"steps": [Step, ...]}`` or a
single step. Every problem is reported as a ``ScriptError`` naming the turn, step and
field, e.g. ``turns[1].steps[0].chunks: must be an integer >= 1, got 0``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

OnExhausted: TypeAlias = Literal["error", "repeat_last"]
FinishReason: TypeAlias = Literal["stop", "tool_calls", "length"]

FINISH_REASONS: tuple[str, ...] = ("stop", "tool_calls", "length")
ON_EXHAUSTED: tuple[str, ...] = ("error", "repeat_last")
THINKING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning")


class ScriptError(ValueError):
    """A script that cannot be used; the message names where and why."""


@dataclass(frozen=True)
class TextStep:
    text: str
    chunks: int = 1
    delay: float = 0.0


@dataclass(frozen=True)
class ThinkingStep:
    thinking: str
    chunks: int = 1
    delay: float = 0.0
    field: str = "reasoning_content"  # the delta key: reasoning_content or reasoning


@dataclass(frozen=True)
class ToolCallStep:
    name: str
    arguments: dict[str, Any] | str  # a string is sent verbatim (may be malformed JSON)
    id: str | None = None
    chunks: int = 1
    delay: float = 0.0

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class UsageStep:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    cost: float | None = None


@dataclass(frozen=True)
class FinishStep:
    reason: FinishReason


@dataclass(frozen=True)
class ErrorStep:
    status: int
    body: dict[str, Any] | str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DropStep:
    pass


@dataclass(frozen=True)
class StallStep:
    seconds: float


@dataclass(frozen=True)
class RawStep:
    data: str


@dataclass(frozen=True)
class DelayStep:
    seconds: float


Step: TypeAlias = (
    TextStep
    | ThinkingStep
    | ToolCallStep
    | UsageStep
    | FinishStep
    | ErrorStep
    | DropStep
    | StallStep
    | RawStep
    | DelayStep
)

CONTENT_STEPS = (TextStep, ThinkingStep, ToolCallStep, RawStep)


@dataclass(frozen=True)
class Turn:
    steps: tuple[Step, ...]
    replay: str | None = None  # a whole recorded response body, sent byte for byte

    @property
    def error(self) -> ErrorStep | None:
        last = self.steps[-1] if self.steps else None
        return last if isinstance(last, ErrorStep) else None

    @property
    def tool_calls(self) -> tuple[ToolCallStep, ...]:
        return tuple(step for step in self.steps if isinstance(step, ToolCallStep))

    @property
    def usage(self) -> UsageStep | None:
        return next((step for step in self.steps if isinstance(step, UsageStep)), None)

    @property
    def finish(self) -> FinishStep | None:
        return next((step for step in self.steps if isinstance(step, FinishStep)), None)


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    on_exhausted: OnExhausted = "error"


ScriptSource: TypeAlias = "Script | Mapping[str, Any] | list[Any] | str | Path"


# ---------------------------------------------------------------- loading


def load_script(source: ScriptSource) -> Script:
    """Load a script from a Script, parsed JSON, JSON text, or a path to a JSON file.

    A ``str`` that starts with ``{`` or ``[`` (after whitespace) is JSON text; any other
    ``str`` is a path.
    """

    if isinstance(source, Script):
        return source
    if isinstance(source, Path) or (isinstance(source, str) and source.lstrip()[:1] not in "{["):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScriptError(f"cannot read script file {path}: {exc.strerror or exc}") from exc
        return parse_script(_decode_json(text, where=str(path)))
    if isinstance(source, str):
        return parse_script(_decode_json(source, where="script"))
    return parse_script(source)


def _decode_json(text: str, *, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{where}: not valid JSON: {exc}") from exc


def parse_script(data: Any) -> Script:
    """Validate parsed JSON (dict or list) into a Script."""

    if isinstance(data, list):
        data = {"turns": data}
    if not isinstance(data, Mapping):
        raise ScriptError(f"script: must be an object or a list of turns, got {_kind(data)}")
    _reject_unknown(data, {"turns", "on_exhausted"}, where="script")
    raw_turns = data.get("turns")
    if not isinstance(raw_turns, list):
        raise ScriptError(f"script.turns: must be a list, got {_kind(raw_turns)}")
    on_exhausted = data.get("on_exhausted", "error")
    if on_exhausted not in ON_EXHAUSTED:
        raise ScriptError(
            f"script.on_exhausted: must be one of {', '.join(ON_EXHAUSTED)}, got {on_exhausted!r}"
        )
    turns = tuple(_parse_turn(raw, where=f"turns[{i}]") for i, raw in enumerate(raw_turns))
    return Script(turns=turns, on_exhausted=on_exhausted)


def _parse_turn(raw: Any, *, where: str) -> Turn:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}: must be an object, got {_kind(raw)}")
    if "replay" in raw:
        _reject_unknown(raw, {"replay"}, where=where)
        return Turn(steps=(), replay=_string(raw, "replay", where=where))
    if "steps" in raw:
        _reject_unknown(raw, {"steps"}, where=where)
        raw_steps = raw["steps"]
        if not isinstance(raw_steps, list) or not raw_steps:
            raise ScriptError(f"{where}.steps: must be a non-empty list, got {_kind(raw_steps)}")
        steps = tuple(
            _parse_step(step, where=f"{where}.steps[{j}]") for j, step in enumerate(raw_steps)
        )
    else:
        steps = (_parse_step(raw, where=where),)
    _check_turn_order(steps, where=where)
    return Turn(steps=steps)


def _check_turn_order(steps: tuple[Step, ...], *, where: str) -> None:
    """Reject orders that cannot mean anything on the wire."""

    for kind, name in ((FinishStep, "finish"), (UsageStep, "usage"), (ErrorStep, "error")):
        if sum(isinstance(step, kind) for step in steps) > 1:
            raise ScriptError(f"{where}: at most one {name} step per turn")
    for index, step in enumerate(steps):
        if isinstance(step, DropStep) and index != len(steps) - 1:
            raise ScriptError(f"{where}.steps[{index + 1}]: steps after a drop are never sent")
        if isinstance(step, ErrorStep):
            if index != len(steps) - 1:
                raise ScriptError(f"{where}.steps[{index}]: an error step must be the last step")
            for other in steps[:index]:
                if not isinstance(other, DelayStep | StallStep):
                    raise ScriptError(
                        f"{where}.steps[{index}]: an error answers the whole turn; only delay "
                        "and stall steps may come before it"
                    )


# ---------------------------------------------------------------- steps

_STEP_KINDS = ("text", "thinking", "tool_call", "usage", "finish", "error", "drop", "stall", "raw")


def _parse_step(raw: Any, *, where: str) -> Step:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}: a step must be an object, got {_kind(raw)}")
    kinds = [key for key in _STEP_KINDS if key in raw]
    if len(kinds) > 1:
        raise ScriptError(f"{where}: a step has exactly one kind, got {', '.join(kinds)}")
    if not kinds:
        if "delay" in raw:
            _reject_unknown(raw, {"delay"}, where=where)
            return DelayStep(seconds=_seconds(raw, "delay", where=where))
        unknown = ", ".join(sorted(map(str, raw))) or "nothing"
        raise ScriptError(
            f"{where}: unknown step (expected one of {', '.join(_STEP_KINDS)}, delay), got {unknown}"
        )
    return _STEP_PARSERS[kinds[0]](raw, where)  # type: ignore[return-value]  # the table maps each kind to its parser


def _parse_text(raw: Mapping[str, Any], where: str) -> TextStep:
    _reject_unknown(raw, {"text", "chunks", "delay"}, where=where)
    return TextStep(
        text=_string(raw, "text", where=where),
        chunks=_chunks(raw, where=where),
        delay=_seconds(raw, "delay", where=where, default=0.0),
    )


def _parse_thinking(raw: Mapping[str, Any], where: str) -> ThinkingStep:
    _reject_unknown(raw, {"thinking", "chunks", "delay", "field"}, where=where)
    delta_field = raw.get("field", "reasoning_content")
    if delta_field not in THINKING_FIELDS:
        raise ScriptError(
            f"{where}.field: must be one of {', '.join(THINKING_FIELDS)}, got {delta_field!r}"
        )
    return ThinkingStep(
        thinking=_string(raw, "thinking", where=where),
        chunks=_chunks(raw, where=where),
        delay=_seconds(raw, "delay", where=where, default=0.0),
        field=delta_field,
    )


def _parse_tool_call(raw: Mapping[str, Any], where: str) -> ToolCallStep:
    _reject_unknown(raw, {"tool_call", "chunks", "delay"}, where=where)
    call = raw["tool_call"]
    call_where = f"{where}.tool_call"
    if not isinstance(call, Mapping):
        raise ScriptError(f"{call_where}: must be an object, got {_kind(call)}")
    _reject_unknown(call, {"id", "name", "arguments"}, where=call_where)
    name = _string(call, "name", where=call_where)
    if not name:
        raise ScriptError(f"{call_where}.name: must not be empty")
    call_id = call.get("id")
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        raise ScriptError(f"{call_where}.id: must be a non-empty string, got {_kind(call_id)}")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, Mapping | str):
        raise ScriptError(
            f"{call_where}.arguments: must be an object or a string, got {_kind(arguments)}"
        )
    return ToolCallStep(
        name=name,
        arguments=dict(arguments) if isinstance(arguments, Mapping) else arguments,
        id=call_id,
        chunks=_chunks(raw, where=where),
        delay=_seconds(raw, "delay", where=where, default=0.0),
    )


def _parse_usage(raw: Mapping[str, Any], where: str) -> UsageStep:
    _reject_unknown(raw, {"usage"}, where=where)
    usage = raw["usage"]
    usage_where = f"{where}.usage"
    if not isinstance(usage, Mapping):
        raise ScriptError(f"{usage_where}: must be an object, got {_kind(usage)}")
    _reject_unknown(
        usage, {"prompt_tokens", "completion_tokens", "cached_tokens", "cost"}, where=usage_where
    )
    cost = usage.get("cost")
    if cost is not None and (not isinstance(cost, int | float) or isinstance(cost, bool)):
        raise ScriptError(f"{usage_where}.cost: must be a number, got {_kind(cost)}")
    step = UsageStep(
        prompt_tokens=_count(usage, "prompt_tokens", where=usage_where),
        completion_tokens=_count(usage, "completion_tokens", where=usage_where),
        cached_tokens=_count(usage, "cached_tokens", where=usage_where) or 0,
        cost=float(cost) if cost is not None else None,
    )
    if step.prompt_tokens is not None and step.cached_tokens > step.prompt_tokens:
        raise ScriptError(f"{usage_where}.cached_tokens: must not exceed prompt_tokens")
    return step


def _parse_finish(raw: Mapping[str, Any], where: str) -> FinishStep:
    _reject_unknown(raw, {"finish"}, where=where)
    reason = raw["finish"]
    if reason not in FINISH_REASONS:
        raise ScriptError(
            f"{where}.finish: must be one of {', '.join(FINISH_REASONS)}, got {reason!r}"
        )
    return FinishStep(reason=reason)


def _parse_error(raw: Mapping[str, Any], where: str) -> ErrorStep:
    _reject_unknown(raw, {"error"}, where=where)
    error = raw["error"]
    error_where = f"{where}.error"
    if not isinstance(error, Mapping):
        raise ScriptError(f"{error_where}: must be an object, got {_kind(error)}")
    _reject_unknown(error, {"status", "body", "headers"}, where=error_where)
    status = error.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        raise ScriptError(f"{error_where}.status: must be an HTTP error status 400-599, got {status!r}")
    body = error.get("body", {"error": {"message": f"scripted error {status}"}})
    if not isinstance(body, Mapping | str):
        raise ScriptError(f"{error_where}.body: must be an object or a string, got {_kind(body)}")
    headers = error.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ScriptError(f"{error_where}.headers: must be an object of strings")
    return ErrorStep(
        status=status,
        body=dict(body) if isinstance(body, Mapping) else body,
        headers=dict(headers),
    )


def _parse_drop(raw: Mapping[str, Any], where: str) -> DropStep:
    _reject_unknown(raw, {"drop"}, where=where)
    if raw["drop"] is not True:
        raise ScriptError(f"{where}.drop: must be true, got {raw['drop']!r}")
    return DropStep()


def _parse_stall(raw: Mapping[str, Any], where: str) -> StallStep:
    _reject_unknown(raw, {"stall"}, where=where)
    return StallStep(seconds=_seconds(raw, "stall", where=where))


def _parse_raw(raw: Mapping[str, Any], where: str) -> RawStep:
    _reject_unknown(raw, {"raw"}, where=where)
    data = _string(raw, "raw", where=where)
    if not data:
        raise ScriptError(f"{where}.raw: must not be empty")
    return RawStep(data=data)


_STEP_PARSERS = {
    "text": _parse_text,
    "thinking": _parse_thinking,
    "tool_call": _parse_tool_call,
    "usage": _parse_usage,
    "finish": _parse_finish,
    "error": _parse_error,
    "drop": _parse_drop,
    "stall": _parse_stall,
    "raw": _parse_raw,
}


# ---------------------------------------------------------------- field helpers


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _reject_unknown(raw: Mapping[str, Any], allowed: set[str], *, where: str) -> None:
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise ScriptError(
            f"{where}: unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})"
        )


def _string(raw: Mapping[str, Any], key: str, *, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise ScriptError(f"{where}.{key}: must be a string, got {_kind(value)}")
    return value


def _chunks(raw: Mapping[str, Any], *, where: str) -> int:
    value = raw.get("chunks", 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ScriptError(f"{where}.chunks: must be an integer >= 1, got {value!r}")
    return value


def _count(raw: Mapping[str, Any], key: str, *, where: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScriptError(f"{where}.{key}: must be an integer >= 0, got {value!r}")
    return value


def _seconds(
    raw: Mapping[str, Any], key: str, *, where: str, default: float | None = None
) -> float:
    value = raw.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ScriptError(f"{where}.{key}: must be a number of seconds >= 0, got {value!r}")
    return float(value)
