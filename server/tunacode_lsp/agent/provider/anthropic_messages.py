"""Anthropic Messages (`anthropic:`, `bedrock:`, `vertex:`) on the official `anthropic` SDK.

The request: tools, system and messages in Anthropic's shape, with `cache_control`
breakpoints on the stable prefix (the last tool, the system prompt, the latest turn), so a
session's next call reads its whole prefix back from the cache. Once old tool outputs are
pruned (core/history.py), a pruning step changes the input only after the never-pruned
head: from when the input passes the head, the breakpoints are the system prompt (whose
prefix holds the tools), the end of the head, the last pruned output once one is and the latest turn (Anthropic's limit is 4), so the call
that takes a step still reads the head from the cache (cache_breakpoints.py); thinking (setting
`thinkingBudget`) with each thinking block's signature sent back unchanged. The stream:
the SDK's raw events -> the shared state machine (assembly.py); usage with cache reads and
writes. Bedrock and Vertex use the SDK's own clients (extras `bedrock`, `vertex`).
"""

from __future__ import annotations

import asyncio
import re
import weakref
from typing import Any

from tinyagent import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from tinyagent.agent_types import ThinkingContent

from tunacode_lsp.agent.provider.assembly import empty_usage
from tunacode_lsp.agent.provider.cache_breakpoints import head_cut, place_breakpoints
from tunacode_lsp.agent.provider.model import ProviderModel
from tunacode_lsp.agent.provider.sdk_stream import MissingExtra, SdkStream, sdk_timeout, shared_http_client

DEFAULT_MAX_TOKENS = 16_384
THINKING_HEADROOM = 8_192  # output tokens left for the answer beyond the thinking budget
REDACTED = "redacted"  # extra field on a ThinkingContent that holds a redacted_thinking block's data
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
EXTRAS = {"bedrock": ("bedrock", "boto3"), "vertex": ("vertex", "google-auth")}
# what to check when the provider answers 401/403: the variable (or the credentials) to set
KEY_HINTS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "bedrock": "your AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or AWS_BEARER_TOKEN_BEDROCK",
    "vertex": "your Google credentials: GOOGLE_APPLICATION_CREDENTIALS or `gcloud auth application-default login`",
}


async def stream_anthropic(model: Model, context: Context, options: SimpleStreamOptions) -> AnthropicStream:
    """tinyagent StreamFn over Anthropic Messages (streaming)."""

    if not isinstance(model, ProviderModel):
        model = ProviderModel.model_validate(model.model_dump())
    params = build_params(model, context, options)
    api_key = options.api_key

    async def open_stream() -> Any:
        client = make_client(model, api_key)
        return await client.messages.create(**params)

    hint = KEY_HINTS.get(model.provider)
    return AnthropicStream(model=model, signal=options.signal, open_stream=open_stream, key_hint=hint)


# Bedrock and Vertex clients per event loop, kept across calls: each holds its resolved
# credentials (a Vertex access token is minted by google-auth on the client's first call and
# reused until it expires; a new client per call fetched a new token for every model call).
_cloud_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def make_client(model: ProviderModel, api_key: str | None) -> Any:
    """The SDK client of the model's provider (no retries of its own, our httpx2 client)."""

    if model.provider not in ("bedrock", "vertex"):
        return _new_client(model, api_key)
    clients = _cloud_clients.setdefault(asyncio.get_running_loop(), {})
    http = shared_http_client()  # a new shared client (the old one closed) gets new SDK clients
    key = (model.provider, tuple(sorted((model.headers or {}).items())), model.read_timeout, model.connect_timeout, id(http))
    client = clients.get(key)
    if client is None:
        if len(clients) >= 16:
            clients.clear()
        client = clients[key] = _new_client(model, api_key)
    return client


def _new_client(model: ProviderModel, api_key: str | None) -> Any:
    common: dict[str, Any] = {
        "max_retries": 0,
        "timeout": sdk_timeout(model),
        "http_client": shared_http_client(),
        "default_headers": model.headers or None,
    }
    try:
        if model.provider == "bedrock":
            import anthropic

            return anthropic.AsyncAnthropicBedrock(**common)
        if model.provider == "vertex":
            import anthropic

            return anthropic.AsyncAnthropicVertex(**common)
        import anthropic

        return anthropic.AsyncAnthropic(api_key=api_key, base_url=model.base_url or None, **common)
    except ImportError as exc:  # pragma: no cover - depends on what is installed
        raise missing_extra(model.provider, exc) from None


def missing_extra(provider: str, exc: ImportError) -> MissingExtra:
    extra, package = EXTRAS.get(provider, ("anthropic", "anthropic"))
    return MissingExtra(
        f"{provider}: models need {package}, which is not installed ({exc}); "
        f"install it with: pip install 'tunacode-lsp[{extra}]'"
    )


# ---------------------------------------------------------------- the request


def build_params(model: ProviderModel, context: Context, options: SimpleStreamOptions) -> dict[str, Any]:
    budget = model.thinking_budget
    max_tokens = options.max_tokens or model.max_tokens or DEFAULT_MAX_TOKENS
    params: dict[str, Any] = {"model": model.id, "messages": convert_messages(context), "stream": True}
    if budget > 0:
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        max_tokens = max(max_tokens, budget + THINKING_HEADROOM)
    elif options.temperature is not None:
        params["temperature"] = options.temperature  # not allowed with thinking
    params["max_tokens"] = max_tokens
    if context.system_prompt:
        params["system"] = [{"type": "text", "text": context.system_prompt}]
    if context.tools:
        params["tools"] = [
            {
                "name": tool.name,
                "description": tool.description or "",
                "input_schema": tool.parameters or {"type": "object", "properties": {}},
            }
            for tool in context.tools
        ]
    place_breakpoints(params, _cut_call_id(context))
    return params


def _cut_call_id(context: Context) -> str | None:
    """The tool_use_id of the first output a pruning step would prune (agent/model_input.py)."""

    cut = head_cut(context.messages)
    message = None if cut is None else context.messages[cut]
    return safe_id(message.tool_call_id) if isinstance(message, ToolResultMessage) else None


def convert_messages(context: Context) -> list[dict[str, Any]]:
    """tinyagent messages -> Anthropic messages; consecutive user-side messages (tool
    results, a prompt after them) merge into one, as the API wants."""

    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in context.messages:
        if isinstance(message, UserMessage):
            add("user", [block for part in message.content if (block := _user_block(part)) is not None])
        elif isinstance(message, AssistantMessage):
            add("assistant", _assistant_blocks(message))
        elif isinstance(message, ToolResultMessage):
            content = [block for part in message.content if (block := _user_block(part)) is not None]
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": safe_id(message.tool_call_id),
                "content": content or [{"type": "text", "text": "(no output)"}],
            }
            if message.is_error:
                result["is_error"] = True
            add("user", [result])
    return out


def _user_block(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ImageContent) and part.url:
        url = part.url
        if url.startswith(("http://", "https://")):
            return {"type": "image", "source": {"type": "url", "url": url}}
        mime, data = part.mime_type or "image/png", url
        if url.startswith("data:"):
            header, _, data = url.partition(",")
            mime = header[5:].split(";", 1)[0] or mime
        return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
    return None


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    same_provider = message.api == "anthropic-messages"
    for block in message.content:
        if isinstance(block, ThinkingContent):
            redacted = getattr(block, REDACTED, None)
            if same_provider and isinstance(redacted, str):
                blocks.append({"type": "redacted_thinking", "data": redacted})
            elif same_provider and block.thinking_signature:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking or "", "signature": block.thinking_signature}
                )
            # thinking without an Anthropic signature (another provider's) is not sent
        elif isinstance(block, TextContent) and block.text:
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallContent):
            blocks.append(
                {"type": "tool_use", "id": safe_id(block.id), "name": block.name or "", "input": block.arguments or {}}
            )
    return blocks


def safe_id(call_id: str | None) -> str:
    """A tool call id Anthropic accepts (^[a-zA-Z0-9_-]+$): another provider's ids may not be."""

    return (_ID_UNSAFE.sub("_", call_id or "") or "call")[:64]


# ---------------------------------------------------------------- the stream


class AnthropicStream(SdkStream):
    """The SDK's raw stream events -> tinyagent events."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._raw_usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._blocks: dict[int, str] = {}  # stream index -> block type
        self._message_stopped = False

    def _usage(self) -> dict[str, Any]:
        usage = empty_usage()
        raw = self._raw_usage
        usage["input"] = raw.get("input_tokens", 0)
        usage["output"] = raw.get("output_tokens", 0)
        usage["cache_read"] = raw.get("cache_read_input_tokens", 0)
        usage["cache_write"] = raw.get("cache_creation_input_tokens", 0)
        usage["total_tokens"] = sum(usage[k] for k in ("input", "output", "cache_read", "cache_write"))
        return usage

    def _take_usage(self, usage: Any) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, name, None)
            if isinstance(value, int) and not isinstance(value, bool):
                self._raw_usage[name] = value

    def _on_event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._take_usage(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            self._block_start(event.index, event.content_block)
        elif kind == "content_block_delta":
            self._block_delta_event(event.index, event.delta)
        elif kind == "content_block_stop":
            self._block_stop(event.index)
        elif kind == "message_delta":
            self._take_usage(getattr(event, "usage", None))
            reason = getattr(event.delta, "stop_reason", None)
            if isinstance(reason, str):
                self._stop_reason = reason
        elif kind == "message_stop":
            self._message_stopped = True
            self._end_blocks()
            self._finish_message()

    def _block_start(self, index: int, block: Any) -> None:
        block_type = getattr(block, "type", "")
        self._blocks[index] = block_type
        if block_type == "tool_use":
            self._tool_call(index, block.id, block.name, None)
        elif block_type == "redacted_thinking":
            thinking = ThinkingContent(thinking="")
            setattr(thinking, REDACTED, block.data)
            self._add_block(thinking)
        elif block_type == "text" and getattr(block, "text", ""):
            self._block_delta("text", block.text)
        elif block_type == "thinking" and getattr(block, "thinking", ""):
            self._block_delta("thinking", block.thinking)

    def _block_delta_event(self, index: int, delta: Any) -> None:
        delta_type = getattr(delta, "type", "")
        if delta_type == "text_delta" and delta.text:
            self._block_delta("text", delta.text)
        elif delta_type == "thinking_delta" and delta.thinking:
            self._block_delta("thinking", delta.thinking)
        elif delta_type == "signature_delta":
            if self._open_block is None or not isinstance(self._partial.content[self._open_block], ThinkingContent):
                self._block_delta("thinking", "")  # a thinking block with no text yet
            block = self._open_block_content()
            if isinstance(block, ThinkingContent):
                block.thinking_signature = (block.thinking_signature or "") + delta.signature
        elif delta_type == "input_json_delta" and delta.partial_json:
            self._tool_call(index, None, None, delta.partial_json)

    def _block_stop(self, index: int) -> None:
        if self._blocks.get(index) == "tool_use":
            self._end_tool_calls(index)
        else:
            self._end_open_block()

    def _finish_message(self) -> None:
        reason = _STOP_REASONS.get(self._stop_reason or "", "stop")
        if self._stop_reason == "refusal":
            self.error_kind = "provider"
            self._set_final("error", "the model declined to answer (stop_reason: refusal)")
            return
        if reason == "stop" and self._has_tool_calls():
            reason = "tool_calls"
        self._set_final(reason, None)

    async def _stream_ended(self) -> None:
        if self._final is not None:
            await self._release()
        elif self._message_stopped:
            self._finish_message()
            await self._release()
        else:
            await self._fail("model stream ended before the response was finished", "reset")
