"""bash: run a shell command in the workspace, in its own process group, killed on abort or
timeout; inside the bubblewrap sandbox where it works (tools/sandbox.py). Nothing a command
started outlives its call: the sandbox's PID namespace ends it, and unsandboxed every process
carrying the call's marker in its environment is killed when the call ends."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import shutil
import signal as signals
import sys
import time
import unicodedata
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.core.redact import is_secret_name
from tunacode_lsp.tools.background_bash import background_description, start_background, with_background_field
from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolCancelled, ToolError
from tunacode_lsp.tools.kept_outputs import KeepingBuffer
from tunacode_lsp.tools.limits import MAX_PATH_CHARS
from tunacode_lsp.tools.paths import display_path, refuse_special, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.process_output import HeadTailBuffer
from tunacode_lsp.tools.sandbox import (
    bwrap_path,
    git_identity,
    harden_process,
    reap_sandbox_inits,
    sandbox_argv,
    sandbox_state,
)
from tunacode_lsp.tools.sandbox_network import network_mode, start_network, stop_network
from tunacode_lsp.tools.sandbox_protected import absent_protected, remove_appeared
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.timeouts import BASH_GRACE, with_bash_default

UPDATE_INTERVAL = 0.5
UPDATE_TAIL_BYTES = 1000
# After the command exits, children left in the background may still hold the output pipe.
DRAIN_SECONDS = 1.0
REAP_SECONDS = 2.0
MARKER = "TUNACODE_TOOL_CALL"
MAX_COMMAND_CHARS = 4_000  # longer commands are refused: an approval must show all of it

log = logging.getLogger(__name__)


# The shell's environment is this allowlist (plus `shellEnvPassthrough`), never the server's whole
# environment: tokens (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, NPM_TOKEN, ...) stay out of commands.
ENV_ALLOWED = frozenset({"PATH", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "TZ", "USER", "LOGNAME", "SHELL"})
ENV_ALLOWED_PREFIXES = ("LC_",)
SANDBOX_TMPDIR = "/tmp"


def shell_environment(
    inherit_secrets: bool, passthrough: tuple[str, ...] = (), *, sandboxed: bool = False
) -> dict[str, str]:
    """The command's environment: the allowlist, the names the user passes through, HOME (inside
    the sandbox an empty private folder at the same path), TMPDIR, and pager settings.
    `shellInheritSecrets: true` hands on the server's whole environment instead (keys included)."""

    if inherit_secrets:
        env = dict(os.environ)
    else:
        env = {
            name: value for name, value in os.environ.items()
            if (name in ENV_ALLOWED or name.startswith(ENV_ALLOWED_PREFIXES) or name in passthrough)
            and not (is_secret_name(name) and name not in passthrough)
        }
    env.setdefault("PATH", os.defpath)
    env["HOME"] = os.path.expanduser("~")
    if sandboxed:
        env["TMPDIR"] = SANDBOX_TMPDIR
        for name, value in git_identity().items():
            env.setdefault(name, value)
    elif "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    env.setdefault("PAGER", "cat")
    env.setdefault("GIT_PAGER", "cat")
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def _parameters(settings: ToolSettings) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command line, run with bash -c."},
            "cwd": {
                "type": "string",
                "maxLength": MAX_PATH_CHARS,
                "description": "Folder to run in, relative to the workspace root (must be inside it). Default: the root.",
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": settings.shell_max_timeout,
                "description": (
                    f"Seconds before the command is killed. Default {settings.shell_default_timeout:g}, "
                    f"at most {settings.shell_max_timeout:g}."
                ),
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }


def _description(settings: ToolSettings) -> str:
    return (
        "Run a shell command (bash -c) in the workspace, e.g. tests, builds, git. stdin is empty; "
        "stdout and stderr come back interleaved, with the exit code (a non-zero exit code is "
        f"reported, not an error). Output beyond about {settings.max_output_chars:,} characters keeps its "
        "head and tail and says how much was cut. The command is killed with its whole process "
        f"group after the timeout (default {settings.shell_default_timeout:g} s, at most "
        f"{settings.shell_max_timeout:g} s) or when the user aborts. Prefer read_file, grep and "
        "list_files to read and search, and edit_file/write_file to change files."
    ) + background_description(settings)


async def _pump(stream: asyncio.StreamReader, output: HeadTailBuffer, call: ToolCall) -> None:
    last_update = 0.0
    while chunk := await stream.read(65536):
        output.add(chunk)
        now = time.monotonic()
        if now - last_update >= UPDATE_INTERVAL:
            last_update = now
            call.report(output.recent(UPDATE_TAIL_BYTES), partial=True, bytes=output.total)


class _ShellProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Stream protocol that also reports the moment the shell exits: Process.wait() (3.11) waits
    for the output pipe to close too, which a background child can hold open for ever."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=2**16, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _start_shell(argv: list[str], cwd: Path, env: dict[str, str], fds: tuple[int, ...] = ()) -> tuple[
    asyncio.SubprocessTransport, _ShellProtocol
]:
    loop = asyncio.get_running_loop()
    return await loop.subprocess_exec(
        lambda: _ShellProtocol(loop),
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        pass_fds=fds,
    )


SANDBOX_START_ATTEMPTS = 2  # a sandbox whose child died before its network came up ran nothing: try once more


async def _start_command(
    argv_for: Callable[[int | None, int | None], list[str]], cwd: Path, env: dict[str, str], marker: str, *, pasta: bool,
) -> tuple[asyncio.SubprocessTransport, _ShellProtocol, int]:
    """Start the command; with `pasta`, in a sandbox held (bwrap --block-fd) until pasta gave its
    network namespace a network. Returns the transport, its protocol and pasta's pid (0: none)."""

    for attempt in range(1, SANDBOX_START_ATTEMPTS + 1):
        fds: tuple[int, ...] = ()
        info_r = block_w = -1
        if pasta:
            info_r, info_w = os.pipe()
            block_r, block_w = os.pipe()
            fds = (info_w, block_r)
        try:
            transport, protocol = await _start_shell(argv_for(*(fds or (None, None))), cwd, env, fds)
        except OSError as exc:
            for fd in (info_r, block_w):
                if fd >= 0:
                    os.close(fd)
            raise ToolError(f"Cannot start the shell: {exc}.") from None
        finally:
            for fd in fds:
                os.close(fd)
        if not pasta:
            return transport, protocol, 0
        pasta_pid = 0
        released = False
        try:
            pasta_pid = await start_network(info_r, {"PATH": env["PATH"], MARKER: marker})
            os.write(block_w, b"1")  # the network is up: bwrap runs the command
            released = True
            return transport, protocol, pasta_pid
        except BrokenPipeError as exc:  # the sandbox's child is gone before it read: nothing ran
            failure: BaseException = exc
        except (TimeoutError, OSError) as exc:
            failure = exc
            attempt = SANDBOX_START_ATTEMPTS  # not a child that died: no second try
        except asyncio.CancelledError:
            await _end_held(transport, protocol, block_w)
            block_w = -1
            transport.close()
            if pasta_pid:
                stop_network(pasta_pid)
                _to_reap.add(pasta_pid)
            raise
        finally:
            os.close(info_r)
            if released:
                os.close(block_w)
        await _end_held(transport, protocol, block_w)
        if pasta_pid:
            stop_network(pasta_pid)
            _to_reap.add(pasta_pid)
        said = await _said_before_exit(protocol) if attempt >= SANDBOX_START_ATTEMPTS else ""
        transport.close()
        if attempt >= SANDBOX_START_ATTEMPTS:
            raise ToolError(
                f"The sandbox's network (pasta) could not start: {failure}{said}. No command was run. Install passt, "
                "or set shellNetwork to false to run commands without network."
            ) from None
        log.warning("the sandbox ended before its network came up (%s); starting it again", failure)
    raise AssertionError("unreachable")


async def _end_held(transport: asyncio.SubprocessTransport, protocol: _ShellProtocol, block_w: int) -> None:
    """End a sandbox still held on its block fd, and only then close that fd: bwrap reads the
    fd's end of file as "go" and would run the command. Once bwrap is reaped, what it started
    inside has its SIGKILL (--die-with-parent) and runs nothing more."""

    try:
        kill_group(transport.get_pid())
        try:
            await _reaped(protocol)
        except asyncio.CancelledError:
            pass
    finally:
        if block_w >= 0:
            os.close(block_w)


async def _said_before_exit(protocol: _ShellProtocol) -> str:
    """What bwrap printed before it ended (briefly, bounded), as a clause for the error."""

    stream = protocol.stdout
    if stream is None:
        return ""
    try:
        text = (await asyncio.wait_for(stream.read(2000), 1.0)).decode(errors="replace").strip()
    except (TimeoutError, OSError):
        return ""
    return f" (the sandbox said: {text[:500]})" if text else ""


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signals.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _reaped(protocol: _ShellProtocol) -> None:
    """Wait (briefly) until the killed shell has been reaped, so no process outlives the call."""
    await asyncio.wait({protocol.exited}, timeout=REAP_SECONDS)


def marker_value() -> str:
    return f"{os.getpid()}-{uuid.uuid4().hex}"


_to_reap: set[int] = set()  # killed orphans adopted by this (subreaper) process


def _reap() -> None:
    reap_sandbox_inits()
    for pid in list(_to_reap):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not ours (or reaped already)
            done = pid
        if done:
            _to_reap.discard(pid)


def kill_marked(prefix: bytes, *, skip: int | None = None) -> int:
    """Kill every process whose environment carries a marker starting with `prefix`."""

    _reap()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (os.getpid(), skip):
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                found = any(item.startswith(prefix) for item in handle.read().split(b"\0"))
        except OSError:
            continue
        if found:
            try:
                os.kill(int(entry), signals.SIGKILL)
                killed += 1
                _to_reap.add(int(entry))
            except (ProcessLookupError, PermissionError):
                pass
    return killed


@atexit.register
def kill_leftovers() -> None:
    """At exit, nothing a command of this server started lives on."""

    if sys.platform.startswith("linux"):
        kill_marked(f"{MARKER}={os.getpid()}-".encode())


def command_problem(command: str) -> str | None:
    """Why a command cannot be run as the user would see it, or None."""

    if "\x00" in command:
        return "The command contains a NUL byte (\\x00), which no shell can run; send it without one."
    if len(command) > MAX_COMMAND_CHARS:
        return (
            f"The command is {len(command):,} characters long; at most {MAX_COMMAND_CHARS:,} can be shown to the "
            "user for approval. Write a script file with write_file and run that instead."
        )
    hidden = next((c for c in command if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"), None)
    if hidden is not None:
        return (
            f"The command contains the control or invisible character U+{ord(hidden):04X}, which would hide part of "
            "it from the user; send it without one."
        )
    return None


def create_bash_tool(root: Path, settings: ToolSettings | None = None) -> AgentTool:
    settings = with_bash_default(settings or ToolSettings())
    real_root = workspace_real_root(root)
    shell = shutil.which("bash") or "/bin/sh"
    harden_process()

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        problem = command_problem(args["command"])
        if problem:
            raise ToolError(problem)
        cwd = resolve_in_workspace(real_root, args.get("cwd", "."), field="cwd")
        refuse_special(cwd, display_path(real_root, cwd))
        if not cwd.is_dir():
            raise ToolError(f"cwd '{args.get('cwd')}' is not a folder of the workspace.")
        timeout = float(args.get("timeout", settings.shell_default_timeout))
        sandbox = sandbox_state(settings.shell_sandbox)
        if settings.shell_sandbox == "required" and not sandbox.active:
            raise ToolError(
                f"The shell sandbox is required (shellSandbox: required) but cannot be used here: {sandbox.reason}. "
                "No command was run."
            )
        sandboxed = bool(sandbox.active and bwrap_path())
        env = shell_environment(settings.shell_inherit_secrets, settings.shell_env_passthrough, sandboxed=sandboxed)
        marker = marker_value()
        env[MARKER] = marker
        started = time.monotonic()
        network = network_mode(sandboxed, settings.shell_network)
        absent = absent_protected(real_root) if sandboxed else None
        if args.get("background"):  # returns at once; process_output / process_kill follow it
            return await start_background(settings, args["command"], cwd, env, marker, shell=shell, workspace=real_root,
                                          sandboxed=sandboxed, network=network, absent=absent)
        removed: list[str] = []

        def argv_for(info_fd: int | None, block_fd: int | None) -> list[str]:
            if not sandboxed:
                return [shell, "-c", args["command"]]
            return sandbox_argv(bwrap_path() or "bwrap", shell=shell, command=args["command"], cwd=cwd, workspace=real_root,
                                network=network, home=env["HOME"], read_only=settings.shell_read_only_paths,
                                info_fd=info_fd, block_fd=block_fd)

        transport, protocol, pasta_pid = await _start_command(argv_for, cwd, env, marker, pasta=network == "pasta")
        pid = transport.get_pid()
        output = KeepingBuffer(settings.max_output_chars, settings.outputs_dir)
        assert protocol.stdout is not None
        reader = asyncio.create_task(_pump(protocol.stdout, output, call))
        aborter = asyncio.ensure_future(call.signal.wait()) if call.signal is not None else None
        watched: set[asyncio.Future[Any]] = {protocol.exited} if aborter is None else {protocol.exited, aborter}
        note = ""
        try:
            done, _ = await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if protocol.exited not in done:
                kill_group(pid)
                await _reaped(protocol)
                if aborter is not None and aborter in done:
                    raise ToolCancelled()
                await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
                raise ToolError(
                    f"The command timed out after {timeout:g} s and was killed (with its process group). "
                    "Use a longer timeout, or run less at once. Output so far:\n" + output.render()
                    + await asyncio.to_thread(output.kept)
                )
            finished, _ = await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
            if reader not in finished:
                note = "\n[Background processes are still running and holding the output; stopped reading it.]"
        except asyncio.CancelledError:
            kill_group(pid)
            await _reaped(protocol)
            raise
        finally:
            for task in (reader, aborter):
                if task is not None and not task.done():
                    task.cancel()
            if transport.get_returncode() is None:
                kill_group(pid)
            transport.close()
            if pasta_pid:
                stop_network(pasta_pid)
                _to_reap.add(pasta_pid)
            if sys.platform.startswith("linux"):
                kill_marked(f"{MARKER}={marker}".encode(), skip=pid)  # what escaped the group (setsid, nohup, ...)
            if absent is not None:  # files that run code outside the sandbox, created by the command
                removed = remove_appeared(real_root, absent)
        exit_code = transport.get_returncode()
        text = output.render() or "(no output)"
        if not text.endswith("\n"):
            text += "\n"
        note += await asyncio.to_thread(output.kept)
        if removed:
            note += (
                f"\n[Removed what the command created at {', '.join(removed)}: these files make code run outside the "
                "sandbox (the editor, git, direnv, CI run them), so they are written only with write_file/edit_file, "
                "which ask the user.]"
            )
        return text_result(
            f"{text}[exit code {exit_code}]{note}",
            exit_code=exit_code,
            cwd=display_path(real_root, cwd),
            truncated=output.cut > 0,
            cut_bytes=output.cut,
            duration_ms=int((time.monotonic() - started) * 1000),
            sandboxed=sandboxed,
            network=network,
        )

    return make_tool(
        name="bash",
        label="Run command",
        description=_description(settings),
        parameters=with_background_field(settings, _parameters(settings)),
        run=run,
        seconds=lambda args: BASH_GRACE if args.get("background") else float(args.get("timeout", settings.shell_default_timeout)) + BASH_GRACE,
        changes_files=True,
    )
