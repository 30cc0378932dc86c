"""A `session/prompt`'s content blocks as the agent's prompt, and its result as a PromptResponse.

Blocks: text is the prompt; an image becomes an image context item (checked like LSP's);
an embedded text resource (`resource`) is put after the prompt's words in a `<context>`
section with its URI; a resource link is named in that section (the model reads it with its
tools). Other blocks (audio, binary resources) are refused with -32602.

Stop reasons: end_turn, cancelled, max_turns and max_cost -> max_turn_requests; an answer the model cut
at its output limit -> max_tokens; a response the provider stopped with content_filter ->
refusal. A provider error or the request timeout is a JSON-RPC error (-32603) whose data
carries `stopReason` ("error" | "timeout") and `requestId`; what streamed before it stays
shown and stored.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError, schema

from tunacode_lsp.acp.updates import STOP_REASONS
from tunacode_lsp.contract.protocol import RequestResult

INTERNAL_ERROR = -32603


def prompt_parts(blocks: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """(prompt text, context items); RequestError -32602 for a block the agent cannot take."""

    texts: list[str] = []
    sections: list[str] = []
    context: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        if isinstance(block, schema.TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, schema.ImageContentBlock):
            context.append({"type": "image", "mimeType": block.mime_type, "data": block.data})
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, schema.TextResourceContents):
                raise RequestError.invalid_params({"details": f"prompt[{index}]: only text resources are supported"})
            sections.append(f'<context uri="{_attr(resource.uri)}">\n{resource.text}\n</context>')
        elif isinstance(block, schema.ResourceContentBlock):
            sections.append(f'<context uri="{_attr(block.uri)}" name="{_attr(block.name)}">(not included; read it if needed)</context>')
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise RequestError.invalid_params({"details": f"prompt[{index}]: {kind} blocks are not supported"})
    prompt = "".join(texts)
    if sections:  # after the words, so the session's title is the user's first line
        prompt = "\n\n".join([prompt, *sections]) if prompt.strip() else "\n\n".join(sections)
    if not prompt.strip() and not context:
        raise RequestError.invalid_params({"details": "prompt: empty"})
    return prompt or "(see the attached images)", context


def _attr(value: str) -> str:
    """A value inside a double-quoted attribute: it cannot close the quote or the tag."""

    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def response_of(result: RequestResult, last_stop_reason: str | None) -> schema.PromptResponse:
    """The PromptResponse for a finished run, or RequestError for an error or a timeout."""

    if result.stop_reason in ("error", "timeout"):
        message = result.error.message if result.error is not None else "the request timed out (requestTimeout)"
        if result.stop_reason == "error" and "content_filter" in message:
            return _response("refusal", result)
        raise RequestError(INTERNAL_ERROR, message, {"stopReason": result.stop_reason, "requestId": result.request_id})
    stop = STOP_REASONS.get(result.stop_reason, "end_turn")
    if stop == "end_turn" and last_stop_reason == "length":
        stop = "max_tokens"
    return _response(stop, result)


def _response(stop: schema.StopReason, result: RequestResult) -> schema.PromptResponse:
    usage = result.usage
    return schema.PromptResponse(
        stop_reason=stop,
        usage=schema.Usage(
            total_tokens=max(0, usage.total_tokens),
            input_tokens=max(0, usage.input_tokens),
            output_tokens=max(0, usage.output_tokens),
            cached_read_tokens=max(0, usage.cache_read_tokens) or None,
            cached_write_tokens=max(0, usage.cache_write_tokens) or None,
        ),
        field_meta={"tunacode": {"requestId": result.request_id, "stopReason": result.stop_reason}},
    )
