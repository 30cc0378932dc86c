"""What every tool shares: argument validation against its own JSON schema, the abort check, and
the assembly of a tinyagent AgentTool around a plain `run(args, call)` coroutine."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tinyagent.agent_types import AgentTool, AgentToolResult, AgentToolUpdateCallback, TextContent

from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.errors import ToolCancelled, ToolError, retry_hint
from tunacode_lsp.tools.timeouts import timed_out_message

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

logger = logging.getLogger(__name__)


@dataclass
class ToolCall:
    """One invocation: its id, the abort signal and the progress callback tinyagent handed us."""

    tool_call_id: str
    signal: asyncio.Event | None
    on_update: AgentToolUpdateCallback | None

    @property
    def aborted(self) -> bool:
        return self.signal is not None and self.signal.is_set()

    def check_abort(self) -> None:
        if self.aborted:
            raise ToolCancelled()

    def report(self, text: str, **details: Any) -> None:
        if self.on_update is None:
            return
        try:
            self.on_update(AgentToolResult(content=[TextContent(text=text)], details=details))
        except Exception:  # a progress consumer must not break the tool that reports to it
            logger.exception("on_update callback failed")


RunFn = Callable[[dict[str, Any], ToolCall], Awaitable[AgentToolResult]]


def text_result(text: str, **details: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)], details=details)


def _field_name(error: ValidationError) -> str:
    parts: list[str] = []
    for part in error.absolute_path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else str(part))
    return "".join(parts)


def describe_validation_error(error: ValidationError) -> str:
    """A one-line message naming the offending field, for the model to fix its call."""
    where = _field_name(error)
    prefix = f"{where}." if where else ""
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        name = missing[0] if missing else error.validator_value[0]
        return f"missing required field '{prefix}{name}'"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        return (
            f"unexpected field '{clip(prefix + (extra[0] if extra else '?'), 80)}'"
            f" (allowed fields: {', '.join(allowed)})"
        )
    if error.validator == "type":
        got = type(error.instance).__name__
        return f"field '{clip(where, 80) or '(arguments)'}' must be of type {error.validator_value}, got {got}"
    if error.validator == "maxLength":
        return f"field '{clip(where, 80)}' is {len(error.instance):,} characters long, at most {error.validator_value:,} allowed"
    return f"field '{clip(where, 80) or '(arguments)'}': {clip(error.message, 200)}"  # messages quote the value


def validate_args(validator: Draft202012Validator, args: object) -> dict[str, Any]:
    from jsonschema.exceptions import best_match

    if not isinstance(args, dict):
        raise ToolError(retry_hint("The arguments were not a JSON object", "send them as one JSON object"))
    error = best_match(validator.iter_errors(args))
    if error is not None:
        raise ToolError(retry_hint(f"Invalid arguments: {describe_validation_error(error)}", "fix that field"))
    return args


@functools.lru_cache(maxsize=64)
def _validator_for(schema_json: str) -> Draft202012Validator:
    """Check each schema once per process, on the tool's first call (jsonschema's import and
    the schema checks, ~40 ms, are no part of a request's start; tests/unit/tools/
    test_tool_registry.py checks every built-in schema, agent/mcp/manager.py an MCP tool's
    when its server connects)."""

    from jsonschema import Draft202012Validator

    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def make_tool(
    *,
    name: str,
    label: str,
    description: str,
    parameters: dict[str, Any],
    run: RunFn,
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    seconds: float | Callable[[dict[str, Any]], float] | None = None,
    changes_files: bool = False,
) -> AgentTool:
    """Wrap `run` as an AgentTool: check the abort signal, validate, then run.

    `prepare` may normalise common slips of models (a JSON string where an array belongs)
    before validation. `seconds` bounds one call (a number, or one from the checked
    arguments): a call still running then is cancelled and fails with an error naming the
    bound (tools/timeouts.py); `changes_files` says so in that error.
    """
    schema_json = json.dumps(parameters, sort_keys=True)

    async def execute(
        tool_call_id: str,
        args: dict[str, Any],
        signal: asyncio.Event | None = None,
        on_update: AgentToolUpdateCallback | None = None,
    ) -> AgentToolResult:
        call = ToolCall(tool_call_id=tool_call_id, signal=signal, on_update=on_update)
        call.check_abort()
        if prepare is not None and isinstance(args, dict):
            args = prepare(dict(args))
        checked = validate_args(_validator_for(schema_json), args)
        if seconds is None:
            return await run(checked, call)
        bound = seconds(checked) if callable(seconds) else seconds
        limit = asyncio.timeout(bound)
        try:
            async with limit:
                return await run(checked, call)
        except TimeoutError:
            if not limit.expired():
                raise  # the tool's own time-out error, not the bound
            raise ToolError(timed_out_message(name, bound, changes_files=changes_files)) from None

    return AgentTool(
        name=name, label=label, description=description, parameters=parameters, execute=execute
    )
