"""Running hooks (`hooks` setting, agent/hooks_config.py) at the four points of a request.

Each hook is a shell command, run like the bash tool's commands: in the shell sandbox where
it works (tools/sandbox.py, the workspace writable, the rest read-only), with the shell's
environment (no keys), in its own process group, in the workspace root. It gets one JSON
object on stdin: `event`, `sessionId`, `requestId`, and where there is one `tool`, `args`,
`result`. Then:

- exit 0: go on; a JSON object `{"context": "..."}` on stdout is added for the model;
- exit 2: block (the tool call, or the prompt); stderr is the reason the model gets;
- any other exit, a timeout, output past its bound, a hook that cannot start: a notice,
  and the request goes on. A hook never wedges a request: it is killed at its timeout, at
  the request's abort, and when it prints more than `MAX_OUTPUT_BYTES`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal as signals
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.hooks_config import HookDef
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.settings import ToolSettings

MAX_OUTPUT_BYTES = 1024 * 1024  # a hook printing more is stopped
KEPT_BYTES = 64 * 1024  # of stdout and stderr each
MAX_CONTEXT_CHARS = 10_000
MAX_REASON_CHARS = 2_000
MAX_PAYLOAD_STRING = 50_000
BLOCK_EXIT = 2


@dataclass
class HookOutcome:
    blocked: bool = False
    reason: str = ""  # why it was blocked (the hook's stderr), for the model
    blocked_by: str = ""  # which hook
    context: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


@dataclass
class _Finished:
    code: int | None  # None: killed (timeout, abort, too much output)
    stdout: bytes
    stderr: bytes
    why_killed: str = ""
    removed: list[str] = field(default_factory=list)  # what it created where code runs outside the sandbox, removed


def _bounded(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_PAYLOAD_STRING else value[:MAX_PAYLOAD_STRING] + "… [cut]"
    if isinstance(value, dict) and depth < 8:
        return {str(k): _bounded(v, depth + 1) for k, v in list(value.items())[:200]}
    if isinstance(value, list) and depth < 8:
        return [_bounded(v, depth + 1) for v in value[:200]]
    return value if isinstance(value, int | float | bool) or value is None else str(value)[:200]


class HookRunner:
    """The hooks of one request."""

    def __init__(
        self, hooks: tuple[HookDef, ...], root: Path, settings: ToolSettings, *,
        session_id: str, request_id: str, abort_signal: asyncio.Event,
    ) -> None:
        self.hooks = hooks
        self.root = root
        self.settings = settings
        self.session_id = session_id
        self.request_id = request_id
        self.abort_signal = abort_signal

    def any_for(self, event: str, tool: str | None = None) -> bool:
        return any(h.event == event and h.matches(tool) for h in self.hooks)

    async def run(
        self, event: str, *, tool: str | None = None, args: dict[str, Any] | None = None, result: str | None = None,
        prompt: str | None = None,
    ) -> HookOutcome:
        outcome = HookOutcome()
        payload: dict[str, Any] = {"event": event, "sessionId": self.session_id, "requestId": self.request_id}
        if tool is not None:
            payload["tool"] = tool
            payload["args"] = _bounded(args or {})
        if result is not None:
            payload["result"] = _bounded(result)
        if prompt is not None:
            payload["prompt"] = _bounded(prompt)
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8", "replace")
        for hook in self.hooks:
            if hook.event != event or not hook.matches(tool) or self.abort_signal.is_set():
                continue
            finished = await self._run_one(hook, data)
            what = hook.describe()
            if finished.removed:
                outcome.notices.append(
                    f"Removed what {what} created at {', '.join(finished.removed)}: these files make code run "
                    "outside the sandbox."
                )
            if finished.code is None:
                outcome.notices.append(f"{what[0].upper()}{what[1:]} was stopped: {finished.why_killed}; going on.")
                continue
            stderr = finished.stderr.decode("utf-8", "replace").strip()
            if finished.code == 0:
                context = _context_of(finished.stdout)
                if context:
                    outcome.context.append(context)
            elif finished.code == BLOCK_EXIT:
                outcome.blocked = True
                outcome.reason = clip(stderr, MAX_REASON_CHARS) or "(the hook gave no reason)"
                outcome.blocked_by = what
                return outcome
            else:
                said = f": {clip(stderr, 300)}" if stderr else ""
                outcome.notices.append(f"{what[0].upper()}{what[1:]} exited with code {finished.code}{said}; going on.")
        return outcome

    async def _run_one(self, hook: HookDef, data: bytes) -> _Finished:
        from tunacode_lsp.tools.bash import MARKER, marker_value, shell_environment
        from tunacode_lsp.tools.sandbox import bwrap_path, reap_sandbox_inits, sandbox_argv, sandbox_state
        from tunacode_lsp.tools.sandbox_protected import absent_protected

        sandbox = await asyncio.to_thread(sandbox_state, self.settings.shell_sandbox)
        if self.settings.shell_sandbox == "required" and not sandbox.active:
            return _Finished(None, b"", b"", f"the shell sandbox is required but cannot be used here ({sandbox.reason})")
        shell = shutil.which("bash") or "/bin/sh"
        bwrap = bwrap_path()
        sandboxed = bool(sandbox.active and bwrap)
        root = Path(os.path.realpath(self.root))
        # never the keys, whatever shellInheritSecrets says: the allowlist and the names passed through
        env = shell_environment(False, self.settings.shell_env_passthrough, sandboxed=sandboxed)
        marker = env[MARKER] = marker_value()  # what escapes the group is found by it (unsandboxed)
        argv = (
            # loopback only: a hook gets no network (no pasta to attach for it)
            sandbox_argv(bwrap or "bwrap", shell=shell, command=hook.command, cwd=root, workspace=root, network="none",
                         home=env.get("HOME"), read_only=self.settings.shell_read_only_paths)
            if sandboxed else [shell, "-c", hook.command]
        )
        absent = await asyncio.to_thread(absent_protected, root) if sandboxed else None
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=root, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            return _Finished(None, b"", b"", f"it could not start ({exc})")
        budget = [MAX_OUTPUT_BYTES]
        over = asyncio.Event()
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        readers = [
            asyncio.ensure_future(_read_bounded(process.stdout, budget, over)),
            asyncio.ensure_future(_read_bounded(process.stderr, budget, over)),
        ]
        writer = asyncio.ensure_future(_write_stdin(process.stdin, data))
        exited = asyncio.ensure_future(process.wait())
        aborted = asyncio.ensure_future(self.abort_signal.wait())
        too_much = asyncio.ensure_future(over.wait())
        why = ""
        try:
            done, _ = await asyncio.wait({exited, aborted, too_much}, timeout=hook.timeout, return_when=asyncio.FIRST_COMPLETED)
            if exited not in done:
                why = (
                    "the request was stopped" if aborted in done
                    else f"it printed more than {MAX_OUTPUT_BYTES:,} bytes" if too_much in done
                    else f"it ran longer than its timeout of {hook.timeout:g} s"
                )
            else:
                await asyncio.wait(readers, timeout=1.0)  # what is left in the pipes
        finally:
            _kill_group(process.pid, marker)
            for task in (aborted, too_much, writer, *readers):
                if not task.done():
                    task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(exited), 2.0)
            if not exited.done():
                exited.cancel()
            reap_sandbox_inits()  # the sandbox's init, which bwrap leaves to this (subreaper) process
        removed: list[str] = []
        if absent is not None:  # what the hook created where code runs outside the sandbox goes
            from tunacode_lsp.tools.sandbox_protected import remove_appeared

            removed = await asyncio.to_thread(remove_appeared, root, absent)
        out = readers[0].result() if readers[0].done() and not readers[0].cancelled() else b""
        err = readers[1].result() if readers[1].done() and not readers[1].cancelled() else b""
        if why:
            return _Finished(None, out, err, why, removed)
        return _Finished(process.returncode, out, err, removed=removed)


async def _write_stdin(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a hook need not read its input
    finally:
        with contextlib.suppress(Exception):
            stdin.close()


async def _read_bounded(stream: asyncio.StreamReader, budget: list[int], over: asyncio.Event) -> bytes:
    kept = bytearray()
    while True:
        chunk = await stream.read(65_536)
        if not chunk:
            return bytes(kept)
        if len(kept) < KEPT_BYTES:
            kept += chunk[: KEPT_BYTES - len(kept)]
        budget[0] -= len(chunk)
        if budget[0] < 0:
            over.set()
            return bytes(kept)


def _kill_group(pid: int, marker: str) -> None:
    """The hook's process group, and whatever left it (setsid, nohup) carrying its marker."""

    from tunacode_lsp.tools.bash import MARKER, kill_marked

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signals.SIGKILL)
    if sys.platform.startswith("linux"):
        kill_marked(f"{MARKER}={marker}".encode(), skip=pid)


def _context_of(stdout: bytes) -> str:
    text = stdout.decode("utf-8", "replace").strip()
    if not text.startswith("{"):
        return ""
    try:
        value = json.loads(text)
    except ValueError:
        return ""
    context = value.get("context") if isinstance(value, dict) else None
    return clip(context, MAX_CONTEXT_CHARS) if isinstance(context, str) and context.strip() else ""
