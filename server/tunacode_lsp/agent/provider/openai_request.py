"""Chat completions, the request: tinyagent's context -> the JSON body and headers.

Pure functions (no I/O): the body is built and encoded on a worker thread for a long
session (openai_chat.stream_openai_chat). Also the chat-completions usage -> tinyagent usage.
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tinyagent import (
    AgentTool,
    AssistantMessage,
    Context,
    ImageContent,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from tinyagent.agent_types import ThinkingContent

from tunacode_lsp.agent.provider.cache_breakpoints import Unit, choose_breakpoints, head_cut
from tunacode_lsp.agent.provider.model import OpenAICompatModel
from tunacode_lsp.core.codec import bulk_decoding
from tunacode_lsp.core.history import PRUNED_MARK_PREFIX, common_prefix


@dataclass(frozen=True)
class EncodedBody:
    """A request body's bytes on the wire, and the body without its messages (the stream
    reads the tool names from it; the converted messages are dropped once encoded)."""

    body: dict[str, Any]
    content: bytes
    quotable: list[str] = field(default_factory=list)  # texts the model did not write (provenance)


def encode_request_body(
    model: OpenAICompatModel, context: Context, options: SimpleStreamOptions
) -> EncodedBody:
    """The request body's bytes, exactly as httpx's `json=` encodes them (pure: it reads
    the context and builds new objects, so it runs on a worker thread).

    Each message's encoded bytes are kept (`MESSAGE_BYTES`, by message object) and joined:
    a turn of a long session converts and encodes only the messages added since the last
    one, not the whole history (~16 MB at 30k messages, one `json.dumps` holding the GIL).
    The messages that carry a cache hint (`add_cache_hints`) are encoded afresh. The same bytes as `json.dumps(build_request_body(...))`
    (tests/unit/test_request_body_reuse.py).

    The cyclic garbage collector is paused meanwhile (`bulk_decoding`): converting a long
    history allocates a container per message and block, which would start collections
    that scan the whole heap while holding the GIL (hundreds of ms at 30k messages, the
    event loop stalled with them); all of it is freed by reference counting right after.
    """

    with bulk_decoding():
        reasoning_back, signatures_back = sends_reasoning_back(model.id), model.provider == "gemini"
        body = build_request_body(model, Context(system_prompt="", messages=[], tools=context.tools), options)
        # The first `"messages":[]` is the key: in an encoded string every quote is escaped.
        head, tail = _encode(body).split(b'"messages":[]', 1)
        with LAST_JOINS.join(context.system_prompt, context.messages, reasoning_back, signatures_back) as joined:
            hinted: dict[int, bytes] = {}
            if wants_cache_hints(model):
                for position in _hint_positions(joined.entries, _cut_entry(context.messages, joined)):
                    source = joined.sources[position]
                    converted = (
                        {"role": "system", "content": context.system_prompt}
                        if source is None
                        else _converted(source, reasoning_back, signatures_back)
                    )
                    if converted is not None:
                        _mark(converted)
                        hinted[position] = _encode(converted)
            content = joined.body(head, tail, hinted)
            quotable = list(joined.quotable)
        del body["messages"]
    return EncodedBody(body, content, quotable)


# A converted message: its encoded bytes, its texts the model did not write, and what the
# cache-hint policy needs of it (cache_breakpoints.Unit).
Encoded = tuple[bytes, tuple[str, ...], Unit]


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _encoded(converted: dict[str, Any]) -> Encoded:
    return _encode(converted), tuple(not_the_models({"messages": [converted]})), _unit(converted)


def _converted(message: Any, reasoning_back: bool, signatures_back: bool) -> dict[str, Any] | None:
    """One tinyagent message as `convert_messages` converts it (None: not sent)."""

    if isinstance(message, UserMessage):
        return {"role": "user", "content": _user_content(message)}
    if isinstance(message, AssistantMessage):
        return _assistant_json(message, reasoning_back=reasoning_back, signatures_back=signatures_back)
    if isinstance(message, ToolResultMessage):
        text = "".join(part.text or "" for part in message.content if isinstance(part, TextContent))
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
    return None


def _hint_positions(entries: list[Encoded], cut: int | None) -> list[int]:
    """Where `add_cache_hints` puts its markers, from the entries' units."""

    return choose_breakpoints([entry[2] for entry in entries], cut)


def _cut_entry(messages: list[Any], joined: Columns) -> int | None:
    """The entry of the first output a pruning step would prune (cache_breakpoints.HeadCut)."""

    cut = head_cut(messages)
    if cut is None or cut >= len(joined.ends):
        return None
    position = joined.ends[cut] - 1
    return position if position >= 0 and joined.sources[position] is messages[cut] else None


class MessageBytes:
    """Each message's `Encoded`, kept while the message object lives (a weak reference
    drops the entry when it is freed, so an id is never reused for another message).

    Messages are not changed once in the history (agent/model_input.py keeps their token
    facts by identity on the same ground); a new object (a merged user message, a pruned
    replacement made anew) is converted anew. Safe across worker threads: one dict
    operation at a time, and an entry is only ever replaced by an equal one.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[int, bool, bool], tuple[weakref.ref[Any], Encoded | None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, message: Any, reasoning_back: bool, signatures_back: bool) -> Encoded | None:
        key = (id(message), reasoning_back, signatures_back)
        kept = self._entries.get(key)
        if kept is not None and kept[0]() is message:
            return kept[1]
        converted = _converted(message, reasoning_back, signatures_back)
        entry = None if converted is None else _encoded(converted)
        try:
            ref: weakref.ref[Any] = weakref.ref(message, functools.partial(self._forget, key))
        except TypeError:
            return entry  # not weakly referable: not kept
        self._entries[key] = (ref, entry)
        return entry

    def _forget(self, key: tuple[int, bool, bool], ref: weakref.ref[Any]) -> None:
        kept = self._entries.get(key)
        if kept is not None and kept[0] is ref:
            self._entries.pop(key, None)


MESSAGE_BYTES = MessageBytes()


class Columns:
    """One body's encoded messages, kept for the next turn: a turn truncates them to the
    longest prefix of the very same message objects and appends what follows, in place
    (O(what changed); a copy of 30k items is a pass over every message object, holding the
    GIL, and a new 30k-item container for the collector's next young pass to scan). The
    messages' bytes are kept joined, so the body is one copy of them. Read and changed only
    under `lock`."""

    def __init__(self, key: tuple[str, bool, bool]) -> None:
        self.key = key  # the system prompt and the two conversion flags
        self.lock = threading.Lock()
        self.messages: list[Any] = []  # the messages joined, in order
        self.ends = array("q")  # ends[i]: how many entries messages[:i + 1] (and the system prompt) gave
        self.sources: list[Any] = []  # what each entry came from (None: the system prompt)
        self.entries: list[Encoded] = []
        self.data = bytearray()  # the entries' bytes joined with ","
        self.data_ends = array("q")  # data_ends[j]: len(data) once entries[:j + 1] were added
        self.quotable: list[str] = []  # the entries' texts the model did not write, in order
        self.quotable_ends = array("q")  # quotable_ends[j]: how many of them entries[:j + 1] gave (arrays: never traversed by the collector)

    def truncate(self, messages: int) -> None:
        """Keep the first `messages` messages and the entries they gave."""

        entries = self.ends[messages - 1] if messages else 0
        del self.messages[messages:], self.ends[messages:], self.sources[entries:], self.entries[entries:]
        del self.data[self.data_ends[entries - 1] if entries else 0 :], self.data_ends[entries:]
        del self.quotable[self.quotable_ends[entries - 1] if entries else 0 :], self.quotable_ends[entries:]

    def add(self, source: Any, entry: Encoded) -> None:
        if self.entries:
            self.data += b","
        self.data += entry[0]
        self.data_ends.append(len(self.data))
        self.sources.append(source)
        self.entries.append(entry)
        self.quotable.extend(entry[1])
        self.quotable_ends.append(len(self.quotable))

    def body(self, head: bytes, tail: bytes, replaced: dict[int, bytes]) -> bytes:
        """`head` + `"messages":[` + the entries' bytes joined with "," + `]` + `tail`, entry
        `j` replaced by `replaced[j]`: one copy of the kept bytes (~4 MB at 30k messages)."""

        views: list[memoryview] = []
        with memoryview(self.data) as data:
            parts: list[Any] = [head, b'"messages":[']
            start = 0
            for position in sorted(replaced):
                begin = self.data_ends[position - 1] + 1 if position else 0  # after the comma
                views.append(data[start:begin])
                parts += [views[-1], replaced[position]]
                start = self.data_ends[position]
            views.append(data[start:])
            parts += [views[-1], b"]", tail]
            content = b"".join(parts)
            for view in views:  # a bytearray viewed cannot be resized: no view outlives this
                view.release()
        return content


BUSY_COLUMNS_WAIT = 0.05  # seconds a join waits for kept columns another thread is building on, then passes them by


class LastJoins:
    """The last few bodies' encoded messages (`Columns`), one per system prompt and history
    (a long session's turns go on from theirs). The most recently used columns that the
    messages extend whole are taken at once: one prefix check a turn, usually."""

    MAX_KEPT = 4

    def __init__(self) -> None:
        self._kept: list[Columns] = []  # most recently used last
        self._lock = threading.Lock()

    @contextmanager
    def join(self, system_prompt: str, messages: list[Any], reasoning_back: bool, signatures_back: bool) -> Iterator[Columns]:
        """The columns of `messages`, held (their lock) while the caller reads them."""

        key = (system_prompt, reasoning_back, signatures_back)
        with self._lock:
            kept = [c for c in self._kept if c.key == key]
        best, same, held = None, 0, None
        for columns in reversed(kept):
            if not columns.lock.acquire(timeout=BUSY_COLUMNS_WAIT):  # another session's first body, 30k conversions: not ours
                continue
            length = common_prefix(messages, columns.messages)
            if length == len(columns.messages):  # the messages extend it: no older one does better, usually
                best, same, held = columns, length, columns
                break
            columns.lock.release()
            if length > same:
                best, same = columns, length
        columns = best if best is not None else Columns(key)
        if held is None:
            columns.lock.acquire()
            if best is not None:
                same = common_prefix(messages, columns.messages)  # again: another turn may have changed them meanwhile
        try:
            columns.truncate(same)
            if not same and system_prompt:
                columns.add(None, _encoded({"role": "system", "content": system_prompt}))
            for message in messages[same:]:
                found = MESSAGE_BYTES.get(message, reasoning_back, signatures_back)
                if found is not None:
                    columns.add(message, found)
                columns.ends.append(len(columns.entries))
            columns.messages.extend(messages[same:])
            with self._lock:
                others = [c for c in self._kept if c is not columns]
                self._kept = [*others[-(self.MAX_KEPT - 1):], columns]
            yield columns
        finally:
            columns.lock.release()

    def clear(self) -> None:
        with self._lock:
            self._kept = []


LAST_JOINS = LastJoins()


def not_the_models(body: dict[str, Any]) -> list[str]:
    """The texts of the request's messages the model did not write (system, user, tool):
    a text tool call found in one of them is a quotation (text_tool_calls.py)."""

    texts: list[str] = []
    for message in body.get("messages", []):
        if not isinstance(message, dict) or message.get("role") == "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return texts


def build_headers(model: OpenAICompatModel, options: SimpleStreamOptions) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if options.api_key:
        headers["Authorization"] = f"Bearer {options.api_key}"
    headers.update(model.headers or {})
    return headers


def build_request_body(
    model: OpenAICompatModel, context: Context, options: SimpleStreamOptions
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(
            context, reasoning_back=sends_reasoning_back(model.id), signatures_back=model.provider == "gemini"
        ),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if context.tools:
        body["tools"] = [_tool_json(tool) for tool in context.tools]
    if wants_cache_hints(model):
        cut = head_cut(context.messages)
        message = None if cut is None else context.messages[cut]
        add_cache_hints(body["messages"], message.tool_call_id if isinstance(message, ToolResultMessage) else None)
    max_tokens = options.max_tokens if options.max_tokens is not None else model.max_tokens
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    return body


# Providers that cache a prompt's prefix only where the request marks it: Anthropic models
# (and Gemini) through OpenRouter. OpenAI, DeepSeek and most others cache automatically and
# get no marker (docs/configuration.md, "Prompt caching").
CACHE_HINT_PREFIXES = ("anthropic/", "google/gemini")
CACHE_CONTROL = {"type": "ephemeral"}


def wants_cache_hints(model: OpenAICompatModel) -> bool:
    return model.provider == "openrouter" and model.id.startswith(CACHE_HINT_PREFIXES)


def add_cache_hints(messages: list[dict[str, Any]], cut_call_id: str | None = None) -> None:
    """Mark cache breakpoints (in place) where the native Anthropic adapter puts them for the
    same history (cache_breakpoints.choose_breakpoints, one unit per message: the system
    prompt, the latest message, the end of the never-pruned head once the input is past it,
    the last pruned output, where the previous call's input ended after a turn wider than
    Anthropic's 20-block lookback). A marker goes on a message's last content part.
    `cut_call_id`: the tool_call_id of the first output a pruning step would prune.
    """

    cut = None if cut_call_id is None else next(
        (n for n, m in enumerate(messages) if m.get("role") == "tool" and m.get("tool_call_id") == cut_call_id), None
    )
    for position in choose_breakpoints([_unit(message) for message in messages], cut):
        _mark(messages[position])


def _unit(message: dict[str, Any]) -> Unit:
    """A converted message as the cache-hint policy sees it; blocks as Anthropic's Messages
    API counts them once OpenRouter converts the message (each tool call and result one)."""

    role, content = message.get("role", ""), message.get("content")
    if role == "assistant":
        blocks = (1 if content else 0) + len(message.get("tool_calls") or ())
    else:
        blocks = len(content) if isinstance(content, list) and content else 1
    markable = (isinstance(content, str) and bool(content)) or (isinstance(content, list) and bool(content) and isinstance(content[-1], dict))
    unit = Unit(role, blocks, markable, _is_pruned_output(message))
    return _UNITS.setdefault(unit, unit)  # a few distinct values: one object each, not one per kept message


_UNITS: dict[Unit, Unit] = {}


def _is_pruned_output(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "tool" and isinstance(content, str) and content.startswith(PRUNED_MARK_PREFIX)


def _mark(message: dict[str, Any]) -> None:
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": CACHE_CONTROL}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        content[-1] = {**content[-1], "cache_control": CACHE_CONTROL}


def convert_messages(
    context: Context, *, reasoning_back: bool = False, signatures_back: bool = False
) -> list[dict[str, Any]]:
    """tinyagent messages -> OpenAI chat messages. Thinking is sent back only with
    `reasoning_back` (as `reasoning_content` of assistant turns that made tool calls)."""

    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            messages.append(_assistant_json(message, reasoning_back=reasoning_back, signatures_back=signatures_back))
        elif isinstance(message, ToolResultMessage):
            text = "".join(part.text or "" for part in message.content if isinstance(part, TextContent))
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
    return messages


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextContent) for part in message.content):
        return "\n".join(part.text or "" for part in message.content if isinstance(part, TextContent))
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextContent):
            parts.append({"type": "text", "text": part.text or ""})
        elif isinstance(part, ImageContent) and part.url:
            parts.append({"type": "image_url", "image_url": {"url": _image_url(part)}})
    return parts


def _image_url(image: ImageContent) -> str:
    url = image.url or ""
    if url.startswith(("data:", "http://", "https://")) or not image.mime_type:
        return url
    return f"data:{image.mime_type};base64,{url}"  # bare base64 payload


# Gemini (its OpenAI-compatible endpoint) signs its tool calls (`extra_content.google.
# thought_signature`); the signature must come back with the call on the next request
# (https://ai.google.dev/gemini-api/docs/thought-signatures). Kept on the stored call block.
THOUGHT_SIGNATURE = "thought_signature"


def _tool_call_json(block: ToolCallContent, *, signatures_back: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(block.arguments)},
    }
    signature = getattr(block, THOUGHT_SIGNATURE, None)
    if signatures_back and isinstance(signature, str) and signature:
        call["extra_content"] = {"google": {THOUGHT_SIGNATURE: signature}}
    return call


def _assistant_json(message: AssistantMessage, *, reasoning_back: bool = False, signatures_back: bool = False) -> dict[str, Any]:
    """`signatures_back`: Gemini's tool-call thought signatures go back with their calls (to
    Gemini only: another provider may refuse the unknown field)."""

    text = "".join(
        block.text or "" for block in message.content if isinstance(block, TextContent)
    )
    tool_calls = [
        _tool_call_json(block, signatures_back=signatures_back)
        for block in message.content
        if isinstance(block, ToolCallContent)
    ]
    result: dict[str, Any] = {"role": "assistant", "content": text or (None if tool_calls else "")}
    if tool_calls:
        result["tool_calls"] = tool_calls
        if reasoning_back:
            result["reasoning_content"] = "".join(
                block.thinking or "" for block in message.content if isinstance(block, ThinkingContent)
            )
    return result


def sends_reasoning_back(model_id: str | None) -> bool:
    """DeepSeek's thinking models require the reasoning of an assistant turn that made tool
    calls to come back with it (HTTP 400 "Missing `reasoning_content` field" otherwise);
    other providers do not take the field, so it is sent to DeepSeek models only."""

    return "deepseek" in (model_id or "").lower()


def _tool_json(tool: AgentTool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters or {"type": "object", "properties": {}},
        },
    }


# ---------------------------------------------------------------- usage


def convert_usage(raw: dict[str, Any] | None) -> dict[str, Any]:
    """OpenAI usage -> tinyagent usage. Cost is only what the provider reports (OpenRouter)."""

    raw = raw or {}
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    # Cache writes: OpenRouter's prompt_tokens_details.cache_write_tokens, or Anthropic's
    # cache_creation_input_tokens passed through; both are part of prompt_tokens.
    written = _int(details.get("cache_write_tokens")) if isinstance(details, dict) else 0
    written = written or _int(raw.get("cache_creation_input_tokens"))
    total = _int(raw.get("total_tokens")) or prompt + completion
    cost = raw.get("cost")
    cost_total = _float(cost)
    return {
        "input": max(0, prompt - cached - written),
        "output": completion,
        "cache_read": cached,
        "cache_write": written,
        "total_tokens": total,
        "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": cost_total},
    }


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _float(value: object) -> float:
    """A reported cost as a float; 0 for what is not a number or is an integer no float holds."""

    if not isinstance(value, int | float) or isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except OverflowError:
        return 0.0

