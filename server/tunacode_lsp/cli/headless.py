"""The headless client: one server process, one request, spoken as plain LSP over its pipes.

Flags become `initializationOptions`, the prompt a `tunacode.request`, `tunacode/event`
notifications the output (cli/output.py). Ctrl-C aborts through `tunacode.abort`, so the
stored session stays valid and can be resumed with `--session`; a Ctrl-C before the request
is sent stops the server and exits 130 quietly. While the server starts, the workspace is
snapshotted (cli/changes.py) so the result can say which files the request changed.

`--timeout S` bounds the whole run, not only the request: start-up, the MCP wait, the
snapshots and the request all end within S + TIMEOUT_GRACE_S seconds of the start (exit 124).
The snapshots run in daemon threads with a bounded wait of their own, so a file that blocks
(which the confined reader already refuses) could never hold up the exit either.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from tunacode_lsp.cli import changes
from tunacode_lsp.cli import run as run_args
from tunacode_lsp.cli.output import MODEL_WAIT, JsonLinesOutput, Output, PlainOutput, was_refused, workflow_command_fence
from tunacode_lsp.cli.rpc import ConnectionLost, RpcError, RpcPeer
from tunacode_lsp.cli.run import (
    EXIT_CANCELLED,
    EXIT_ERROR,
    EXIT_SCHEMA,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    EarlyInterrupt,
    RunOptions,
    outcome_exit_code,
    request_params,
    schema_problem,
)
from tunacode_lsp.cli.spawn import spawn_server
from tunacode_lsp.contract.consent import CONSENT_PROMPT_HEAD, RUNS_CODE_OUTSIDE_WARNING
from tunacode_lsp.contract.names import (  # not contract/protocol.py: its wire types are not needed here
    COMMAND_ABORT,
    COMMAND_REQUEST,
    COMMAND_SETTINGS_CONSENT,
    COMMAND_STATUS,
    EVENT_NOTIFICATION,
    MODEL_NOT_USABLE,
    PROTOCOL_VERSION,
    UNKNOWN_SESSION,
)

# JSON-RPC errors of requests that never started which are the caller's to fix
USAGE_ERROR_CODES = frozenset({MODEL_NOT_USABLE, UNKNOWN_SESSION, -32602})
START_TIMEOUT_S = 30.0  # server start + initialize, on a busy machine
MCP_WAIT_S = 40.0  # --mcp-config: the servers' start (the server gives each mcpStartupTimeout, 30 s)
MCP_POLL_S = 0.1
TIMEOUT_GRACE_S = 15.0  # past --timeout, the server's own timeout should have answered
SNAPSHOT_WAIT_S = 60.0  # a workspace snapshot (a bounded walk) that takes longer is given up
SHUTDOWN_TIMEOUT_S = 5.0
TIMED_OUT_STOP_S = 1.0
# After answering `shutdown` the server has settled everything (history stored, leases
# released); its own exit can still take a while (interpreter teardown), so it gets this
# long and is then stopped, rather than holding the caller's step.
EXIT_GRACE_S = 0.05
STDERR_TAIL_LINES = 40
PIPE_LIMIT = 1 << 16


class _ServerFailed(Exception):
    """The server process died or stopped answering."""


class _Cancelled(Exception):
    """Interrupted before the request was sent."""


def in_daemon_thread(work: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """`work(*args)` in a daemon thread. Unlike asyncio.to_thread (whose workers the loop joins
    at exit), a call that never returns can be given up on and never holds up the exit."""

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            result, error = work(*args), None
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting side
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=run, name=f"tunacode-{getattr(work, '__name__', 'work')}", daemon=True).start()
    return future


class HeadlessRun:
    """One server process, one request: start, initialize, request, shut down."""

    def __init__(
        self,
        opts: RunOptions,
        output: Output,
        *,
        env: Mapping[str, str] | None = None,
        server_command: list[str] | None = None,
        process: subprocess.Popen[bytes] | None = None,
        early: EarlyInterrupt | None = None,
    ) -> None:
        self.opts = opts
        self.output = output
        self.env = dict(os.environ if env is None else env)
        self.server_command = server_command
        self.process = process
        self.early = early
        self.peer: RpcPeer | None = None
        self.session_id: str | None = opts.session_id
        self.request_id: str | None = None
        self.interrupted = False
        self._abort_sent = False
        self._request_sent = False
        self._force_quit = asyncio.Event()
        self._interrupt_seen = asyncio.Event()
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._tasks: list[asyncio.Task[Any]] = []
        self._transport: asyncio.WriteTransport | None = None
        self._summaries: dict[str, str] = {}
        self.denied: dict[str, dict[str, Any]] = {}
        self._before: asyncio.Future[changes.Snapshot] | None = None
        self._before_snapshot: changes.Snapshot | None = None
        self._shutdown: asyncio.Future[Any] | None = None  # sent as soon as the answer is in
        self._initialized = False  # a server that never answered `initialize` is not asked to shut down
        self._timed_out = False  # the whole run passed --timeout (+ grace)

    # ------------------------------------------------------------ messages from the server

    def _on_notification(self, method: str, params: Any) -> None:
        if method == EVENT_NOTIFICATION and isinstance(params, dict):
            self._on_event(params)
        elif method == "window/showMessage" and isinstance(params, dict):
            self.output.note(shown_message(params))
        # window/logMessage: the same lines are on the server's stderr, which --verbose shows once

    def _on_request(self, method: str, params: Any) -> Any:
        if method == "window/showMessageRequest":
            message = str(params.get("message", "")) if isinstance(params, dict) else ""
            if message.startswith(CONSENT_PROMPT_HEAD):  # a repository-defined executable
                return {"title": self._consent(message)}
            # an edit of a file that runs code outside the sandbox is never allowed headless
            answer = "Allow" if self.opts.approve == "auto" and RUNS_CODE_OUTSIDE_WARNING not in message else "Deny"
            self.output.note(f"{message} -> {answer}")
            return {"title": answer}
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, dict) else None
            return [None] * (len(items) if isinstance(items, list) else 1)
        if method in ("window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability"):
            return None
        raise RpcError(-32601, f"{method} is not supported by tunacode-lsp run")

    def _consent(self, message: str) -> str:
        """Only --trust-workspace starts what the workspace defines (--approve auto never does)."""

        if self.opts.trust_workspace:
            self.output.note(f"{message}\n-> Allow (--trust-workspace)")
            return "Allow"
        what = message.partition(". Start it?")[0]
        self.output.note(f"skipped: {what}; not started (--trust-workspace starts what the workspace defines)")
        return "Deny"

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "request_start":
            self.session_id = event.get("sessionId") or self.session_id
            self.request_id = event.get("requestId")
            if self.interrupted:
                self._send_abort()
        elif kind == "tool_call":
            summary = event.get("summary")
            self._summaries[str(event.get("toolCallId"))] = summary if isinstance(summary, str) else ""
        elif kind == "tool_call_update" and event.get("status") == "failed" and was_refused(event):
            call_id = str(event.get("toolCallId"))
            self.denied[call_id] = {
                "toolCallId": call_id, "name": event.get("name"), "summary": self._summaries.get(call_id, ""),
            }
        self.output.event(event)

    # ------------------------------------------------------------ interrupts

    def interrupt(self) -> None:
        """Ctrl-C: abort the request through the protocol; a second one quits at once."""

        if self.interrupted:
            self._force_quit.set()
            return
        self.interrupted = True
        self._interrupt_seen.set()
        if self.request_id is not None:
            self._send_abort()

    def _send_abort(self) -> None:
        if self._abort_sent or self.peer is None or self.peer.closed:
            return
        self._abort_sent = True
        target = {"requestId": self.request_id} if self.request_id else {"sessionId": self.session_id}
        future = self.peer.request("workspace/executeCommand", {"command": COMMAND_ABORT, "arguments": [target]})
        future.add_done_callback(lambda f: f.exception())  # an answer is not needed

    # ------------------------------------------------------------ server process

    async def _connect(self) -> None:
        if self.process is None:
            self.process = spawn_server(self.opts.cwd, self.env, self.server_command)
        process = self.process
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        loop = asyncio.get_running_loop()
        stdout = asyncio.StreamReader(limit=PIPE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), process.stdout)
        stderr = asyncio.StreamReader(limit=PIPE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), process.stderr)
        self._transport, _ = await loop.connect_write_pipe(asyncio.Protocol, process.stdin)
        self.peer = RpcPeer(stdout, self._write, on_notification=self._on_notification, on_request=self._on_request)
        self._tasks.append(asyncio.ensure_future(self.peer.serve()))
        self._tasks.append(asyncio.ensure_future(self._drain_stderr(stderr)))

    def _write(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            raise ConnectionLost("the server's stdin is closed")
        self._transport.write(data)

    async def _initialize(self) -> None:
        assert self.peer is not None
        root = self.opts.cwd.as_uri()
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "tunacode-lsp run"},
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": self.opts.cwd.name or "workspace"}],
            "capabilities": {"window": {"workDoneProgress": False}},
            "initializationOptions": run_args.initialization_options(self.opts),
        }
        result = await self._answer(self.peer.request("initialize", params), START_TIMEOUT_S)
        capabilities = result.get("capabilities") if isinstance(result, dict) else None
        experimental = (capabilities or {}).get("experimental") or {}
        version = (experimental.get("tunacode") or {}).get("protocolVersion") if isinstance(experimental, dict) else None
        if version != PROTOCOL_VERSION:
            self.output.note(f"warning: the server speaks protocol {version!r}, this client {PROTOCOL_VERSION}")
        self.peer.notify("initialized", {})
        self._initialized = True

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        # always read: a full pipe would block the server
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line over the limit: take it in pieces
                line = await stream.read(PIPE_LIMIT)
            if not line:
                return
            text = line.decode("utf-8", "replace")
            self._stderr_tail.append(text)
            if self.opts.verbose:
                self.output.passthrough(text)

    async def _answer(self, awaitable: Any, timeout: float | None) -> Any:
        """Await a response, or fail when the server dies, stalls, or the user insists on quitting."""

        task = asyncio.ensure_future(awaitable)
        quit_task = asyncio.ensure_future(self._force_quit.wait())
        early = None if self._request_sent else asyncio.ensure_future(self._interrupt_seen.wait())
        waited = {task, quit_task} | ({early} if early else set())
        try:
            done, _ = await asyncio.wait(waited, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            quit_task.cancel()
            if early is not None:
                early.cancel()
        if task in done:
            try:
                return task.result()
            except RpcError:
                raise
            except ConnectionLost as exc:
                raise _ServerFailed(str(exc)) from exc
        task.cancel()
        if quit_task in done:
            raise asyncio.CancelledError
        if early is not None and early in done:
            raise _Cancelled
        raise TimeoutError

    async def _stop(self) -> None:
        process, peer = self.process, self.peer
        graceful = self._initialized and peer is not None and not peer.closed and not self._force_quit.is_set()
        if process is not None and process.poll() is None and graceful:
            assert peer is not None
            try:
                await asyncio.wait_for(self._shutdown or peer.request("shutdown"), SHUTDOWN_TIMEOUT_S)
                peer.notify("exit")
                if self._transport is not None:
                    self._transport.close()  # flushes `exit`; the EOF frees the server's stdin reader thread
                await self._wait_exit(EXIT_GRACE_S)
            except Exception:  # noqa: BLE001 - a server that will not stop is killed below
                pass
        self._kill()
        if self._transport is not None:
            self._transport.close()
        if self._tasks:  # past --timeout, a pipe a stray grandchild holds open is not waited on long
            await asyncio.wait(self._tasks, timeout=TIMED_OUT_STOP_S if self._timed_out else SHUTDOWN_TIMEOUT_S)
        if process is not None:
            await self._wait_exit(SHUTDOWN_TIMEOUT_S)  # reaped: no zombie left behind

    async def _wait_exit(self, timeout: float) -> bool:
        """Wait (bounded) for the server process to end; True when it did. Linux tells the
        moment through a pidfd; elsewhere a thread waits."""

        process = self.process
        assert process is not None
        if process.poll() is not None:
            return True
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            try:
                await asyncio.to_thread(process.wait, timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        def on_exit() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(pidfd, on_exit)
        try:
            await asyncio.wait({ended}, timeout=timeout)
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        return process.poll() is not None

    def _kill(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # its own group: takes tool processes too
            except ProcessLookupError:
                pass

    def _server_log_tail(self) -> str:
        tail = "".join(self._stderr_tail).strip()
        return f"\n--- server stderr (last lines) ---\n{tail}" if tail and not self.opts.verbose else ""

    async def _trust_project_settings(self) -> None:
        """--trust-workspace: consent to the project settings file as it is now, for this run
        only (tunacode.settings.consent with persist false); --approve auto never does."""

        assert self.peer is not None
        status = await self._answer(
            self.peer.request("workspace/executeCommand", {"command": COMMAND_STATUS, "arguments": [{}]}), START_TIMEOUT_S
        )
        files = ((status or {}).get("settings") or {}).get("files") or []
        project = next((f for f in files if isinstance(f, dict) and f.get("source") == "project"), None)
        if not project or not project.get("heldBack") or project.get("consented") or not project.get("fingerprint"):
            return
        await self._answer(self.peer.request("workspace/executeCommand", {
            "command": COMMAND_SETTINGS_CONSENT, "arguments": [{"fingerprint": project["fingerprint"], "persist": False}],
        }), START_TIMEOUT_S)
        self.output.note(f"{project.get('path')}: applied whole (--trust-workspace): " + "; ".join(project["heldBack"]))

    async def _mcp_started(self) -> None:
        """--mcp-config: the server starts MCP servers in the background and a request takes the
        tools that are ready when it starts, so a run waits (bounded) until none is `starting`."""

        assert self.peer is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MCP_WAIT_S
        self.output.waiting("starting MCP servers")
        servers: list[Any] = []
        while True:
            status = await self._answer(
                self.peer.request("workspace/executeCommand", {"command": COMMAND_STATUS, "arguments": [{}]}), START_TIMEOUT_S
            )
            servers = [s for s in (status or {}).get("mcpServers") or [] if isinstance(s, dict)]
            if not any(s.get("state") == "starting" for s in servers) or loop.time() > deadline:
                break
            if self.interrupted:
                raise _Cancelled
            await asyncio.sleep(MCP_POLL_S)  # the server has no notification for a state change
        for server in servers:
            if server.get("state") != "ready":
                why = f": {server['error']}" if server.get("error") else ""
                self.output.note(f"warning: MCP server {server.get('name')!r} is {server.get('state')}{why}")

    # ------------------------------------------------------------ the request

    async def _request(self) -> dict[str, Any]:
        assert self.peer is not None
        timeout = self.opts.timeout
        guard = timeout + TIMEOUT_GRACE_S if timeout else None
        if self._before is not None:
            try:
                self._before_snapshot = await asyncio.wait_for(asyncio.shield(self._before), SNAPSHOT_WAIT_S)
                for skipped in self._before_snapshot.skipped[:5]:
                    self.output.note(f"warning: {skipped}")
            except Exception as exc:  # noqa: BLE001 - the run goes on; only changedFiles is lost
                why = f"it took longer than {SNAPSHOT_WAIT_S:g} s" if isinstance(exc, TimeoutError) else str(exc)
                self.output.note(f"warning: could not snapshot the workspace ({why}); changedFiles stays empty")
        if self.interrupted:
            raise _Cancelled
        self._request_sent = True
        self.output.waiting(MODEL_WAIT)
        pending = self.peer.request(
            "workspace/executeCommand", {"command": COMMAND_REQUEST, "arguments": [request_params(self.opts)]}
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

    async def _outcome(self, result: dict[str, Any]) -> dict[str, Any]:
        """The final line's additions: changed files (the server's list, else our snapshot diff)
        and the denied tool calls."""

        changed = result.get("changedFiles")
        if not isinstance(changed, list):
            before = self._before_snapshot
            changed = []
            if before is not None:
                try:
                    after = await asyncio.wait_for(in_daemon_thread(changes.take, self.opts.cwd, before), SNAPSHOT_WAIT_S)
                except TimeoutError:
                    self.output.note(f"warning: the workspace snapshot took longer than {SNAPSHOT_WAIT_S:g} s; changedFiles stays empty")
                else:
                    changed = changes.changed_files(before, after)
        changed = changes.without_own_outputs(self.opts.cwd, [str(path) for path in changed])
        return {"changedFiles": changed, "deniedToolCalls": list(self.denied.values())}

    def _install_signals(self) -> list[signal.Signals]:
        loop = asyncio.get_running_loop()
        handled: list[signal.Signals] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.interrupt)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                pass
        if self.early is not None and self.early.fired:  # the loop's handlers replaced the early ones
            self.interrupt()
        return handled

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        handled = self._install_signals()
        try:
            return await self._within_timeout()
        finally:
            try:
                self.output.close()
                await self._stop()
            finally:  # only now: a Ctrl-C while stopping must not become a traceback
                for sig in handled:
                    loop.remove_signal_handler(sig)

    async def _within_timeout(self) -> int:
        """The run, bounded as a whole by --timeout (+ grace): start-up and waits included."""

        if not self.opts.timeout:
            return await self._run()
        whole = self.opts.timeout + TIMEOUT_GRACE_S
        task = asyncio.ensure_future(self._run())
        done, _ = await asyncio.wait({task}, timeout=whole)
        if task in done:
            return task.result()
        self._timed_out = True
        if self._request_sent:
            self._send_abort()  # the server settles the session while we stop it
        task.cancel()
        try:
            return await task
        except asyncio.CancelledError:  # cancelled past _run's own handling (the wrap-up)
            self.output.failure(f"the run did not finish within --timeout {self.opts.timeout:g} s (+{TIMEOUT_GRACE_S:g} s)", None)
            return EXIT_TIMEOUT

    async def _run(self) -> int:
        try:
            if self.interrupted:
                raise _Cancelled
            # the snapshot and the server's start overlap; the request waits for both
            self._before = in_daemon_thread(changes.take, self.opts.cwd)
            await self._connect()
            await self._initialize()
            if self.opts.trust_workspace:
                await self._trust_project_settings()
            if self.opts.mcp_servers or self.opts.trust_workspace:
                await self._mcp_started()
            result = await self._request()
        except _Cancelled:
            self._kill()  # nothing was asked of it yet: nothing to settle
            return EXIT_CANCELLED
        except RpcError as exc:
            self.output.failure(exc.message, exc.code)
            return EXIT_USAGE if exc.code in USAGE_ERROR_CODES else EXIT_ERROR
        except asyncio.CancelledError:
            if self._timed_out:
                if not self._request_sent:
                    self._kill()  # nothing was asked of it yet: nothing to settle
                self.output.failure(
                    f"the run did not finish within --timeout {self.opts.timeout:g} s (+{TIMEOUT_GRACE_S:g} s): stopped", None
                )
                return EXIT_TIMEOUT
            self.output.failure("cancelled (interrupted twice: the server was stopped)", None)
            self._kill()
            return EXIT_CANCELLED
        except TimeoutError:
            self.output.failure(f"no answer from the server within the timeout ({self.opts.timeout or START_TIMEOUT_S:g} s)", None)
            return EXIT_TIMEOUT if self.opts.timeout else EXIT_ERROR
        except (_ServerFailed, OSError) as exc:
            self._kill()  # one that broke the protocol but lives has nothing to settle
            if len(self._tasks) > 1:  # a dead server's last words are still in the pipe
                await asyncio.wait({self._tasks[1]}, timeout=SHUTDOWN_TIMEOUT_S)
            self.output.failure(f"the language server failed: {exc}{self._server_log_tail()}", None)
            self.output.session(self.session_id)  # what was stored so far can be continued
            return EXIT_ERROR
        if self.peer is not None and not self.peer.closed:  # the server winds down while we print
            self._shutdown = self.peer.request("shutdown")
        outcome = await self._outcome(result)
        stop = str(result["stopReason"])
        if stop == "max_cost":  # the server's notice said how much was spent and the cap
            outcome["maxCostReached"] = True
        schema_error = None
        if self.opts.output_schema is not None and stop == "end_turn":
            schema_error = schema_problem(str(result.get("text") or ""), self.opts.output_schema)
            if schema_error:
                outcome["schemaError"] = schema_error
        self.output.result(result, outcome)
        if schema_error:
            self.output.note(f"error: {schema_error}")
        code = outcome_exit_code(self.opts, stop, denied=len(outcome["deniedToolCalls"]), changed=len(outcome["changedFiles"]))
        return EXIT_SCHEMA if schema_error and code == 0 else code


SERVER_MESSAGE_PREFIX = "TunaCode: "  # what an editor's popup needs; the CLI's lines already say tunacode-lsp
MESSAGE_KINDS = {1: "error: ", 2: "warning: "}  # LSP MessageType Error, Warning


def shown_message(params: dict[str, Any]) -> str:
    """A window/showMessage as one CLI note: `warning: ...`, not `TunaCode: ...` after our own prefix."""

    message = str(params.get("message", ""))
    message = message.removeprefix(SERVER_MESSAGE_PREFIX)
    level = params.get("type")
    kind = MESSAGE_KINDS.get(level, "") if isinstance(level, int) else ""
    return message if message.startswith(kind) else kind + message


def make_output(opts: RunOptions, out: TextIO, err: TextIO, *, session_hint: bool = True) -> Output:
    return JsonLinesOutput(out, err) if opts.json else PlainOutput(out, err, session_hint=session_hint)


async def run_request(
    opts: RunOptions,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    env: Mapping[str, str] | None = None,
    session_hint: bool = True,
    process: subprocess.Popen[bytes] | None = None,
    early: EarlyInterrupt | None = None,
) -> int:
    """The whole of `run` after parsing: what the demo calls too. Returns the exit code.

    `env` is the server's environment (default: ours); `session_hint` prints the session
    id and how to continue it at the end (plain mode); `process` is a server already
    started (by `main`, before these imports).
    """

    output = make_output(opts, out or sys.stdout, err or sys.stderr, session_hint=session_hint)
    with workflow_command_fence(output.fenced_streams()):  # a model's `::error::` is text in a CI log
        return await HeadlessRun(opts, output, env=env, process=process, early=early).run()


def run_main(opts: RunOptions, process: subprocess.Popen[bytes], early: EarlyInterrupt) -> int:
    """`main`'s second half, once the server runs: the event loop, and quiet on a late Ctrl-C."""

    try:
        return asyncio.run(run_request(opts, process=process, early=early))
    except KeyboardInterrupt:  # only between the loop's end and here
        return EXIT_CANCELLED
    finally:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
