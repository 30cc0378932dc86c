"""The Gemini API request (`models/<id>:streamGenerateContent?alt=sse`) from a tinyagent context.

Contents alternate `user` and `model`; tool results are `functionResponse` parts of a user
turn. Gemini signs its parts (`thoughtSignature`, https://ai.google.dev/gemini-api/docs/thought-signatures):
a function call's signature must come back with that call on the next request (Gemini 3
refuses the request without it), so it is kept on the stored call (THOUGHT_SIGNATURE, as the
chat-completions path keeps it) and on a text block, and sent back unchanged. Thoughts
themselves are not sent back: the signatures carry them.
"""

from __future__ import annotations

import json
from typing import Any

from tinyagent import (
    AssistantMessage,
    Context,
    ImageContent,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)

from tunacode_lsp.agent.provider.model import ProviderModel
from tunacode_lsp.agent.provider.openai_request import THOUGHT_SIGNATURE

API = "gemini-generate"
# Google's documented stand-in for a function call Gemini did not sign (a turn written by
# another model, or one stored before signatures were kept): Gemini 3 refuses a request whose
# model turn starts its function calls without a signature (HTTP 400, "Function call is
# missing a thought_signature"). https://ai.google.dev/gemini-api/docs/thought-signatures
UNSIGNED_CALL = "skip_thought_signature_validator"


def stream_url(model: ProviderModel) -> str:
    return f"{model.base_url.rstrip('/')}/models/{model.id}:streamGenerateContent?alt=sse"


def build_headers(model: ProviderModel, options: SimpleStreamOptions) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if options.api_key:
        headers["x-goog-api-key"] = options.api_key
    headers.update(model.headers or {})
    return headers


def build_body(model: ProviderModel, context: Context, options: SimpleStreamOptions) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": convert_contents(context)}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        body["tools"] = [{"functionDeclarations": [
            {
                "name": tool.name,
                "description": tool.description or "",
                "parametersJsonSchema": tool.parameters or {"type": "object", "properties": {}},
            }
            for tool in context.tools
        ]}]
    config: dict[str, Any] = {}
    max_tokens = options.max_tokens if options.max_tokens is not None else model.max_tokens
    if max_tokens:
        config["maxOutputTokens"] = max_tokens
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if model.thinking_budget > 0:
        config["thinkingConfig"] = {"thinkingBudget": model.thinking_budget, "includeThoughts": True}
    if config:
        body["generationConfig"] = config
    return body


def convert_contents(context: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})

    for message in context.messages:
        if isinstance(message, UserMessage):
            add("user", [part for block in message.content if (part := _user_part(block)) is not None])
        elif isinstance(message, AssistantMessage):
            add("model", _model_parts(message))
        elif isinstance(message, ToolResultMessage):
            text = "".join(part.text or "" for part in message.content if isinstance(part, TextContent))
            response: dict[str, Any] = {"name": message.tool_name or "", "response": {"error" if message.is_error else "output": text}}
            if message.tool_call_id and not message.tool_call_id.startswith("call_"):
                response["id"] = message.tool_call_id  # Gemini's own id (ours are call_...)
            add("user", [{"functionResponse": response}])
    return out


def _user_part(block: Any) -> dict[str, Any] | None:
    if isinstance(block, TextContent):
        return {"text": block.text} if block.text else None
    if isinstance(block, ImageContent) and block.url:
        url, mime = block.url, block.mime_type or "image/png"
        if url.startswith(("http://", "https://")):
            return {"fileData": {"fileUri": url, "mimeType": mime}}
        if url.startswith("data:"):
            header, _, url = url.partition(",")
            mime = header[5:].split(";", 1)[0] or mime
        return {"inlineData": {"mimeType": mime, "data": url}}
    return None


def _model_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    signed_call = False  # the turn's first function call carries a signature (Gemini 3 checks it)
    for block in message.content:
        signature = getattr(block, THOUGHT_SIGNATURE, None)
        part: dict[str, Any] | None = None
        if isinstance(block, TextContent) and (block.text or signature):
            part = {"text": block.text or ""}
        elif isinstance(block, ToolCallContent):
            call: dict[str, Any] = {"name": block.name or "", "args": block.arguments or {}}
            if block.id and not block.id.startswith("call_"):
                call["id"] = block.id
            part = {"functionCall": call}
        if part is None:
            continue  # thinking: its signature is what Gemini needs back
        if isinstance(signature, str) and signature and (message.api == API or message.provider == "gemini"):
            # Gemini's own (this API's, or its OpenAI-compatible endpoint's in older sessions)
            part["thoughtSignature"] = signature
        if "functionCall" in part:
            if not signed_call and "thoughtSignature" not in part:
                part["thoughtSignature"] = UNSIGNED_CALL
            signed_call = True
        parts.append(part)
    return parts


def arguments_json(args: object) -> str:
    return json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False)
