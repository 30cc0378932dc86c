"""Tool calls a model wrote into its text instead of the structured `tool_calls` field.

Local models served without a tool parser (Ollama, llama.cpp, vLLM) and some hosted ones
write their calls as text. Recognised, for tools the model was offered only:

- Hermes / Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, anywhere;
- Llama 3.1: `<function=NAME>{...arguments...}</function>`, anywhere;
- Mistral: `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]` (also the newer
  `[TOOL_CALLS]NAME[ARGS]{...}`), anywhere;
- bare JSON `{"name": ..., "arguments" | "parameters": {...}}` (or a list of them) only when
  it is the whole message, or the whole message is one fenced block holding it, so an
  answer that shows JSON as an example is never run.

The text around tagged calls is kept. Arguments must be a JSON object (a JSON string holding
one is accepted); the tool checks them against its schema as for structured calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.core.text import loads_text

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_LLAMA = re.compile(r"<function=([A-Za-z0-9_.\-]+)>\s*(.*?)\s*</function>", re.S)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*")
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n\s*```$", re.S)


@dataclass(frozen=True)
class TextToolCall:
    name: str
    arguments: dict[str, Any]


def _arguments(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = loads_text(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _call_from(obj: Any, tools: frozenset[str]) -> TextToolCall | None:
    if not isinstance(obj, dict):
        return None
    function = obj.get("function") if isinstance(obj.get("function"), dict) else None
    source = function or obj
    name = source.get("name")
    args = _arguments(source.get("arguments", source.get("parameters", {})))
    if not isinstance(name, str) or name not in tools or args is None:
        return None
    return TextToolCall(name, args)


def _calls_from_json(text: str, tools: frozenset[str]) -> list[TextToolCall] | None:
    """A JSON object or list of objects, each a call of an offered tool; else None."""

    try:
        value = loads_text(text)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    calls = [_call_from(item, tools) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _mistral(text: str, tools: frozenset[str]) -> tuple[str, list[TextToolCall]] | None:
    match = _MISTRAL.search(text)
    if match is None:
        return None
    before, rest = text[: match.start()], text[match.end():]
    decoder = json.JSONDecoder()
    calls: list[TextToolCall] = []
    if rest.startswith("["):
        try:
            value, end = decoder.raw_decode(rest)
        except ValueError:
            return None
        found = _calls_from_json(json.dumps(value), tools)
        if found is None:
            return None
        return (before + rest[end:]).strip(), found
    # the v11 form: NAME[ARGS]{...}, possibly several
    while rest:
        head = re.match(r"([A-Za-z0-9_.\-]+)\[ARGS\]", rest)
        if head is None:
            break
        try:
            args, end = decoder.raw_decode(rest[head.end():])
        except ValueError:
            return None
        call = _call_from({"name": head.group(1), "arguments": args}, tools)
        if call is None:
            return None
        calls.append(call)
        rest = _MISTRAL.sub("", rest[head.end() + end:], count=1).lstrip()
    return ((before + rest).strip(), calls) if calls else None


def extract_text_tool_calls(text: str, tools: frozenset[str]) -> tuple[str, list[TextToolCall]]:
    """(the text left once the calls are taken out, the calls); no calls: (text, [])."""

    if not tools or not text.strip():
        return text, []
    calls: list[TextToolCall] = []
    remaining = text

    def take(pattern: re.Pattern[str], make: Any) -> None:
        nonlocal remaining
        kept: list[str] = []
        position = 0
        for match in pattern.finditer(remaining):
            call = make(match)
            if call is None:
                continue
            kept.append(remaining[position:match.start()])
            position = match.end()
            calls.extend(call)
        kept.append(remaining[position:])
        remaining = "".join(kept)

    take(_HERMES, lambda m: _calls_from_json(m.group(1), tools))
    take(_LLAMA, lambda m: (lambda c: [c] if c else None)(_call_from({"name": m.group(1), "arguments": m.group(2)}, tools)))
    mistral = _mistral(remaining, tools)
    if mistral is not None:
        remaining, found = mistral
        calls.extend(found)
    if calls:
        return remaining.strip(), calls

    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    bare = _calls_from_json(fenced.group(1) if fenced else stripped, tools)
    if bare:
        return "", bare
    return text, []
