"""Message dumps <-> tinyagent messages <-> bytes.

A stored message is tinyagent's own dump, `msg.model_dump(exclude_none=True)`, encoded
with orjson. Loading validates the dump against tinyagent's pydantic model for its role.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import orjson
from pydantic import BaseModel, ValidationError
from tinyagent.agent_types import AssistantMessage, ToolResultMessage, UserMessage

from tunacode_lsp.core.errors import MessageFormatError
from tunacode_lsp.core.text import shown

MessageModel = UserMessage | AssistantMessage | ToolResultMessage

MODEL_BY_ROLE: dict[str, type[MessageModel]] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool_result": ToolResultMessage,
}


BLOCK_TYPES_BY_ROLE: dict[str, tuple[str, ...]] = {
    "user": ("text", "image"),
    "assistant": ("text", "thinking", "tool_call"),
    "tool_result": ("text", "image"),
}


MEMBER_BY_BLOCK_TYPE = {
    "text": "TextContent",
    "image": "ImageContent",
    "thinking": "ThinkingContent",
    "tool_call": "ToolCallContent",
}


def _checked_role(dump: object) -> str:
    """The role of a dump that is an object with a known role, or MessageFormatError."""
    if not isinstance(dump, dict):
        raise MessageFormatError(f"expected an object, got {type(dump).__name__}")
    role = dump.get("role")
    if not isinstance(role, str) or role not in MODEL_BY_ROLE:
        known = ", ".join(MODEL_BY_ROLE)
        raise MessageFormatError(f"unknown role {shown(role)} (expected one of {known})", where="role")
    return role


def load_message(dump: object) -> MessageModel:
    """Validate a dump into the tinyagent message of its role, or raise MessageFormatError."""
    role = _checked_role(dump)
    dump = cast(dict[str, Any], dump)  # _checked_role saw a dict
    model = MODEL_BY_ROLE[role]
    _check_block_types(dump, role)
    try:
        return model.model_validate(dump)
    except ValidationError as exc:
        where, reason = _describe(exc, dump)
        raise MessageFormatError(reason, where=where) from None


_FIELD_TYPES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "text": {"text": str},
    "thinking": {"thinking": str},
    "tool_call": {"id": str, "name": str, "arguments": dict},
    "image": {},
}


def check_shape(dump: object) -> None:
    """A fast structural check of a stored dump (role, content blocks, the fields the
    history and the model rely on); raises MessageFormatError like load_message.

    Rows read back were fully validated when written, so loading a long session checks
    their shape only (one pass, no pydantic); full validation happens once, when the agent
    is built from them."""
    role = _checked_role(dump)
    dump = cast(dict[str, Any], dump)  # _checked_role saw a dict
    allowed = BLOCK_TYPES_BY_ROLE[role]
    content = dump.get("content", [])
    if type(content) is not list:
        raise MessageFormatError("content must be a list", where="content")
    for index, block in enumerate(content):
        if block is None and role == "assistant":
            continue
        kind = block.get("type", "text") if type(block) is dict else None
        if kind == "text" and type(block.get("text")) is str:
            continue  # the common block, allowed in every role: the fast path
        if kind not in allowed:
            _check_block_types(dump, role)  # raises with the full message
        for field, expected in _FIELD_TYPES[cast(str, kind)].items():
            value = block.get(field)
            if value is not None and not isinstance(value, expected):
                raise MessageFormatError(f"{field} has the wrong type", where=f"content[{index}].{field}")
    if role == "tool_result" and not isinstance(dump.get("tool_call_id"), str | None):
        raise MessageFormatError("tool_call_id must be a string", where="tool_call_id")


def dump_message(message: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """The stored form of a message: tinyagent's dump. A dict is validated and copied."""
    if isinstance(message, dict):
        load_message(message)
        return decode(encode(message))
    if not isinstance(message, (UserMessage, AssistantMessage, ToolResultMessage)):
        raise MessageFormatError(f"not a tinyagent message: {type(message).__name__}")
    return message.model_dump(exclude_none=True)


def encode(dump: dict[str, Any]) -> bytes:
    """JSON bytes of a dump; a value JSON cannot hold raises MessageFormatError."""
    try:
        return orjson.dumps(dump)
    except orjson.JSONEncodeError as exc:
        raise MessageFormatError(f"not JSON-serialisable: {exc}") from None


def decode(data: bytes | str) -> Any:
    """Parse JSON bytes; bad JSON raises MessageFormatError."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MessageFormatError(f"bad JSON: {exc}") from None


_pause_lock = threading.Lock()
_pauses = 0  # threads inside bulk_decoding(); the GC is re-enabled when the last leaves
_resume_gc = False  # whether the first of them found the GC enabled


@contextmanager
def bulk_decoding() -> Iterator[None]:
    """Pause the cyclic garbage collector while many dumps are decoded.

    Decoding 30,000 messages creates ~300,000 containers, and the collector runs every 700
    of them, each pass scanning the young objects and, every tenth/hundredth pass, the
    older generations too (the whole server's heap): about 60% of the decoding time
    (125 ms -> 50 ms for 30k messages). Nothing decoded here is garbage yet, so the
    passes found nothing. Process-wide and nestable across threads: the collector is
    re-enabled when the last thread leaves, and only if it was enabled before.
    """
    global _pauses, _resume_gc
    with _pause_lock:
        if _pauses == 0:
            _resume_gc = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume_gc:
                gc.enable()


_froze_before = False  # freeze_long_lived has run in this process


def freeze_long_lived() -> None:
    """Everything alive now out of every later collector pass: a full collection first (no
    garbage is frozen; the first call of a process collects the young generations only), then
    `gc.freeze`. What an earlier call, or start-up
    (lsp/start_up_gc.py), froze is unfrozen first and collected with the rest, so an object
    frozen once and dead since (a request's own cycles: its run and tinyagent's `Agent`) waits
    for the next call, not for ever.

    For a long history just validated (30k messages: ~300k objects that live as long as the
    session is used): the full passes after it, ~0.5 s each holding the GIL, skip it. Frozen
    objects are still freed by reference counting when released (the session's history is:
    agent/runner.py `_release_history`, agent/history_models.py)."""

    global _froze_before
    if _froze_before:
        gc.unfreeze()
        gc.collect()
    else:
        # The first call of a process: only the young generations (a full pass here was
        # ~40-60 ms on a server's first request resuming 30k messages, bench `resume`). What
        # the oldest generation holds dead now is frozen with the rest and collected by the
        # next call, as a request's own cycles are.
        gc.collect(1)
    gc.freeze()
    _froze_before = True


def _check_block_types(dump: dict[str, Any], role: str) -> None:
    content = dump.get("content")
    if not isinstance(content, list):
        return  # pydantic names the problem
    allowed = BLOCK_TYPES_BY_ROLE[role]
    for index, block in enumerate(content):
        if block is None and role == "assistant":
            continue
        kind = block.get("type", "text") if isinstance(block, dict) else None
        if kind not in allowed:
            got = repr(kind) if isinstance(block, dict) else type(block).__name__
            raise MessageFormatError(
                f"{got} blocks are not allowed in {role} messages (expected {', '.join(allowed)})",
                where=f"content[{index}]" + (".type" if isinstance(block, dict) else ""),
            )


def _is_selected_member(loc: tuple[Any, ...], dump: dict[str, Any]) -> bool:
    if len(loc) < 3 or loc[0] != "content" or not isinstance(loc[1], int):
        return True
    member = loc[2]
    if not isinstance(member, str) or not member[:1].isupper():
        return True
    block = dump["content"][loc[1]]
    kind = block.get("type", "text") if isinstance(block, dict) else None
    return member == MEMBER_BY_BLOCK_TYPE.get(cast(str, kind))


def _describe(exc: ValidationError, dump: dict[str, Any]) -> tuple[str, str]:
    """The first error's path (list indexes in brackets, union member names left out) and message.

    For a content block, only errors of the union member its "type" selects count.
    """
    errors = exc.errors()
    relevant = [error for error in errors if _is_selected_member(error["loc"], dump)]
    first = (relevant or errors)[0]
    where = ""
    for part in first["loc"]:
        if isinstance(part, int):
            where += f"[{part}]"
        elif not part[:1].isupper():  # "TextContent" etc.: pydantic's union member tags
            where += f".{part}" if where else part
    return where, first["msg"]
