"""`tunacode-lsp run PROMPT`: one agent request headless, for CI and scripts.

It starts the server over stdio and speaks plain LSP to it with pygls's client, exactly as
an editor would: flags become `initializationOptions`, the prompt a `tunacode.request`,
`tunacode/event` notifications the output. Ctrl-C aborts through `tunacode.abort`, so the
stored session stays valid and can be resumed with `--session`. docs/ci.md documents the
flags, the output formats and the exit codes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from tunacode_lsp.cli.lsp_client import keep_raw_params
from tunacode_lsp.contract.protocol import (
    COMMAND_ABORT,
    COMMAND_REQUEST,
    EVENT_NOTIFICATION,
    MODEL_NOT_USABLE,
    PROTOCOL_VERSION,
    UNKNOWN_SESSION,
)

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_MAX_TURNS = 3
EXIT_TIMEOUT = 124
EXIT_CANCELLED = 130

EXIT_BY_STOP_REASON: dict[str, int] = {
    "end_turn": EXIT_OK,
    "error": EXIT_ERROR,
    "max_turns": EXIT_MAX_TURNS,
    "timeout": EXIT_TIMEOUT,
    "cancelled": EXIT_CANCELLED,
}
SUMMARY_KEYS = ("filepath", "command", "pattern", "path", "glob")
# JSON-RPC errors of requests that never started which are the caller's to fix
USAGE_ERROR_CODES = frozenset({MODEL_NOT_USABLE, UNKNOWN_SESSION, -32602})

APPROVE_MODES = {"auto": "auto", "deny": "read-only"}
START_TIMEOUT_S = 30.0  # server start + initialize, on a busy machine
TIMEOUT_GRACE_S = 15.0  # past --timeout, the server's own timeout should have answered
SHUTDOWN_TIMEOUT_S = 5.0
STDERR_TAIL_LINES = 40


class UsageError(Exception):
    """A bad command line or configuration: exit code 2."""


@dataclass(frozen=True)
class RunOptions:
    prompt: str
    session_id: str | None = None
    model: str | None = None
    base_url: str | None = None
    cwd: Path = Path(".")
    json: bool = False
    approve: str = "deny"
    max_turns: int | None = None
    timeout: float | None = None
    verbose: bool = False


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tunacode-lsp run",
        description="Run one agent request headless: the answer on stdout, tool activity on stderr.",
        epilog="Exit codes: 0 end_turn, 1 error, 2 usage or configuration error, 3 max_turns, "
        "124 timeout, 130 cancelled (Ctrl-C).",
    )
    parser.add_argument("prompt", help="the prompt, or - to read it from stdin")
    parser.add_argument("--session", metavar="ID", help="continue this stored session")
    parser.add_argument("--model", metavar="M", help="provider:model_id, e.g. openai:gpt-4.1")
    parser.add_argument("--base-url", metavar="URL", help="endpoint of an openai-compatible model")
    parser.add_argument("--cwd", metavar="DIR", default=".", help="workspace folder (default: the current one)")
    parser.add_argument("--json", action="store_true", help="JSON Lines on stdout: every event, then the result")
    parser.add_argument(
        "--approve", choices=sorted(APPROVE_MODES), default="deny",
        help="tools that change something: auto = allow all, deny = read-only (default)",
    )
    parser.add_argument("--max-turns", metavar="N", type=int, help="model turns for this request")
    parser.add_argument("--timeout", metavar="S", type=float, help="seconds for the request (0 = none)")
    parser.add_argument("--verbose", action="store_true", help="pass the server's log (stderr) through")
    return parser


def parse_args(argv: list[str], stdin: TextIO | None = None) -> RunOptions:
    """The command line as RunOptions; UsageError (exit 2) for anything unusable."""

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage and the problem
        if exc.code == 0:
            raise
        raise UsageError("") from None
    prompt = args.prompt
    if prompt == "-":
        prompt = (stdin or sys.stdin).read()
    if not prompt.strip():
        raise UsageError("the prompt is empty" + (" (nothing on stdin)" if args.prompt == "-" else ""))
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError(f"--max-turns must be at least 1, got {args.max_turns}")
    if args.timeout is not None and not 0 <= args.timeout <= 86_400:
        raise UsageError(f"--timeout must be from 0 to 86400 seconds, got {args.timeout:g}")
    cwd = Path(args.cwd).expanduser()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    for flag, value in (("--session", args.session), ("--model", args.model), ("--base-url", args.base_url)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag} must not be empty")
    return RunOptions(
        prompt=prompt,
        session_id=args.session,
        model=args.model,
        base_url=args.base_url,
        cwd=cwd.resolve(),
        json=args.json,
        approve=args.approve,
        max_turns=args.max_turns,
        timeout=args.timeout,
        verbose=args.verbose,
    )


def initialization_options(opts: RunOptions) -> dict[str, Any]:
    """The server options the flags stand for (unset flags leave the server's defaults)."""

    options: dict[str, Any] = {"approval": APPROVE_MODES[opts.approve]}
    for key, value in (
        ("model", opts.model),
        ("baseUrl", opts.base_url),
        ("maxTurns", opts.max_turns),
        ("requestTimeout", opts.timeout),
    ):
        if value is not None:
            options[key] = value
    return options


def request_params(opts: RunOptions) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": opts.prompt}
    if opts.session_id:
        params["sessionId"] = opts.session_id
    if opts.model:  # beats the model a resumed session recorded
        params["model"] = opts.model
    return params


def tool_summary(args: Any, limit: int = 80) -> str:
    """The argument that says what a tool call does (its file, command or pattern), on one line."""

    if not isinstance(args, dict):
        return ""
    for key in SUMMARY_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            line = value.strip().splitlines()[0]
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def exit_code_for(stop_reason: str) -> int:
    return EXIT_BY_STOP_REASON.get(stop_reason, EXIT_ERROR)


# ---------------------------------------------------------------- output


class Output:
    """Where a run's events, result and problems go; plain text or JSON Lines."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err

    def _write(self, stream: TextIO, text: str) -> None:
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:  # `| head` closed the pipe: nothing more to show
            pass

    def passthrough(self, text: str) -> None:
        """Text for stderr as it is (the server's log under --verbose)."""

        self._write(self.err, text)

    def event(self, event: dict[str, Any]) -> None: ...

    def result(self, result: dict[str, Any]) -> None: ...

    def failure(self, message: str, code: int | None = None) -> None:
        self.note(f"error: {message}")

    def note(self, message: str) -> None:
        self._write(self.err, f"tunacode-lsp: {message}\n")


class PlainOutput(Output):
    """The answer streams to stdout; tool lifecycle and notices go to stderr."""

    def __init__(self, out: TextIO, err: TextIO, *, session_hint: bool = True) -> None:
        super().__init__(out, err)
        self._session_hint = session_hint
        self._mid_line = False  # stdout holds a started line
        self._args: dict[str, dict[str, Any]] = {}

    def _text(self, text: str) -> None:
        if text:
            self._write(self.out, text)
            self._mid_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._mid_line:
            self._write(self.out, "\n")
            self._mid_line = False

    def _status(self, line: str) -> None:
        self._end_line()  # keeps a terminal showing both streams readable
        self._write(self.err, line + "\n")

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "text_delta":
            self._text(str(event.get("text", "")))
        elif kind == "tool_call":
            self._args[event.get("toolCallId", "")] = event.get("args") or {}
        elif kind == "tool_call_update":
            self._tool_update(event)
        elif kind == "notice":
            self._status(f"[note] {event.get('message', '')}")
        elif kind == "plan":
            marks = {"completed": "[x]", "in_progress": "[~]"}
            items = [i for i in event.get("items") or [] if isinstance(i, dict)]
            self._status("[plan] " + "; ".join(f"{marks.get(str(i.get('status')), '[ ]')} {i.get('content', '')}" for i in items))
        elif kind == "compaction":
            self._status(f"[note] conversation compacted: {event.get('before')} -> {event.get('after')} tokens")
        elif kind == "request_end":
            self._end_line()

    def _tool_update(self, event: dict[str, Any]) -> None:
        name = str(event.get("name", "tool"))
        status = event.get("status")
        if status == "in_progress":
            summary = tool_summary(self._args.get(event.get("toolCallId", "")))
            self._status(f"[tool] {name} {summary}".rstrip())
        elif status == "completed":
            self._status(f"[tool] {name} completed in {event.get('durationMs') or 0} ms")
        elif status == "failed":
            first = (str(event.get("result") or "error").strip().splitlines() or ["error"])[0]
            self._status(f"[tool] {name} failed: {first[:200]}")
        elif status == "cancelled":
            self._status(f"[tool] {name} cancelled")

    def result(self, result: dict[str, Any]) -> None:
        self._end_line()
        error = result.get("error") or {}
        if result.get("stopReason") == "error" and error.get("message"):
            self.note(f"error: {error['message']}")
        elif result.get("stopReason") != "end_turn":
            self.note(f"stopped: {result.get('stopReason')}")
        session_id = result.get("sessionId")
        if self._session_hint:
            self._write(self.err, f"[session] {session_id}  (continue with: tunacode-lsp run --session {session_id} PROMPT)\n")


class JsonLinesOutput(Output):
    """One JSON object a line on stdout: every event, then `{"type": "result", ...}`."""

    def _line(self, obj: Mapping[str, Any]) -> None:
        self._write(self.out, json.dumps(obj, ensure_ascii=False) + "\n")

    def event(self, event: dict[str, Any]) -> None:
        self._line(event)

    def result(self, result: dict[str, Any]) -> None:
        self._line({"type": "result", **result})

    def failure(self, message: str, code: int | None = None) -> None:
        super().failure(message, code)
        self._line({"type": "error", "code": code, "message": message})


# ---------------------------------------------------------------- the run


class _ServerFailed(Exception):
    """The server process died or stopped answering."""


class HeadlessRun:
    """One server process, one request: start, initialize, request, shut down."""

    def __init__(
        self,
        opts: RunOptions,
        output: Output,
        *,
        env: Mapping[str, str] | None = None,
        server_command: list[str] | None = None,
    ) -> None:
        self.opts = opts
        self.output = output
        self.env = dict(os.environ if env is None else env)
        self.server_command = server_command or [sys.executable, "-m", "tunacode_lsp"]
        self.client = LanguageClient("tunacode-lsp-run", "1")
        self.session_id: str | None = opts.session_id
        self.request_id: str | None = None
        self.interrupted = False
        self._abort_sent = False
        self._force_quit = asyncio.Event()
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._register_handlers()

    # ------------------------------------------------------------ protocol handlers

    def _register_handlers(self) -> None:
        client = self.client
        keep_raw_params(client)
        answer = "Allow" if self.opts.approve == "auto" else "Deny"

        # sync handlers: pygls runs them as each message is read, so events keep their order
        @client.feature(EVENT_NOTIFICATION)
        def on_event(params: Any) -> None:
            if isinstance(params, dict):
                self._on_event(params)

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def on_prompt(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
            self.output.note(f"{params.message} -> {answer}")
            return types.MessageActionItem(title=answer)

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.output.note(params.message)

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            if self.opts.verbose:
                self.output.note(f"server: {params.message}")

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "request_start":
            self.session_id = event.get("sessionId") or self.session_id
            self.request_id = event.get("requestId")
            if self.interrupted:
                self._send_abort()
        self.output.event(event)

    # ------------------------------------------------------------ interrupts

    def interrupt(self) -> None:
        """Ctrl-C: abort the request through the protocol; a second one quits at once."""

        if self.interrupted:
            self._force_quit.set()
            return
        self.interrupted = True
        if self.request_id is not None:
            self._send_abort()

    def _send_abort(self) -> None:
        if self._abort_sent or self.client.stopped:
            return
        self._abort_sent = True
        target = {"requestId": self.request_id} if self.request_id else {"sessionId": self.session_id}
        future = self.client.workspace_execute_command(
            types.ExecuteCommandParams(command=COMMAND_ABORT, arguments=[target])
        )
        future.add_done_callback(lambda f: f.exception())  # an answer is not needed

    # ------------------------------------------------------------ server process

    @property
    def _process(self) -> asyncio.subprocess.Process | None:
        return self.client._server  # pygls keeps the process it started here

    async def _start(self) -> None:
        await self.client.start_io(
            *self.server_command,
            cwd=str(self.opts.cwd),
            env=self.env,
            start_new_session=True,  # a terminal's Ctrl-C reaches us, not the server
        )
        process = self._process
        assert process is not None and process.stderr is not None
        self._stderr_task = asyncio.ensure_future(self._drain_stderr(process.stderr))
        root = self.opts.cwd.as_uri()
        result = await self._answer(
            self.client.initialize_async(
                types.InitializeParams(
                    process_id=os.getpid(),
                    client_info=types.ClientInfo(name="tunacode-lsp run"),
                    root_uri=root,
                    workspace_folders=[types.WorkspaceFolder(uri=root, name=self.opts.cwd.name or "workspace")],
                    capabilities=types.ClientCapabilities(
                        window=types.WindowClientCapabilities(work_done_progress=False),
                    ),
                    initialization_options=initialization_options(self.opts),
                )
            ),
            START_TIMEOUT_S,
        )
        version = ((result.capabilities.experimental or {}).get("tunacode") or {}).get("protocolVersion")
        if version != PROTOCOL_VERSION:
            self.output.note(f"warning: the server speaks protocol {version!r}, this client {PROTOCOL_VERSION}")
        self.client.initialized(types.InitializedParams())

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        # always read: a full pipe would block the server
        while line := await stream.readline():
            text = line.decode("utf-8", "replace")
            self._stderr_tail.append(text)
            if self.opts.verbose:
                self.output.passthrough(text)

    async def _answer(self, awaitable: Any, timeout: float | None) -> Any:
        """Await a response, or fail when the server dies, stalls, or the user insists on quitting."""

        task = asyncio.ensure_future(awaitable)
        quit_task = asyncio.ensure_future(self._force_quit.wait())
        try:
            done, _ = await asyncio.wait({task, quit_task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            quit_task.cancel()
        if task in done:
            try:
                return task.result()
            except JsonRpcException:
                raise
            except Exception as exc:  # pygls fails pending requests when the server exits
                raise _ServerFailed(str(exc)) from exc
        task.cancel()
        if quit_task in done:
            raise asyncio.CancelledError
        raise TimeoutError

    async def _stop(self) -> None:
        client, process = self.client, self._process
        if process is not None and process.returncode is None and not client.stopped:
            try:
                await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_TIMEOUT_S)
                client.exit(None)
                await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - a server that will not stop is killed below
                pass
        self._kill()
        await client.stop()
        if self._stderr_task is not None:
            await asyncio.wait({self._stderr_task}, timeout=SHUTDOWN_TIMEOUT_S)

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # its own group: takes tool processes too
            except ProcessLookupError:
                pass

    def _server_log_tail(self) -> str:
        tail = "".join(self._stderr_tail).strip()
        return f"\n--- server stderr (last lines) ---\n{tail}" if tail and not self.opts.verbose else ""

    # ------------------------------------------------------------ the request

    async def _request(self) -> dict[str, Any]:
        timeout = self.opts.timeout
        guard = timeout + TIMEOUT_GRACE_S if timeout else None
        pending = self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=COMMAND_REQUEST, arguments=[request_params(self.opts)])
        )
        try:
            result = await self._answer(pending, guard)
        except TimeoutError:
            # the server's own timeout did not answer: abort, then give it a moment
            self._send_abort()
            raise
        if not isinstance(result, dict) or "stopReason" not in result:
            raise _ServerFailed(f"unexpected answer to {COMMAND_REQUEST}: {result!r}")
        return result

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        handled = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.interrupt)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                pass
        try:
            return await self._run()
        finally:
            try:
                await self._stop()
            finally:  # only now: a Ctrl-C while stopping must not become a traceback
                for sig in handled:
                    loop.remove_signal_handler(sig)

    async def _run(self) -> int:
        try:
            await self._start()
            if self.interrupted:
                self.output.note("cancelled before the request started")
                return EXIT_CANCELLED
            result = await self._request()
        except JsonRpcException as exc:
            self.output.failure(exc.message, exc.code)
            return EXIT_USAGE if exc.code in USAGE_ERROR_CODES else EXIT_ERROR
        except asyncio.CancelledError:
            self.output.failure("cancelled (interrupted twice: the server was stopped)", None)
            self._kill()
            return EXIT_CANCELLED
        except TimeoutError:
            self.output.failure(f"no answer from the server within the timeout ({self.opts.timeout or START_TIMEOUT_S:g} s)", None)
            return EXIT_TIMEOUT if self.opts.timeout else EXIT_ERROR
        except (_ServerFailed, OSError) as exc:
            if self._stderr_task is not None:  # a dead server's last words are still in the pipe
                await asyncio.wait({self._stderr_task}, timeout=SHUTDOWN_TIMEOUT_S)
            self.output.failure(f"the language server failed: {exc}{self._server_log_tail()}", None)
            return EXIT_ERROR
        self.output.result(result)
        return exit_code_for(result["stopReason"])


async def run_request(
    opts: RunOptions,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    env: Mapping[str, str] | None = None,
    session_hint: bool = True,
) -> int:
    """The whole of `run` after parsing: what the demo calls too. Returns the exit code.

    `env` is the server's environment (default: ours); `session_hint` prints the session
    id and how to continue it at the end (plain mode).
    """

    out = out or sys.stdout
    err = err or sys.stderr
    output: Output = JsonLinesOutput(out, err) if opts.json else PlainOutput(out, err, session_hint=session_hint)
    return await HeadlessRun(opts, output, env=env).run()


def quiet_pygls(verbose: bool) -> None:
    """pygls logs warnings (e.g. ignored notifications) that are not the user's business."""

    logger = logging.getLogger("pygls")
    if not verbose:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def main(argv: list[str]) -> int:
    try:
        opts = parse_args(argv)
    except UsageError as exc:
        if str(exc):
            print(f"tunacode-lsp run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    quiet_pygls(opts.verbose)
    return asyncio.run(run_request(opts))
