"""Compaction: older turns replaced, in what the model is sent, by a summary the model writes.

`compact(view, ...)` takes what the model would be sent (a cleaned history, maybe starting
with an earlier summary), chooses a cut at the start of a user turn so that the kept tail
is at most KEEP_SHARE of the context window, and asks the model in a separate call (no
tools, a summarising prompt, the older turns as a plain transcript) for a summary. The
result is the new view `[summary message] + view[cut:]` and the summary call's usage.
Nothing is stored here: the caller stores `{summary, firstKept}` (store/session_state.py)
only once the summary exists, so a failed or aborted summary call changes nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tinyagent import Context, SimpleStreamOptions, TextContent, UserMessage, extract_text

from tunacode_lsp.agent.catalog import ModelCost
from tunacode_lsp.agent.models import ResolvedModel
from tunacode_lsp.agent.provider.stream import make_stream_fn
from tunacode_lsp.agent.usage import normalize_usage
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import (
    COMPACTION_FAILED,
    MODEL_NOT_USABLE,
    REQUEST_CANCELLED,
    SESSION_BUSY,
    SessionInfo,
    Usage,
)
from tunacode_lsp.core.history import estimate_tokens
from tunacode_lsp.store.errors import SessionNotFound
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.session_state import SUMMARY_MARK, summary_message

if TYPE_CHECKING:
    from tunacode_lsp.agent.config import ServerOptions
    from tunacode_lsp.agent.sessions import SessionService

KEEP_SHARE = 0.25  # of the context window: the recent turns kept word for word
MAX_TOOL_OUTPUT_CHARS = 2_000  # per tool result in the transcript
MAX_TRANSCRIPT_SHARE = 0.5  # of the context window (in estimated tokens) for the transcript

SUMMARY_SYSTEM = (
    "You summarise a coding session between a user and a coding agent so the agent can "
    "continue it without the full transcript. Write plain Markdown, at most about 600 words."
)
SUMMARY_REQUEST = (
    "Summarise the conversation above for the agent that continues it. Keep: the user's goals "
    "and instructions (verbatim where they are precise), decisions made and why, files read or "
    "changed (paths) and what changed, commands run and their outcome, errors still open, and "
    "what remains to do. Leave out greetings and anything superseded."
)


class CompactionFailed(Exception):
    """The summary could not be written; nothing was changed."""


class CompactionAborted(CompactionFailed):
    """The summary call was stopped (abort or timeout); nothing was changed."""


class NothingToCompact(CompactionFailed):
    """The conversation is only its latest turn (or empty)."""


@dataclass
class Compacted:
    summary: str
    cut: int  # index in the view of the first kept message (len(view): none kept)
    view: list[dict[str, Any]]  # the new view: [summary message] + old view[cut:]
    before: int  # estimated tokens
    after: int
    usage: Usage


def choose_cut(view: list[dict[str, Any]], context_window: int) -> int | None:
    """The earliest start of a user turn (or the end) whose tail fits KEEP_SHARE of the
    window; None when there is nothing older to summarise."""

    keep = int(context_window * KEEP_SHARE)
    tail = 0
    cut = len(view)
    for index in range(len(view) - 1, 0, -1):
        tail += estimate_tokens([view[index]])
        if tail > keep:
            break
        if view[index].get("role") == "user" and not view[index].get(SUMMARY_MARK):
            cut = index
    older = view[:cut]
    if not older or (len(older) == 1 and older[0].get(SUMMARY_MARK)):
        return None
    return cut


def transcript(messages: list[dict[str, Any]], max_chars: int) -> str:
    """The messages as plain text (tool outputs shortened), at most `max_chars`, keeping the end."""

    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                text = block["text"]
                if role == "tool_result" and len(text) > MAX_TOOL_OUTPUT_CHARS:
                    text = text[:MAX_TOOL_OUTPUT_CHARS] + f"\n[... {len(text) - MAX_TOOL_OUTPUT_CHARS} more characters]"
                label = {"user": "User", "assistant": "Assistant"}.get(str(role), f"Tool result ({message.get('tool_name') or ''})")
                parts.append(f"{label}: {text}")
            elif kind == "tool_call":
                arguments = json.dumps(block.get("arguments"), ensure_ascii=False)[:MAX_TOOL_OUTPUT_CHARS]
                parts.append(f"Assistant called {block.get('name')}: {arguments}")
    text = "\n\n".join(parts)
    return text if len(text) <= max_chars else "[... earlier part cut]\n\n" + text[-max_chars:]


async def write_summary(
    model: ResolvedModel,
    older: list[dict[str, Any]],
    *,
    context_window: int,
    signal: asyncio.Event,
    max_retries: int = 3,
    notify: Callable[[str], None] = lambda _text: None,
    cost: ModelCost | None = None,
) -> tuple[str, Usage]:
    """One model call, no tools: the summary of `older` and the call's usage."""

    max_chars = int(context_window * MAX_TRANSCRIPT_SHARE) * 4
    prompt = f"<conversation>\n{transcript(older, max_chars)}\n</conversation>\n\n{SUMMARY_REQUEST}"
    stream_fn = make_stream_fn(signal=signal, max_retries=max_retries, notify=notify, on_model_call=lambda: None)
    context = Context(system_prompt=SUMMARY_SYSTEM, messages=[UserMessage(content=[TextContent(text=prompt)])])
    stream = await stream_fn(model.model, context, SimpleStreamOptions(api_key=model.api_key))
    async for _event in stream:
        pass
    final = await stream.result()
    usage = normalize_usage(final.usage, cost)
    if signal.is_set() or final.stop_reason == "aborted":
        raise CompactionAborted("compaction stopped before the summary was written")
    if final.stop_reason == "error":
        raise CompactionFailed(f"the summary call failed: {final.error_message or 'provider error'}")
    summary = extract_text(final).strip()
    if not summary:
        raise CompactionFailed("the model returned an empty summary")
    return summary, usage


async def compact(
    view: list[dict[str, Any]],
    model: ResolvedModel,
    *,
    context_window: int,
    signal: asyncio.Event,
    max_retries: int = 3,
    notify: Callable[[str], None] = lambda _text: None,
    cost: ModelCost | None = None,
) -> Compacted:
    """Summarise the older part of `view`; raises CompactionFailed (nothing to compact, a
    failed or empty summary) or CompactionAborted."""

    cut = choose_cut(view, context_window)
    if cut is None:
        raise NothingToCompact("nothing to compact: the conversation is only its latest turn")
    summary, usage = await write_summary(
        model, view[:cut], context_window=context_window, signal=signal, max_retries=max_retries, notify=notify, cost=cost
    )
    new_view = [summary_message(summary), *view[cut:]]
    return Compacted(summary, cut, new_view, estimate_tokens(view), estimate_tokens(new_view), usage)


async def compact_session(
    service: SessionService,
    session_id: str,
    model: ResolvedModel,
    *,
    context_window: int,
    max_retries: int = 3,
    signal: asyncio.Event | None = None,
    cost: ModelCost | None = None,
) -> tuple[int, int]:
    """`tunacode.session.compact`: compact a stored session now; (before, after) estimates.

    Holds the session's lease meanwhile (SESSION_BUSY when a request runs on it anywhere).
    Nothing to compact gives before == after. A failed summary raises CompactionFailed with
    the session unchanged; cancelling the caller's task (an abort) stores nothing either.
    """

    owner = new_owner()  # a lease of its own, like a request
    if not await service.acquire(session_id, owner):
        raise CommandError(SESSION_BUSY, f"session {session_id} is busy with a request")
    try:
        history = await service.history(session_id)
        before = estimate_tokens(history)
        try:
            result = await compact(
                history, model, context_window=context_window, signal=signal or asyncio.Event(), max_retries=max_retries,
                cost=cost,
            )
        except NothingToCompact:
            return before, before
        if not await service.save_compaction(session_id, history, result.cut, result.summary, result.usage):
            raise CompactionFailed("the session changed while the summary was written; nothing was stored")
        return result.before, result.after
    finally:
        await asyncio.shield(service.release(session_id, owner))


async def compact_now(
    service: SessionService, session_id: str, options: ServerOptions, *, is_busy: Callable[[str], bool]
) -> tuple[SessionInfo, int, int]:
    """`tunacode.session.compact` for any front end: the session's model resolved with the
    options, compacted now; (the session after, before, after estimates). Errors are
    CommandErrors (SessionNotFound for an unknown session): a busy one, a model not usable, an abort
    (`service.abort_compaction`), a failed summary (the session unchanged)."""

    from tunacode_lsp.agent.catalog import model_facts
    from tunacode_lsp.agent.models import ModelNotUsable, provider_settings, resolve_model

    record = await service.get(session_id)
    if record is None:
        raise SessionNotFound(session_id)
    if is_busy(session_id):
        raise CommandError(SESSION_BUSY, f"session {session_id} is busy with a request")
    try:
        model = resolve_model(
            record.model or options.model, base_url=options.base_url, read_timeout=options.stream_read_timeout,
            **provider_settings(options),
        )
    except ModelNotUsable as exc:
        raise CommandError(MODEL_NOT_USABLE, str(exc)) from None
    facts = await asyncio.to_thread(
        model_facts, model.provider, model.model_id, context_window=options.context_window, model_cost=options.model_cost
    )  # the catalog is read on first use: off the event loop
    signal = service.start_compaction(session_id)
    try:
        before, after = await compact_session(
            service, session_id, model, context_window=facts.context_window, max_retries=options.max_retries,
            signal=signal, cost=facts.cost,
        )
    except CompactionAborted:
        raise CommandError(REQUEST_CANCELLED, "compaction cancelled; the session is unchanged") from None
    except CompactionFailed as exc:
        raise CommandError(COMPACTION_FAILED, f"compaction failed, the session is unchanged: {exc}") from None
    finally:
        service.end_compaction(session_id)
    return (await service.get(session_id)) or record, before, after
