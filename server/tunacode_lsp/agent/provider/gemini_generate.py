"""Gemini (`gemini:`) on the Gemini API's own streaming endpoint, `streamGenerateContent?alt=sse`.

No SDK: the wire is one JSON `GenerateContentResponse` per SSE event, and the connection
handling (httpx, every read raced against the abort signal, read timeout, HTTP errors with
Retry-After, bounded events) is the chat-completions streamer's (openai_chat.py), whose
stream class this one extends; only the request (gemini_request.py) and the chunks differ.
Text, thoughts (`thought: true` parts, with `thinkingBudget`), function calls (whole in one
part), thought signatures kept for the next request, usage with cached tokens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from tinyagent import Context, Model, SimpleStreamOptions, TextContent

from tunacode_lsp.agent.provider.assembly import empty_usage
from tunacode_lsp.agent.provider.gemini_request import arguments_json, build_body, build_headers, stream_url
from tunacode_lsp.agent.provider.http_errors import error_detail
from tunacode_lsp.agent.provider.model import ProviderModel
from tunacode_lsp.agent.provider.openai_chat import OpenAIChatStream, shared_client
from tunacode_lsp.agent.provider.openai_request import THOUGHT_SIGNATURE
from tunacode_lsp.core.abort import race_abort

# Gemini's finishReason -> the chat streamer's finish reasons (its _finish_normally maps them)
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
_REFUSED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"}


async def stream_gemini(model: Model, context: Context, options: SimpleStreamOptions) -> GeminiStream:
    """tinyagent StreamFn over Gemini's streamGenerateContent (the body built on a worker thread)."""

    if not isinstance(model, ProviderModel):
        model = ProviderModel.model_validate(model.model_dump())
    signal = options.signal
    body: dict[str, Any] | BaseException = {}
    if signal is None or not signal.is_set():
        snapshot = dataclasses.replace(
            context, messages=list(context.messages), tools=None if context.tools is None else list(context.tools)
        )
        raced = await race_abort(asyncio.to_thread(build_body, model, snapshot, options), signal)
        if raced.finished:
            error = raced.task.exception()
            body = error if error is not None else raced.result()
    target = model.model_copy(update={"base_url": stream_url(model)})
    return GeminiStream(
        model=target,
        body=body if isinstance(body, dict) else {},
        content=body if isinstance(body, BaseException) else None,
        headers=build_headers(model, options),
        signal=signal,
        client=shared_client(),
    )


class GeminiStream(OpenAIChatStream):
    """GenerateContentResponse chunks -> the shared state machine (assembly.py)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._partial.usage = empty_usage()
        self._gemini_usage: dict[str, Any] = {}
        self._calls = 0

    def _usage(self) -> dict[str, Any]:
        raw = self._gemini_usage
        usage = empty_usage()
        prompt, cached = _int(raw.get("promptTokenCount")), _int(raw.get("cachedContentTokenCount"))
        usage["input"] = max(0, prompt - cached)
        usage["cache_read"] = cached
        usage["output"] = _int(raw.get("candidatesTokenCount")) + _int(raw.get("thoughtsTokenCount"))
        usage["total_tokens"] = _int(raw.get("totalTokenCount")) or prompt + usage["output"]
        return usage

    def _on_data(self, data: str) -> None:
        chunk = self._decoded_chunk(data)
        if chunk is None:
            return
        if isinstance(chunk.get("usageMetadata"), dict):
            self._gemini_usage = chunk["usageMetadata"]
        if chunk.get("error"):
            self._schedule_fail(f"model error in stream: {error_detail(chunk)}", "provider")
            return
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._finish_reason = "content_filter"
            return
        candidates = chunk.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            self._on_candidate(candidates[0])

    def _on_candidate(self, candidate: dict[str, Any]) -> None:
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                self._on_part(part)
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            self._finish_reason = "content_filter" if reason in _REFUSED else _FINISH.get(reason, "stop")
            self._end_blocks()

    def _on_part(self, part: dict[str, Any]) -> None:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        call = part.get("functionCall")
        if isinstance(call, dict):
            key = ("call", self._calls)
            self._calls += 1
            call_id = call.get("id") if isinstance(call.get("id"), str) else None
            self._tool_call(key, call_id, call.get("name"), arguments_json(call.get("args")))
            if signature is not None:
                self._set_tool_call_field(key, THOUGHT_SIGNATURE, signature)
            self._end_tool_calls(key)
            return
        text = part.get("text")
        if isinstance(text, str) and text:
            self._block_delta("thinking" if part.get("thought") is True else "text", text)
        if signature is not None and part.get("thought") is not True:
            # a text part's signature (recommended back, not required): kept on the open text block
            block = self._open_block_content()
            if isinstance(block, TextContent):
                setattr(block, THOUGHT_SIGNATURE, signature)

    async def _stream_ended(self) -> None:
        self._on_payloads(self._decoder.flush())
        if self._final is not None:
            await self._release()
        elif self._finish_reason is not None:
            await self._finish_normally()
        else:
            await self._fail("model stream ended before the response was finished", "reset")


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
