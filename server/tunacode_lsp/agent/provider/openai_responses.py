"""OpenAI Responses (`openai:`, `azure:`) on the official `openai` SDK.

`POST /v1/responses` with `store: false` (nothing kept on OpenAI's side), reasoning items
requested with `include: ["reasoning.encrypted_content"]` and sent back unchanged on the
next call (kept in a thinking block's signature as the item's JSON), tool results sent as
`function_call_output`. Azure OpenAI uses its v1 API with the same client
(`<AZURE_OPENAI_ENDPOINT>/openai/v1`, the deployment name as the model).
"""

from __future__ import annotations

import json
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
from tunacode_lsp.agent.provider.model import ProviderModel
from tunacode_lsp.agent.provider.sdk_stream import SdkStream, sdk_timeout, shared_http_client

ITEM_SEPARATOR = "|"  # a call's id is "<call_id>|<item id>": both are needed to send it back


async def stream_openai_responses(model: Model, context: Context, options: SimpleStreamOptions) -> ResponsesStream:
    """tinyagent StreamFn over the Responses API (streaming)."""

    if not isinstance(model, ProviderModel):
        model = ProviderModel.model_validate(model.model_dump())
    params = build_params(model, context, options)
    api_key = options.api_key

    async def open_stream() -> Any:
        import openai

        client = openai.AsyncOpenAI(
            api_key=api_key or "unset",
            base_url=model.base_url or None,
            max_retries=0,
            timeout=sdk_timeout(model),
            http_client=shared_http_client(),
            default_headers=model.headers or None,
        )
        return await client.responses.create(**params)

    hint = "AZURE_OPENAI_API_KEY" if model.provider == "azure" else "OPENAI_API_KEY"
    return ResponsesStream(model=model, signal=options.signal, open_stream=open_stream, key_hint=hint)


# ---------------------------------------------------------------- the request


def build_params(model: ProviderModel, context: Context, options: SimpleStreamOptions) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(context),
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    if context.system_prompt:
        params["instructions"] = context.system_prompt
    if context.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.parameters or {"type": "object", "properties": {}},
                "strict": False,
            }
            for tool in context.tools
        ]
    max_tokens = options.max_tokens or model.max_tokens
    if max_tokens:
        params["max_output_tokens"] = max_tokens
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if model.reasoning_effort:
        params["reasoning"] = {"effort": model.reasoning_effort, "summary": "auto"}
    return params


def convert_input(context: Context) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in context.messages:
        if isinstance(message, UserMessage):
            parts = [part for piece in message.content if (part := _input_part(piece)) is not None]
            if parts:
                items.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message))
        elif isinstance(message, ToolResultMessage):
            text = "".join(part.text or "" for part in message.content if isinstance(part, TextContent))
            call_id = (message.tool_call_id or "").split(ITEM_SEPARATOR, 1)[0]
            items.append({"type": "function_call_output", "call_id": call_id, "output": text})
    return items


def _input_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextContent):
        return {"type": "input_text", "text": part.text} if part.text else None
    if isinstance(part, ImageContent) and part.url:
        url = part.url
        if not url.startswith(("data:", "http://", "https://")) and part.mime_type:
            url = f"data:{part.mime_type};base64,{url}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    return None


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    same_api = message.api == "openai-responses"
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if same_api and block.thinking_signature:
                try:
                    reasoning = json.loads(block.thinking_signature)
                except ValueError:
                    continue
                if isinstance(reasoning, dict) and reasoning.get("type") == "reasoning":
                    items.append(reasoning)  # unchanged: the encrypted reasoning goes back as it came
        elif isinstance(block, TextContent) and block.text:
            items.append({"role": "assistant", "content": [{"type": "output_text", "text": block.text}]})
        elif isinstance(block, ToolCallContent):
            call_id, _, item_id = (block.id or "").partition(ITEM_SEPARATOR)
            item: dict[str, Any] = {
                "type": "function_call",
                "call_id": call_id,
                "name": block.name or "",
                "arguments": json.dumps(block.arguments or {}),
            }
            if same_api and item_id:
                item["id"] = item_id
            items.append(item)
    return items


# ---------------------------------------------------------------- the stream


class ResponsesStream(SdkStream):
    """The SDK's Responses events -> tinyagent events."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._raw_usage: Any = None
        self._status: str | None = None
        self._incomplete: str | None = None
        self._done = False

    def _usage(self) -> dict[str, Any]:
        usage = empty_usage()
        raw = self._raw_usage
        if raw is None:
            return usage
        details = getattr(raw, "input_tokens_details", None)
        cached = getattr(details, "cached_tokens", 0) or 0
        usage["input"] = max(0, (raw.input_tokens or 0) - cached)
        usage["cache_read"] = cached
        usage["output"] = raw.output_tokens or 0
        usage["total_tokens"] = raw.total_tokens or (raw.input_tokens or 0) + usage["output"]
        return usage

    def _on_event(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "response.output_item.added":
            item = event.item
            if item.type == "function_call":
                self._tool_call(item.id, f"{item.call_id}{ITEM_SEPARATOR}{item.id}", item.name, item.arguments or None)
        elif kind == "response.output_text.delta":
            self._block_delta("text", event.delta)
        elif kind == "response.refusal.delta":
            self._block_delta("text", event.delta)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self._block_delta("thinking", event.delta)
        elif kind == "response.function_call_arguments.delta":
            self._tool_call(event.item_id, None, None, event.delta)
        elif kind == "response.output_item.done":
            self._item_done(event.item)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event.response
            self._raw_usage = getattr(response, "usage", None)
            self._status = getattr(response, "status", None)
            details = getattr(response, "incomplete_details", None)
            self._incomplete = getattr(details, "reason", None)
            if kind == "response.failed":
                error = getattr(response, "error", None)
                self.error_kind = "provider"
                self._set_final("error", f"model error in stream: {getattr(error, 'message', None) or 'response failed'}")
                return
            self._done = True
            self._finish_response()
        elif kind == "error":
            self.error_kind = "provider"
            self._set_final("error", f"model error in stream: {getattr(event, 'message', '')}")

    def _item_done(self, item: Any) -> None:
        if item.type == "reasoning":
            block = self._open_block_content()
            if not isinstance(block, ThinkingContent):
                self._block_delta("thinking", "")  # encrypted reasoning with no summary
                block = self._open_block_content()
            assert isinstance(block, ThinkingContent)
            block.thinking_signature = json.dumps(item.model_dump(exclude_none=True), separators=(",", ":"))
            self._end_open_block()
        elif item.type == "function_call":
            self._end_tool_calls(item.id)
        else:
            self._end_open_block()

    def _finish_response(self) -> None:
        self._end_blocks()
        if self._incomplete in ("max_output_tokens",):
            self._set_final("length", None)
        elif self._status == "incomplete":
            self.error_kind = "provider"
            self._set_final("error", f"the provider stopped the response: {self._incomplete}")
        else:
            self._set_final("tool_calls" if self._has_tool_calls() else "stop", None)

    async def _stream_ended(self) -> None:
        if self._final is not None:
            await self._release()
        elif self._done:
            self._finish_response()
            await self._release()
        else:
            await self._fail("model stream ended before the response was finished", "reset")
