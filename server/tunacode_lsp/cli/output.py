"""What a headless run shows: plain text for people, or JSON Lines for programs.

Plain: the answer streams to stdout; tool lines, notices and the closing summary go to
stderr, coloured when that stream is a terminal (never when `NO_COLOR` is set), with a
progress line that ticks while a tool runs (terminals only). JSON Lines: every event as
sent, then one `result` line. Both end with the outcome: `changedFiles` and
`deniedToolCalls` (docs/ci.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

# C0 controls but tab and newline, DEL, C1: a model's text must not drive the terminal
# (hide lines with \r, set the title, write the clipboard with OSC 52, ...)
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
LINE_BREAKS = re.compile(r"[\n\t]")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S = 0.1
PROGRESS_AFTER_S = 0.3  # a tool that ends sooner gets no progress line
WAIT_NOTE_AFTER_S = 10.0  # off a terminal: the first "still waiting" note, then one every WAIT_NOTE_EVERY_S
WAIT_NOTE_EVERY_S = 30.0
MODEL_WAIT = "waiting for the model"
# events that end a wait for the model: it answered something
MODEL_ANSWERED = frozenset({"text_delta", "thinking_delta", "tool_call", "request_end"})

RESET = "\x1b[0m"
BOLD, DIM, RED, GREEN, YELLOW, CYAN = "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"
CLEAR_LINE = "\r\x1b[K"


FENCED_BY_CALLER = "TUNACODE_CI_FENCED"  # `1`: the caller (action.yml) fences the whole step itself


@contextmanager
def workflow_command_fence(streams: list[TextIO], env: Mapping[str, str] | None = None) -> Iterator[str | None]:
    """Under GitHub Actions (`GITHUB_ACTIONS=true`), untrusted text in between is not run as
    workflow commands: `::stop-commands::TOKEN` first, `::TOKEN::` last, on each stream. The
    runner runs a command (`::error::`, `::add-mask::`, `::set-output`, `::stop-commands::`)
    that starts any line of the log, and a model's answer or a tool's output may hold one.
    The token is random and made here, so neither the model nor a tool can end the fence.
    Yields the token (None when not fencing)."""

    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") != "true" or env.get(FENCED_BY_CALLER) == "1":
        yield None
        return
    token = secrets.token_hex(16)
    unique = list({id(s): s for s in streams}.values())
    for stream in unique:
        _fence_line(stream, f"::stop-commands::{token}")
    try:
        yield token
    finally:
        for stream in unique:
            _flush(stream)
        for stream in unique:  # the first the runner reads ends the fence; the other is plain text
            _fence_line(stream, f"\n::{token}::")  # on a line of its own, even after an answer without a last newline


def _flush(stream: TextIO) -> None:
    try:
        stream.flush()
    except (BrokenPipeError, ValueError):
        pass


def _fence_line(stream: TextIO, line: str) -> None:
    try:
        stream.write(line + "\n")
        stream.flush()
    except (BrokenPipeError, ValueError):
        pass


def printable(text: str, *, one_line: bool = False) -> str:
    """Text that shows as what it is: control characters as `\\xNN` (newlines too when `one_line`)."""

    text = CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return LINE_BREAKS.sub(" ", text) if one_line else text


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Colour on a terminal, unless NO_COLOR is set to anything (https://no-color.org)."""

    env = os.environ if env is None else env
    return not env.get("NO_COLOR") and _is_terminal(stream)


def call_label(name: str, summary: str) -> str:
    """`name summary` on one line, without the name twice when the server's summary starts with it."""

    if summary.startswith(name + ":"):
        summary = summary[len(name) + 1 :].strip()
    return printable(f"{name} {summary}".rstrip(), one_line=True)


def exit_code_of(event: Mapping[str, Any]) -> int | None:
    """The exit code of the command a call ran: the final update's `exitCode`."""

    code = event.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def was_refused(event: Mapping[str, Any]) -> bool:
    """A call the user declined or the mode refused (the update's `reason`; `denied` before v3)."""

    return event.get("reason") in ("denied", "policy") or event.get("denied") is True


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class Output:
    """Where a run's events, result and problems go."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err

    def _write(self, stream: TextIO, text: str) -> None:
        try:
            stream.write(text)
            stream.flush()
        except (BrokenPipeError, ValueError):  # `| head` closed the pipe: nothing more to show
            pass

    def passthrough(self, text: str) -> None:
        """Text for stderr as it is (the server's log under --verbose)."""

        self._write(self.err, text)

    def event(self, event: dict[str, Any]) -> None: ...

    def result(self, result: dict[str, Any], outcome: dict[str, Any]) -> None: ...

    def failure(self, message: str, code: int | None = None) -> None:
        self.note(f"error: {message}")

    def note(self, message: str) -> None:
        self._write(self.err, f"tunacode-lsp: {printable(message, one_line=True)}\n")

    def close(self) -> None:
        """The run is over (stop any progress line)."""

    def waiting(self, label: str) -> None:
        """Something slow started with nothing to show for it yet (the model, MCP servers)."""

    def session(self, session_id: str | None) -> None:
        """The session the run used, and how to continue it (plain mode)."""

    def fenced_streams(self) -> list[TextIO]:
        """The streams untrusted text may reach as whole lines (see workflow_command_fence)."""

        return [self.out, self.err]


class PlainOutput(Output):
    """The answer streams to stdout; tool lifecycle, notices and the summary go to stderr."""

    def __init__(self, out: TextIO, err: TextIO, *, session_hint: bool = True, colour: bool | None = None) -> None:
        super().__init__(out, err)
        self._session_hint = session_hint
        self._colour = wants_colour(err) if colour is None else colour
        self._out_is_terminal = _is_terminal(out)  # then the answer's control characters are shown, not obeyed
        self._live = self._colour  # a progress line only where it can be redrawn: a terminal
        self._mid_line = False  # stdout holds a started line
        self._labels: dict[str, str] = {}
        self._running: dict[str, tuple[str, float]] = {}  # toolCallId -> (label, started)
        self._progress_shown = False
        self._ticker: asyncio.TimerHandle | None = None
        self._frame = 0
        self._started = time.monotonic()
        self._waiting: tuple[str, float] | None = None  # (label, since): shown when no tool runs
        self._wait_note: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------ low level

    def _paint(self, text: str, *codes: str) -> str:
        return f"{''.join(codes)}{text}{RESET}" if self._colour and codes else text

    def _clear_progress(self) -> None:
        if self._progress_shown:
            self._write(self.err, CLEAR_LINE)
            self._progress_shown = False

    def _text(self, text: str) -> None:
        if text:
            self._clear_progress()
            self._write(self.out, printable(text) if self._out_is_terminal else text)
            self._mid_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._mid_line:
            self._write(self.out, "\n")
            self._mid_line = False

    def _status(self, line: str) -> None:
        self._clear_progress()
        self._end_line()  # keeps a terminal showing both streams readable
        self._write(self.err, line + "\n")

    def note(self, message: str) -> None:
        self._clear_progress()
        super().note(message)

    def passthrough(self, text: str) -> None:
        self._clear_progress()
        super().passthrough(printable(text) if _is_terminal(self.err) else text)

    # ------------------------------------------------------------ progress line

    def _schedule_tick(self) -> None:
        if not self._live or self._ticker is not None or not (self._running or self._waiting):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._ticker = loop.call_later(TICK_S, self._tick)

    def _tick(self) -> None:
        self._ticker = None
        if self._running:
            label, started = next(reversed(self._running.values()))
            more = f" (+{len(self._running) - 1})" if len(self._running) > 1 else ""
        elif self._waiting is not None:
            (label, started), more = self._waiting, ""
        else:
            return
        now = time.monotonic()
        if now - started >= PROGRESS_AFTER_S:
            self._frame = (self._frame + 1) % len(SPINNER)
            line = f"{SPINNER[self._frame]} {label}{more}  {now - started:.1f} s"
            self._end_line()
            self._write(self.err, CLEAR_LINE + self._paint(line, DIM))
            self._progress_shown = True
        self._schedule_tick()

    def waiting(self, label: str) -> None:
        self._stop_waiting()
        self._waiting = (label, time.monotonic())
        if self._live:
            self._schedule_tick()
        else:
            self._schedule_wait_note(WAIT_NOTE_AFTER_S)

    def _schedule_wait_note(self, delay: float) -> None:
        try:
            self._wait_note = asyncio.get_running_loop().call_later(delay, self._note_waiting)
        except RuntimeError:
            self._wait_note = None

    def _note_waiting(self) -> None:
        """Off a terminal (a CI log) a wait shows as a note now and then, never as silence."""

        self._wait_note = None
        if self._waiting is None or self._running:
            return
        label, since = self._waiting
        self._status(f"[note] still {label} ({time.monotonic() - since:.0f} s)")
        self._schedule_wait_note(WAIT_NOTE_EVERY_S)

    def _stop_waiting(self) -> None:
        self._waiting = None
        if self._wait_note is not None:
            self._wait_note.cancel()
            self._wait_note = None
        if not self._running:
            self._clear_progress()

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._stop_waiting()
        self._running.clear()
        self._clear_progress()

    # ------------------------------------------------------------ events

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in MODEL_ANSWERED:
            self._stop_waiting()
        if kind == "text_delta":
            self._text(str(event.get("text", "")))
        elif kind == "tool_call":
            title, summary = event.get("title"), event.get("summary")
            self._labels[event.get("toolCallId", "")] = printable(title, one_line=True) if isinstance(title, str) and title \
                else call_label(str(event.get("name", "tool")), summary if isinstance(summary, str) else "")
        elif kind == "tool_call_update":
            self._tool_update(event)
        elif kind == "notice":
            self._status(self._paint(f"[note] {printable(str(event.get('message', '')), one_line=True)}", YELLOW))
        elif kind == "plan":
            marks = {"completed": "[x]", "in_progress": "[~]"}
            items = [i for i in event.get("items") or [] if isinstance(i, dict)]
            line = "; ".join(f"{marks.get(str(i.get('status')), '[ ]')} {i.get('content', '')}" for i in items)
            self._status(f"[plan] {printable(line, one_line=True)}")
        elif kind == "compaction":
            self._status(f"[note] conversation compacted: {event.get('before')} -> {event.get('after')} tokens")
        elif kind == "request_end":
            self.close()
            self._end_line()

    def _label(self, event: Mapping[str, Any]) -> str:
        """The call's row: the server's title ("Run npm test"); before v3, the name and summary."""
        return self._labels.get(event.get("toolCallId", "")) or call_label(str(event.get("name", "tool")), "")

    def _tool_update(self, event: dict[str, Any]) -> None:
        name = printable(str(event.get("name", "tool")), one_line=True)
        status = event.get("status")
        call_id = str(event.get("toolCallId", ""))
        tag = self._paint("[tool]", CYAN)
        if status == "awaiting_approval":
            self._status(f"{tag} {self._label(event)}: waiting for approval")
        elif status == "in_progress":
            self._running[call_id] = (self._label(event), time.monotonic())
            self._status(f"{tag} {self._label(event)}")
            self._schedule_tick()
        elif status in ("completed", "failed", "cancelled"):
            self._running.pop(call_id, None)
            self._status(f"{tag} {self._final_line(event, name, str(status))}")
            if not self._running:  # the results go back to the model: its next turn is a wait
                self.waiting(MODEL_WAIT)

    def _final_line(self, event: Mapping[str, Any], name: str, status: str) -> str:
        took = f"in {event.get('durationMs') or 0} ms"
        if was_refused(event):
            return self._paint(f"{self._label(event)} denied", RED, BOLD) + self._paint(
                "  (--approve auto allows it)", DIM
            )
        if status == "completed":
            line = printable(f"{name} completed {took}", one_line=True)
            code = exit_code_of(event)
            if code is not None:
                line += ", " + self._paint(f"exit code {code}", GREEN if code == 0 else RED)
            return line
        if status == "failed":
            first = (str(event.get("result") or "error").strip().splitlines() or ["error"])[0]
            return self._paint(printable(f"{name} failed: {first[:200]}", one_line=True), RED)
        return self._paint(f"{name} cancelled", YELLOW)

    # ------------------------------------------------------------ the end

    def result(self, result: dict[str, Any], outcome: dict[str, Any]) -> None:
        self.close()
        self._end_line()
        error = result.get("error") or {}
        stop = str(result.get("stopReason"))
        if stop == "error" and error.get("message"):
            self.note(f"error: {error['message']}")
        elif stop != "end_turn":
            self.note(f"stopped: {stop}")
        self._write(self.err, self.summary(result, outcome) + "\n")
        self.session(result.get("sessionId"))

    def failure(self, message: str, code: int | None = None) -> None:
        self.close()
        self._end_line()  # a partial answer keeps its own line
        super().failure(message, code)

    def session(self, session_id: str | None) -> None:
        if self._session_hint and session_id:
            self._write(self.err, f"[session] {session_id}  (continue with: tunacode-lsp run --session {session_id} PROMPT)\n")

    def summary(self, result: Mapping[str, Any], outcome: Mapping[str, Any]) -> str:
        """The closing lines: outcome, counts, tokens, cost, time; changed files; denied calls."""

        stop = str(result.get("stopReason"))
        usage = result.get("usage") or {}
        calls = result.get("toolCalls") or []
        changed: list[str] = outcome.get("changedFiles") or []
        denied: list[dict[str, Any]] = outcome.get("deniedToolCalls") or []
        seconds = time.monotonic() - self._started
        calls_text = _plural(len(calls), "tool call") + (f" ({len(denied)} denied)" if denied else "")
        parts = [
            _plural(int(result.get("turns") or 0), "turn"),
            calls_text,
            _plural(len(changed), "file") + " changed",
            f"{int(usage.get('totalTokens') or 0):,} tokens",
            f"cost ${float(usage.get('cost') or 0.0):.4f}",
            f"{seconds:.1f} s",
        ]
        head = self._paint(f"[done] {stop}", GREEN if stop == "end_turn" else RED, BOLD)
        lines = [f"{head}: " + ", ".join(parts)]
        lines.append("[changed] " + (printable(", ".join(changed), one_line=True) if changed else "nothing"))
        for call in denied:  # one line each: a command may itself hold "; "
            lines.append(self._paint(f"[denied] {call_label(str(call.get('name')), str(call.get('summary') or ''))}", RED))
        return "\n".join(lines)


class JsonLinesOutput(Output):
    """One JSON object a line on stdout: every event, then `{"type": "result", ...}`."""

    def fenced_streams(self) -> list[TextIO]:
        return [self.err]  # each stdout line is a JSON object: it starts with `{`, never a command

    def _line(self, obj: Mapping[str, Any]) -> None:
        self._write(self.out, json.dumps(obj, ensure_ascii=False) + "\n")

    def event(self, event: dict[str, Any]) -> None:
        self._line(event)

    def result(self, result: dict[str, Any], outcome: dict[str, Any]) -> None:
        self._line({"type": "result", **result, **outcome})

    def failure(self, message: str, code: int | None = None) -> None:
        super().failure(message, code)
        self._line({"type": "error", "code": code, "message": message})
