"""One request, start to end: history in, tinyagent loop, events out, RequestResult back.

The run owns its abort signal (an asyncio.Event given to the stream function and to every
tool instead of tinyagent's own, which only exists while the loop runs). However the run
ends (answer, abort, timeout, turn limit, provider error) every tool call gets its final
update, the stored history stays valid, and `request_end` is the last event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from typing import Any

from tinyagent import Agent, AgentOptions, AgentTool, AgentToolResult, Message, TextContent, UserMessage
from tinyagent.agent_types import AssistantMessage, ImageContent, ToolCallContent

from tunacode_lsp.agent import history_models
from tunacode_lsp.agent.catalog import DEFAULT_CONTEXT_WINDOW
from tunacode_lsp.agent.compaction import CompactionAborted, CompactionFailed, compact
from tunacode_lsp.agent.edit_format import uses_apply_patch
from tunacode_lsp.agent.error_kinds import error_kind
from tunacode_lsp.agent.events import EventTable, RequestState, tool_result_text
from tunacode_lsp.agent.hooks import HookRunner
from tunacode_lsp.agent.instructions import NestedInstructions
from tunacode_lsp.agent.model_input import ModelInput
from tunacode_lsp.agent.ports import AgentSink, ApprovalDecision, ApprovalRequest, MessageLog, RequestSpec
from tunacode_lsp.agent.projection import NotingSink, plan_items, plan_of, save_request_end, stored_results_for
from tunacode_lsp.agent.provider.stream import make_stream_fn
from tunacode_lsp.agent.registry import ToolCallRegistry
from tunacode_lsp.agent.system_prompt import build_system_prompt, load_system_prompt
from tunacode_lsp.agent.tool_gate import PLAN_MODE_TOOLS, ToolGate
from tunacode_lsp.agent.usage import normalize_usage
from tunacode_lsp.contract.protocol import (
    Compaction,
    ErrorInfo,
    Event,
    Notice,
    RequestEnd,
    RequestResult,
    RequestStart,
    TextDelta,
    ThinkingDelta,
)
from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.core.codec import bulk_decoding, freeze_long_lived, load_message
from tunacode_lsp.core.history import (
    estimate_tokens,
    prune_tool_outputs,
    unanswered_tool_calls,
)
from tunacode_lsp.core.redact import Redactor, StreamRedactor, process_redactor
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools import build_tools, spec_of
from tunacode_lsp.tools.errors import ToolCancelled

log = logging.getLogger(__name__)

EMPTY_RESPONSE_NUDGE = (
    "Your last response was empty. Continue with the task, or give your final answer if you are done."
)
ABORT_GRACE_SECONDS = 5.0
TOOL_STOP_GRACE_SECONDS = 0.5
CHECKPOINT_NOTICE_WAIT = 2.0  # seconds the end of a request waits for its 'before' snapshot
PLAN_MODE_PROMPT = """

## Plan mode

This request is in plan mode: do not change anything. Investigate with the read-only tools,
then write the plan with `todo_write` (one item per step, all `pending`) and end with a short
summary of the plan: what you will change, where, and how you will check it. The user runs
it later in agent mode."""
PROMOTE_HISTORY_MIN = 2_000  # messages from which a request's validated history skips the young generations
MAX_STEERS = 32  # steers waiting for a turn boundary in one request; more are refused (accepted: false)


def new_request_id() -> str:
    return "req_" + uuid.uuid4().hex[:16]


def _message_has_tool_calls(message: Any) -> bool:
    return any(isinstance(b, ToolCallContent) for b in getattr(message, "content", []) or [])


def _is_empty_answer(message: Any) -> bool:
    if not isinstance(message, AssistantMessage) or message.stop_reason in ("error", "aborted"):
        return False
    return not _message_has_tool_calls(message) and not any(
        isinstance(b, TextContent) and (b.text or "").strip() for b in message.content
    )


class AgentRequest:
    """One request inside the agent loop: its spec, its sink, its abort signal and state."""

    def __init__(self, spec: RequestSpec, sink: AgentSink, log_: MessageLog) -> None:
        self.spec = spec
        self.started_at = time.time()
        self.abort_signal = asyncio.Event()
        self.abort_reason: str | None = None
        self.state = RequestState(
            cost=spec.model_cost,
            context_window=spec.context_window or DEFAULT_CONTEXT_WINDOW,
            request_id=spec.request_id,
        )
        # no key in any event (tool calls and deltas too); what no message holds is kept for the
        # replay (agent/projection.py)
        self.sink = RedactingSink(NotingSink(sink, self.state), process_redactor())
        self.registry = ToolCallRegistry(self.sink.emit)
        self.table = EventTable(self.state, self.sink, log_, self.registry)
        self._model_calls = 0
        self._max_turns_hit = False
        self._max_cost_hit = False
        self._nudged = False
        self._nudged_now = False  # the nudge was queued by this turn's decision
        self._semaphore = asyncio.Semaphore(spec.tool_concurrency)
        self._agent: Agent | None = None
        self._model_input = ModelInput()  # the history's token facts, kept between turns
        self._carry: history_models.Carry | None = None  # a long session's models, for its next request
        self._approved: dict[str, str] = {}  # tool call id -> digest of the change the user approved
        self.hooks = HookRunner(
            spec.hooks, spec.workspace_root, spec.tool_settings,
            session_id=spec.session_id, request_id=spec.request_id, abort_signal=self.abort_signal,
        )
        self._hook_context: dict[str, list[str]] = {}  # tool call id -> preToolUse hooks' context
        self._gate = ToolGate(
            spec, self.registry, self.sink, self.hooks, self.abort_signal, approved=self._approved,
            hook_context=self._hook_context, until=self._until, tool_names=self._tool_names, stop_reason=self._stop_reason,
        )  # agent/tool_gate.py: rules, modes, hooks and approval before each call
        self._prompt_context: list[str] = []  # userPromptSubmit hooks' context
        self._nested = NestedInstructions(spec.workspace_root)  # sub-folder instruction files joined so far
        self._steers_early: list[UserMessage] = []  # steers before the first model call (not after the prompt)
        self._steers_given: list[UserMessage] = []  # handed to tinyagent's steering queue
        self._steering_closed = False  # no turn boundary is left: a steer now would never be seen
        self.end_sent = False

    # ------------------------------------------------------------ control

    def abort(self, reason: str = "cancelled") -> bool:
        """Stop the request now; False when it was already stopping."""

        if self.abort_reason is not None:
            return False
        self.abort_reason = reason
        self.abort_signal.set()
        return True

    def steer(self, text: str) -> bool:
        """Add `text` as a user message at the next turn boundary (tinyagent's steering queue);
        False when no boundary is left (the last turn is over, or the run is stopping)."""

        if self.abort_reason is not None or self._steering_closed or len(self.state.steers) >= MAX_STEERS:
            return False
        message = UserMessage(content=[TextContent(text=text)], timestamp=int(time.time() * 1000))
        self.state.steers[id(message)] = message  # events.py: stored and announced when the loop emits it
        if self._agent is None or self._model_calls == 0:
            self._steers_early.append(message)  # not next to the prompt: after the first model call
        else:
            self._give_steer(message)
        return True

    def _give_steer(self, message: UserMessage) -> None:
        assert self._agent is not None
        self._steers_given.append(message)
        self._agent.steer(message)

    def _close_steering(self, delivered: list[Any]) -> None:
        """The loop takes no more steering: a steer not emitted by now is never seen."""

        self._steering_closed = True
        for message in [*self._steers_given, *self._steers_early]:
            if not any(m is message for m in delivered) and self.state.steers.pop(id(message), None) is not None:
                text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text)
                self.sink.emit(Notice(f"Not sent to the model (the request stopped first): {clip(text, 200)}"))

    @property
    def model_calls(self) -> int:
        return self._model_calls

    # ------------------------------------------------------------ the run

    async def run(self) -> RequestResult:
        spec = self.spec
        self.sink.emit(RequestStart(spec.prompt, spec.model.spec))
        for notice in spec.start_notices:
            self.sink.emit(Notice(notice))
        timer = (
            asyncio.get_running_loop().call_later(spec.timeout, self.abort, "timeout")
            if spec.timeout > 0
            else None
        )
        error: str | None = None
        try:
            if not self.abort_signal.is_set() and self.hooks.any_for("userPromptSubmit"):
                error = await self._prompt_hooks()
            if error is None and not self.abort_signal.is_set():  # aborted while starting: the model is never called
                await self._compact_if_needed()
            if error is None and not self.abort_signal.is_set() and self.abort_reason is None:
                error = await self._drive()
            if self.hooks.any_for("stop") and self.abort_reason is None:
                for notice in (await self.hooks.run("stop")).notices:
                    self.sink.emit(Notice(notice))
        finally:
            if timer is not None:
                timer.cancel()
        return await self._finish(error)

    async def _prompt_hooks(self) -> str | None:
        """userPromptSubmit hooks: exit 2 ends the request before the model is called (the
        reason is its error); their context goes to the model with the prompt."""

        outcome = await self.hooks.run("userPromptSubmit", prompt=self.spec.prompt)
        for notice in outcome.notices:
            self.sink.emit(Notice(notice))
        if outcome.blocked:
            return f"the prompt was blocked by {outcome.blocked_by}: {outcome.reason}"
        self._prompt_context = outcome.context
        return None

    async def _compact_if_needed(self) -> None:
        """Compact first when the history and the prompt pass compactThreshold of the window.

        A failed summary leaves everything as it was (a notice says so); an abort during it
        ends the request as cancelled, nothing changed.
        """

        spec, window = self.spec, self.state.context_window
        if not spec.history or window <= 0:
            return
        prompt = {"role": "user", "content": [{"type": "text", "text": spec.prompt}]}
        limit = spec.compact_threshold * window

        def past_threshold() -> bool:  # O(history): in a thread, the raw estimate first
            if history_models.estimate(spec.session_id, spec.history) + estimate_tokens([prompt]) <= limit:
                return False  # pruning only lowers it
            with_prompt = [*spec.history, prompt]
            return estimate_tokens(prune_tool_outputs(with_prompt, token_budget=spec.history_token_budget)) > limit

        if not await asyncio.to_thread(past_threshold):
            return
        try:
            result = await compact(
                spec.history,
                spec.model,
                context_window=window,
                signal=self.abort_signal,
                max_retries=spec.max_retries,
                notify=lambda text: self.sink.emit(Notice(text)),
                cost=spec.model_cost,
            )
        except CompactionAborted:
            return
        except CompactionFailed as exc:
            self.sink.emit(Notice(f"Could not compact the conversation ({exc}); going on without it."))
            return
        self.state.usage = self.state.usage + result.usage
        if not await self.table.log.save_compaction(spec.history, result.cut, result.summary, result.usage):
            log.warning("compaction of session %s used but not stored", spec.session_id)
        spec.history = result.view
        self.sink.emit(Compaction(result.before, result.after))

    async def _drive(self) -> str | None:
        """Run the tinyagent loop; an unexpected failure comes back as an error text."""

        try:
            # Validating a long history is CPU work (~25 us a message): on a thread, not the loop.
            # (no local for the history: this frame ends up in an exception's traceback, a cycle
            # that would keep 30k models alive until the collector finds it)
            system_prompt, notices = await asyncio.to_thread(load_system_prompt, self.spec.workspace_root)
            for notice in notices:  # an instruction file skipped (a link out, a FIFO, ...)
                self.sink.emit(Notice(notice))
            agent = self._build_agent(await asyncio.to_thread(self._load_history), system_prompt)
        except Exception as exc:  # a stored history or a tool that cannot be loaded: an error result
            log.exception("the agent could not be built")
            self.abort_signal.set()
            return f"internal error: {exc}"
        if self.abort_signal.is_set():  # aborted while the history loaded: the model is never called
            return None
        content = prompt_content(self.spec)
        if self._prompt_context:  # userPromptSubmit hooks' context, after the prompt
            content.append(TextContent(text="\n\n".join(f"[hook context]\n{c}" for c in self._prompt_context)))
        prompt = UserMessage(content=content, timestamp=int(time.time() * 1000))
        stream = agent.stream(prompt)
        abort_wait = asyncio.ensure_future(self.abort_signal.wait())
        deadline: float | None = None  # set at abort: the loop must wind down by then
        loop = asyncio.get_running_loop()
        try:
            while True:
                next_event = asyncio.ensure_future(stream.__anext__())
                if deadline is None:
                    await asyncio.wait({next_event, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
                    if abort_wait.done():
                        deadline = loop.time() + ABORT_GRACE_SECONDS
                if deadline is not None and not next_event.done():
                    await asyncio.wait({next_event}, timeout=max(0.0, deadline - loop.time()))
                    if not next_event.done():
                        next_event.cancel()
                        log.warning("agent loop did not stop within %.1f s of an abort", ABORT_GRACE_SECONDS)
                        return None
                try:
                    event = next_event.result()
                except StopAsyncIteration:
                    return None
                await self.table.handle(event)
        except Exception as exc:  # the loop itself failed: report it as an error result
            log.exception("agent loop failed")
            return f"internal error: {exc}"
        finally:
            abort_wait.cancel()
            # whatever ended the loop, tinyagent's background work (a stream still reading
            # from the model, a tool) must stop too: the stream and the tools race this signal
            self.abort_signal.set()
            try:
                await stream.aclose()  # type: ignore[attr-defined]  # an async generator
            except RuntimeError:  # still running after a cancelled step
                pass
            self._release_history(agent)

    def _release_history(self, agent: Agent) -> None:
        """Let the history's models go by reference counting when the run ends: the agent and
        this run refer to each other (its callbacks are our methods), so without this they
        wait for a full collector pass, which at 30k messages holds the GIL for ~0.3-0.9 s.
        A long session's models and model input are kept for its next request instead."""

        agent.clear_messages()
        self._keep_history()
        self._agent = None

    def _keep_history(self) -> None:
        """The session's models and model input to its next request (a long session's)."""

        if self._carry is not None:
            history_models.keep(self.spec.session_id, self._carry)
            self._carry = None
        self._model_input = ModelInput()

    def _load_history(self) -> list[Any]:
        """The history as tinyagent messages (full validation), with their token facts
        (agent/model_input.py) taken from the dumps at hand, so the first turn does not dump each
        message again. Runs on a thread, before the agent exists. The list is the carry's own
        (agent/history_models.py: changed in place by the session's next request); the agent
        copies it."""

        with bulk_decoding():  # as the store decodes: no collector passes over the growing heap
            previous = history_models.take(self.spec.session_id)  # the last request's models, by dump
            long = len(self.spec.history) - history_models.reused(previous, self.spec.history) >= PROMOTE_HISTORY_MIN
            self._carry = history_models.load(self.spec.session_id, self.spec.history, previous)
            self._model_input = self._carry.model_input
            models = self._carry.models  # tinyagent's Agent copies it (replace_messages)
            if long:
                # The models live as long as the session is used: out of every collector pass
                # from now on (core/codec.py), or the next young passes scan all of them holding
                # the GIL (~150 ms, then ~300 ms, at 30k messages) and every full pass after
                # them (~0.5 s). Freed by reference counting when released (_release_history).
                freeze_long_lived()
        return models

    def _build_agent(self, history: list[Any] | None = None, system_prompt: str | None = None) -> Agent:
        spec = self.spec
        agent = Agent(
            AgentOptions(
                stream_fn=make_stream_fn(
                    signal=self.abort_signal,
                    max_retries=spec.max_retries,
                    notify=lambda text: self.sink.emit(Notice(text)),
                    on_model_call=self._count_model_call,
                    on_text_tool_calls=self._text_tool_calls_parsed,
                ),
                get_api_key=lambda _provider: spec.model.api_key,
                convert_to_llm=self._convert_to_llm,
                before_tool_call=self._gate.before_tool_call,
                should_stop_after_turn=self._should_stop_after_turn,
                steering_mode="all",  # the steers that reached one boundary go to the model together
                session_id=spec.session_id,
            )
        )
        agent.set_model(spec.model.model)
        prompt_text = system_prompt if system_prompt is not None else build_system_prompt(spec.workspace_root)
        agent.set_system_prompt(prompt_text + (PLAN_MODE_PROMPT if spec.mode == "plan" else ""))
        tools = build_tools(spec.workspace_root, spec.tool_settings, ledger=spec.line_refs, diagnostics=spec.diagnostics, approved=self._approved, documents=spec.documents,
                            apply_patch=uses_apply_patch(spec.model.provider, spec.model.model_id))
        offered = [*tools, *spec.extra_tools]
        if spec.mode == "plan":  # read-only tools and todo_write; no MCP tool (it may change anything)
            offered = [t for t in tools if t.name in PLAN_MODE_TOOLS]
        if spec.allowed_tools is not None:  # a prompt command's allowed-tools: it only narrows
            offered = [t for t in offered if t.name in spec.allowed_tools]
        agent.set_tools([self._wrap_tool(t) for t in offered])
        agent.replace_messages(history if history is not None else [load_message(m) for m in spec.history])
        self._agent = agent
        return agent

    def _count_model_call(self) -> None:
        self._model_calls += 1
        early, self._steers_early = self._steers_early, []
        for message in early:  # the loop checked steering before this call: the next boundary takes them
            self._give_steer(message)

    def _text_tool_calls_parsed(self) -> None:
        """Say once per session that the model writes its tool calls as text."""

        if "text_tool_calls" not in self.spec.session_notices:
            self.spec.session_notices.add("text_tool_calls")
            self.sink.emit(Notice(
                "The model wrote its tool calls as text instead of structured tool calls; TunaCode "
                "parsed and ran them (setting textToolCalls). A server-side tool parser is more reliable."
            ))

    async def _convert_to_llm(self, messages: list[Any]) -> list[Message]:
        # O(history) CPU before every model turn: on a thread over a copy of tinyagent's list,
        # so the event loop keeps answering (abort, status) during a long session's turn. An
        # abort ends the wait; the stream function then sees the signal and calls no model.
        raced = await race_abort(asyncio.to_thread(self._llm_input, list(messages)), self.abort_signal)
        if not raced.finished:
            return []
        llm, self.state.context_estimate = raced.result()
        return llm

    def _llm_input(self, messages: list[Any]) -> tuple[list[Message], int]:
        """What the model is sent (agent/model_input.py) and its estimated tokens."""

        return self._model_input.build(messages, self.spec.history_token_budget)

    # ------------------------------------------------------------ tools

    def _wrap_tool(self, tool: AgentTool) -> AgentTool:
        inner = tool.execute
        assert inner is not None

        async def execute(tool_call_id: str, args: dict[str, Any], _signal: Any, on_update: Any) -> AgentToolResult:
            async with self._semaphore:
                if self.abort_signal.is_set():
                    self.registry.announce(tool_call_id, tool.name, args)
                    self.registry.finish(tool_call_id, "cancelled", "cancelled before it started", reason=self._stop_reason())
                    raise ToolCancelled("cancelled before it started")
                self.registry.start(tool_call_id, tool.name, args)
                try:
                    shell = spec_of(tool.name).runs_commands or tool.name in self.spec.extra_changing_tools
                    if self.spec.checkpoint is not None and (shell or spec_of(tool.name).changes_files):
                        for notice in await self.spec.checkpoint(shell):  # the workspace before (agent/checkpoints.py)
                            self.sink.emit(Notice(notice))
                    result = await self._run_abortable(inner(tool_call_id, args, self.abort_signal, on_update))
                except BaseException as exc:
                    cancelled = isinstance(exc, ToolCancelled | asyncio.CancelledError) or self.abort_signal.is_set()
                    self.registry.finish(
                        tool_call_id, "cancelled" if cancelled else "failed", str(exc) or type(exc).__name__,
                        reason=self._stop_reason() if cancelled else None,
                    )
                    raise
                result = await self._with_nested_instructions(tool.name, args, result)
                result = await self._post_tool_hooks(tool_call_id, tool.name, args, result)
                result = _redacted_result(result)  # the model never sees a key a tool printed
                details = result.details if isinstance(result.details, dict) else {}
                exit_code = details.get("exit_code")  # bash's, shown on the tool line
                self.registry.finish(
                    tool_call_id, "completed", tool_result_text(result), exit_code=exit_code if isinstance(exit_code, int) else None
                )
                if tool.name == "todo_write":
                    await self._publish_plan(result)
                return result

        return AgentTool(
            name=tool.name, description=tool.description, parameters=tool.parameters, label=tool.label, execute=execute
        )

    async def _publish_plan(self, result: AgentToolResult) -> None:
        """After todo_write: the `plan` event, and the plan stored with the session."""

        items = plan_items(result.details)
        if items is None:
            return
        self.sink.emit(plan_of(items))
        try:
            await self.table.log.save_plan(items)
        except Exception:  # the plan is shown; failing to keep it must not fail the tool
            log.exception("could not store the plan of session %s", self.spec.session_id)

    async def _until(self, work: Any) -> None:
        """Await `work`, or stop waiting when the request is aborted."""

        await race_abort(work, self.abort_signal)

    async def _run_abortable(self, work: Any) -> AgentToolResult:
        """Run a tool; after an abort it gets a short grace to stop by itself (kill its
        processes), then it is cancelled, so a tool stuck in a thread cannot hold the request."""

        raced = await race_abort(work, self.abort_signal, grace=TOOL_STOP_GRACE_SECONDS)
        if not raced.finished:
            raise ToolCancelled("cancelled by the user (the tool did not stop in time)")
        return raced.result()

    async def _post_tool_hooks(self, call_id: str, name: str, args: dict[str, Any], result: AgentToolResult) -> AgentToolResult:
        """postToolUse hooks see the result; their context (and a block's reason) is added to it."""

        added = self._hook_context.pop(call_id, [])
        if self.hooks.any_for("postToolUse", name):
            outcome = await self.hooks.run("postToolUse", tool=name, args=args, result=tool_result_text(result))
            for notice in outcome.notices:
                self.sink.emit(Notice(notice))
            added += outcome.context
            if outcome.blocked:
                added.append(f"[{outcome.blocked_by} objected to this result: {outcome.reason}]")
        if not added:
            return result
        extra = "\n\n".join(f"[hook context]\n{text}" for text in added)
        return AgentToolResult(content=[*result.content, TextContent(text=extra)], details=result.details)

    async def _with_nested_instructions(self, name: str, args: dict[str, Any], result: AgentToolResult) -> AgentToolResult:
        """The first read or edit of a file below a sub-folder's AGENTS.md (or CLAUDE.md) brings
        that file into the context, appended to the result (agent/instructions.py)."""

        if name not in NestedInstructions.TOOLS:
            return result
        text, notices = await asyncio.to_thread(self._nested.for_call, name, args.get("filepath"))
        for notice in notices:
            self.sink.emit(Notice(notice))
        if not text:
            return result
        return AgentToolResult(content=[*result.content, TextContent(text="\n\n" + text)], details=result.details)

    def _stop_reason(self) -> str:
        """The `reason` of a call stopped by this request's end: its timeout or an abort."""
        return "timeout" if self.abort_reason == "timeout" else "aborted"

    def _tool_names(self) -> list[str]:
        return [t.name for t in self._agent.state.tools] if self._agent else []

    # ------------------------------------------------------------ turn control

    async def _should_stop_after_turn(self, message: Any, tool_results: list[Any], _ctx: Any, _new: Any) -> bool:
        waiting = [m for m in self._steers_given if not any(x is m for x in _new)]
        # a waiting steer makes another model call too: the caps hold for it as for tool results
        stop = await self._should_stop(message, tool_results or waiting)
        # No await from here to tinyagent's steering check: a steer that arrives after this
        # decision is refused, and one that arrived before it is seen by the next model call.
        waiting = [m for m in self._steers_given if not any(x is m for x in _new)]
        if stop or (not tool_results and not waiting and not self._nudged_now):
            self._close_steering(list(_new))
        self._nudged_now = False
        return stop

    async def _should_stop(self, message: Any, tool_results: list[Any]) -> bool:
        if self.abort_signal.is_set():
            return True
        if _is_empty_answer(message):
            if not self._nudged and self._model_calls < self.spec.max_turns:
                self._nudged = True
                nudge = UserMessage(content=[TextContent(text=EMPTY_RESPONSE_NUDGE)], timestamp=int(time.time() * 1000))
                self.state.skip_store.add(id(nudge))
                assert self._agent is not None
                self._agent.follow_up(nudge)
                self._nudged_now = True
                return False
            self.sink.emit(Notice("The model returned an empty response; stopping."))
            return True
        if tool_results and self._model_calls >= self.spec.max_turns:
            self._max_turns_hit = True
            self.sink.emit(
                Notice(f"Stopped after {self.spec.max_turns} model turns (maxTurns); ask again to continue.")
            )
            return True
        if tool_results and self._next_call_passes_cost_cap(message):
            self._max_cost_hit = True
            self.sink.emit(Notice(
                f"Stopped before the next model call: ${self._spent_after(message):.4f} spent, and the next call "
                f"(predicted to cost at least the last one) would pass the cost cap of ${self.spec.max_cost:g} (maxCost)."
            ))
            return True
        return False

    def _next_call_passes_cost_cap(self, message: Any) -> bool:
        """The next call resends at least the last call's context, so it is predicted to cost at
        least as much as the last one; checked before it starts, never after."""

        cap = self.spec.max_cost
        if cap is None:
            return False
        last = normalize_usage(getattr(message, "usage", None), self.state.cost).cost
        return self._spent_after(message) + last > cap

    def _spent_after(self, message: Any) -> float:
        """The request's cost with `message`'s call in it: the loop may ask before the event
        handler counted it (a turn without tools: nothing awaited in between)."""

        state = self.state
        if state.usage_counted_for == id(message):
            return state.usage.cost
        return state.usage.cost + normalize_usage(getattr(message, "usage", None), state.cost).cost

    # ------------------------------------------------------------ the end

    async def _finish(self, internal_error: str | None) -> RequestResult:
        state = self.state
        if not self._steering_closed:  # the loop ended without a last decision (an abort, an error)
            self._close_steering([])
        self.registry.settle_open(
            "cancelled", "cancelled" if self.abort_reason else "did not finish",
            reason=self._stop_reason() if self.abort_reason else "error",
        )
        # Calls stored this request that never got a result (an abort mid-tool, a loop
        # that died) are answered now, so the stored history never dangles.
        dangling = unanswered_tool_calls(state.stored)
        for result in stored_results_for(dangling, self.registry, self._stop_reason()):
            result["meta"] = state.meta()
            await self.table.log.append(result, usage=None, thoughts=None)
            state.stored.append(result)

        error: ErrorInfo | None = None
        if self.abort_reason is not None:
            stop_reason = "cancelled" if self.abort_reason == "cancelled" else "timeout"
            if stop_reason == "timeout":
                self.sink.emit(Notice(f"The request timed out after {self.spec.timeout:g} s (requestTimeout)."))
        elif internal_error is not None:
            stop_reason, error = "error", ErrorInfo(internal_error)
        elif self._max_turns_hit:
            stop_reason = "max_turns"
        elif self._max_cost_hit:
            stop_reason = "max_cost"
        elif state.last_stop_reason == "error":
            stop_reason, error = "error", ErrorInfo(state.last_error or "the model provider returned an error", error_kind(state.last_error))
        else:
            stop_reason = "end_turn"
            if state.last_stop_reason == "length":
                self.sink.emit(Notice("The model stopped at its output token limit; the answer may be cut short."))

        if self.spec.checkpoint is not None and self.abort_reason is None:  # an abort answers at once
            try:  # a request that ran no changing tool still hears that its checkpoint failed
                for notice in await asyncio.wait_for(self.spec.checkpoint(None), CHECKPOINT_NOTICE_WAIT):
                    self.sink.emit(Notice(notice))
            except TimeoutError:
                pass
        redactor = process_redactor()
        self.sink.emit(RequestEnd(stop_reason, state.usage, error))
        self.end_sent = True  # the client knows it ended (before any await): the answer follows within moments
        await save_request_end(self.table.log, state)
        return redactor.value(RequestResult(
            session_id=self.spec.session_id,
            request_id=self.spec.request_id,
            stop_reason=stop_reason,
            text=state.text,
            usage=state.usage,
            turns=state.turns,
            tool_calls=self.registry.summaries(),
            error=error,
        ))


def prompt_content(spec: RequestSpec) -> list[TextContent | ImageContent]:
    """The prompt's content blocks: the editor context first (text, then images), then the prompt."""

    context = spec.context
    if context is None or (not context.text and not context.images):
        return [TextContent(text=spec.prompt)]
    text = f"{context.text}\n\n{spec.prompt}" if context.text else spec.prompt
    images = [ImageContent(url=data, mime_type=mime) for mime, data in context.images]
    return [TextContent(text=text), *images]


def _redacted_result(result: AgentToolResult) -> AgentToolResult:
    redactor = process_redactor()
    content = [
        TextContent(text=redactor.text(block.text or "")) if isinstance(block, TextContent) else block
        for block in result.content
    ]
    return dataclasses.replace(result, content=content)


class RedactingSink:
    """The caller's sink, with every secret taken out of every event (core/redact.py).

    Text and thinking deltas pass through a `StreamRedactor` each: a piece is emitted only
    up to where a secret could start that the next piece completes; the rest goes out with
    the next piece, or before any other event (the end of the message: a tool call, the
    turn's end, the request's end), so a key split across two deltas never shows."""

    def __init__(self, inner: AgentSink, redactor: Redactor) -> None:
        self._inner = inner
        self._redactor = redactor
        self._streams: dict[type[TextDelta | ThinkingDelta], StreamRedactor] = {
            TextDelta: StreamRedactor(redactor), ThinkingDelta: StreamRedactor(redactor),
        }

    def emit(self, event: Event) -> None:
        if isinstance(event, TextDelta | ThinkingDelta):
            kind = type(event)
            self.flush(but=kind)
            if text := self._streams[kind].feed(event.text):
                self._inner.emit(kind(text))
            return
        self.flush()
        self._inner.emit(self._redactor.value(event))

    def flush(self, but: type | None = None) -> None:
        """Emit what the delta streams hold back (all of them, or all but one kind)."""

        for kind, stream in self._streams.items():
            if kind is not but and stream.pending and (text := stream.flush()):
                self._inner.emit(kind(text))

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.flush()
        r = self._redactor  # what the user is shown; the tool still gets its arguments whole
        shown = dataclasses.replace(
            request, summary=r.text(request.summary), args=r.value(request.args), detail=r.text(request.detail),
            headline=r.text(request.headline),
        )
        return await self._inner.ask_approval(shown)

    def __getattr__(self, name: str) -> Any:  # close(), progress, ... of the caller's sink
        return getattr(self._inner, name)
