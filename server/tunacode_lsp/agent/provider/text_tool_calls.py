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

The text before tagged calls is kept. Arguments must be a JSON object (a JSON string holding
one is accepted); the tool checks them against its schema as for structured calls.

Provenance (a README that shows a `<tool_call>` block must not make one when the model
quotes it): calls are taken only from a model that writes them (`textToolCalls`: `on`, or
`auto` and `writes_text_tool_calls`), only at the end of the message (the calls, blanks
between them, then nothing), and never when a call's text stands in an earlier message that
is not the model's own (a tool result, the prompt and its context items, the system prompt
with its instruction files), blanks compared loosely.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.core.text import loads_text

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_LLAMA = re.compile(r"<function=([A-Za-z0-9_.\-]+)>\s*(.*?)\s*</function>", re.S)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*")
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n\s*```$", re.S)


# `auto`: the generic provider (a local server: Ollama, llama.cpp, vLLM, LM Studio) or a model
# family known to write its calls as text when served without a tool parser
TEXT_CALLING_PROVIDERS = frozenset({"openai-compatible"})
TEXT_CALLING_FAMILIES = re.compile(
    r"qwen|hermes|llama|mistral|mixtral|codestral|devstral|ministral|functionary|nous|deepseek|granite|gemma|glm|phi-?\d",
    re.IGNORECASE,
)


def writes_text_tool_calls(mode: str | bool, provider: str, model_id: str) -> bool:
    """Whether tool calls this model writes as text are taken (`textToolCalls`: auto|on|off)."""

    if isinstance(mode, bool):
        return mode
    if mode == "auto":
        return provider in TEXT_CALLING_PROVIDERS or TEXT_CALLING_FAMILIES.search(model_id) is not None
    return mode == "on"


def _loose(text: str) -> str:
    return " ".join(text.split())


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


def _trailing_run(text: str, matches: list[re.Match[str]]) -> list[re.Match[str]]:
    """The matches that end the text: the last one followed by blanks only, and each one
    before it separated from the next by blanks only."""

    run: list[re.Match[str]] = []
    end = len(text)
    for match in reversed(matches):
        if text[match.end():end].strip():
            break
        run.insert(0, match)
        end = match.start()
    return run


def _quoted(pieces: Iterable[str], texts: Iterable[str]) -> bool:
    """Whether a piece stands in an earlier text: its lines in order, blanks compared loosely,
    anything between them allowed (a tool's line numbers, `cat -n`, grep's `file:line:`).
    Called only once a call was found (the history is loosened then, not for every answer)."""

    earlier = [_loose(t) for t in texts]
    for piece in pieces:
        lines = [_loose(line) for line in piece.splitlines() if line.strip()]
        if sum(map(len, lines)) < 8:
            continue
        for text in earlier:
            position = 0
            for line in lines:
                found = text.find(line, position)
                if found < 0:
                    break
                position = found + len(line)
            else:
                return True
    return False


def extract_text_tool_calls(
    text: str, tools: frozenset[str], *, earlier: Iterable[str] = ()
) -> tuple[str, list[TextToolCall]]:
    """(the text left once the calls are taken out, the calls); no calls: (text, []).

    `earlier`: the texts of the messages before this one that are not the model's (tool
    results, prompts with their context, the system prompt); a call found in one of them is
    a quotation, and then nothing is taken."""

    if not tools or not text.strip():
        return text, []
    seen = list(earlier)

    def hermes(m: re.Match[str]) -> list[TextToolCall] | None:
        return _calls_from_json(m.group(1), tools)

    def llama(m: re.Match[str]) -> list[TextToolCall] | None:
        call = _call_from({"name": m.group(1), "arguments": m.group(2)}, tools)
        return [call] if call else None

    for pattern, make in ((_HERMES, hermes), (_LLAMA, llama)):
        run = _trailing_run(text, list(pattern.finditer(text)))
        found = [make(m) for m in run]
        if run and all(found):
            if _quoted([m.group(0) for m in run] + [m.group(m.lastindex or 0) for m in run], seen):
                return text, []
            return text[: run[0].start()].strip(), [c for calls in found if calls for c in calls]
    mistral = _mistral(text, tools)
    if mistral is not None:
        before, calls = mistral
        at = text.find("[TOOL_CALLS]")
        if before != text[:at].strip() or _quoted([text[at:]], seen):
            return text, []  # text after the calls (not the end of the message), or a quotation
        return before, calls

    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    inner = fenced.group(1) if fenced else stripped
    bare = _calls_from_json(inner, tools)
    if bare and not _quoted([inner], seen):
        return "", bare
    return text, []
