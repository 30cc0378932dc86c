"""Running ripgrep for grep and list_files: linear-time regexes, .gitignore rules, a child
process killed on abort, output bounded while it is read.

The `rg` binary comes from the `ripgrep` wheel this package depends on (found through the
package's own files, not PATH, so the tested version runs).
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import signal
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.tools.base import ToolCall
from tunacode_lsp.tools.errors import ToolCancelled, ToolError

SKIPPED_FOLDERS = (".git", ".hg", ".svn", ".jj", "node_modules", ".venv", "venv", "__pycache__",
                   ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs")
COMMON_FLAGS = ["--hidden", "--no-require-git", "--no-config", "--color", "never", "--no-messages",
                *[arg for folder in SKIPPED_FOLDERS for arg in ("--glob", f"!{folder}/")]]
RG_SECONDS = 120.0  # one search at most
FINISH_SECONDS = 5.0  # a stopped rg to end and be reaped
DRAIN_CHUNK = 256 * 1024


def glob_matcher(glob: str | None) -> Callable[[str], bool]:
    """gitignore-style glob on the path relative to the root: `*.py` matches at any depth."""

    if not glob:
        return lambda rel: True
    from pathspec import PathSpec  # with the first glob: not part of building the tools (~7 ms)

    return PathSpec.from_lines("gitignore", [glob]).match_file


@functools.cache
def rg_binary() -> str:
    try:
        for file in metadata.files("ripgrep") or []:
            if file.name in ("rg", "rg.exe"):
                path = Path(str(file.locate())).resolve()
                if path.is_file() and os.access(path, os.X_OK):
                    return str(path)
    except metadata.PackageNotFoundError:
        pass
    found = shutil.which("rg")  # a development checkout without the wheel
    if found:
        return found
    raise ToolError("ripgrep (rg) is not installed: reinstall tunacode-lsp (it depends on ripgrep==14.1.0).")


def confined(argv: list[str], workspace: Path) -> list[str]:
    """rg inside bubblewrap where it works: only the workspace (read-only), the system's
    libraries and rg itself are mounted, so a folder swapped for a link to the outside while
    rg walks leads nowhere. Without bwrap, rg runs as it is (it follows no link it finds)."""

    from tunacode_lsp.tools.sandbox import bwrap_path, sandbox_state

    bwrap = bwrap_path()
    if bwrap is None or not sandbox_state("auto").active:
        return argv
    return [
        bwrap, "--ro-bind", "/usr", "/usr", "--ro-bind-try", "/lib", "/lib", "--ro-bind-try", "/lib64", "/lib64",
        "--ro-bind", argv[0], argv[0], "--ro-bind", str(workspace), str(workspace), "--chdir", str(workspace),
        "--unshare-all", "--die-with-parent", "--new-session", "--", *argv,
    ]


class Lines:
    """What one rg run printed, up to the bounds."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.stopped = False  # a bound was reached and rg was stopped
        self.error = ""
        self.code: int | None = None
        self.rest: list[str] = []  # lines past the bounds, when asked for
        self.rest_size = 0
        self.rest_full = False  # there was more than rest_bytes


async def run_rg(
    args: list[str], cwd: Path, call: ToolCall, *, max_lines: int, max_chars: int, keep: Callable[[str], bool] | None = None,
    stdin_data: bytes | None = None, rest_bytes: int = 0,
) -> Lines:
    """rg with our flags; `keep` filters lines before they count (ripgrep's own --glob would
    override .gitignore, so a glob is applied here instead). With `stdin_data`, rg searches
    that text (args name `-`). With `rest_bytes`, the lines past the bounds are read on into
    `Lines.rest` up to that many bytes (to be kept whole, tools/kept_outputs.py)."""
    out = Lines()
    proc = await asyncio.create_subprocess_exec(
        *confined([rg_binary(), *COMMON_FLAGS, *args], cwd), cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL if stdin_data is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    feeding: asyncio.Task[None] | None = None
    if stdin_data is not None:
        feeding = asyncio.ensure_future(_feed(proc, stdin_data))

    async def read() -> None:
        assert proc.stdout is not None
        size = 0
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                return
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if line.startswith("./"):
                line = line[2:]
            if keep is not None and not keep(line):
                continue
            if out.stopped or len(out.lines) >= max_lines or size + len(line) > max_chars:
                out.stopped = True
                if out.rest_size + len(line) + 1 > rest_bytes:
                    out.rest_full = bool(rest_bytes)
                    return
                out.rest.append(line)
                out.rest_size += len(line) + 1
                continue
            out.lines.append(line)
            size += len(line) + 1

    try:
        raced = await race_abort(read(), call.signal, timeout=RG_SECONDS)
        if raced.aborted:
            raise ToolCancelled()
        if raced.timed_out:
            out.stopped = True
    finally:
        if feeding is not None:
            feeding.cancel()
        if proc.returncode is None:
            _stop(proc.pid)
        await _finish(proc, out)
    return out


def _stop(pid: int) -> None:
    """Kill rg, and only rg: confined, `pid` is bwrap, whose child (the sandbox's init) runs rg;
    with rg gone the init exits and bwrap reaps it and exits. Killing bwrap or the init would
    orphan the process below it to the server (a child subreaper), a zombie nobody reaps."""

    from tunacode_lsp.tools.sandbox import children_of

    leaves, below = [], [pid]
    while below:
        current = below.pop()
        children = list(children_of(current))
        below += children
        if not children:
            leaves.append(current)
    for leaf in leaves:
        try:
            os.kill(leaf, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


async def _finish(proc: asyncio.subprocess.Process, out: Lines) -> None:
    """Read both pipes to their end (the first 4 KiB of stderr kept) and reap rg, within
    FINISH_SECONDS. Output left unread pauses its pipe, and asyncio's `Process.wait()`
    answers only once every pipe is closed: without the drain a stopped rg could hold the
    call until the tool's own bound."""

    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = proc.stdout, proc.stderr

    async def drain_stdout() -> None:
        while await stdout.read(DRAIN_CHUNK):
            pass

    async def read_stderr() -> bytes:
        kept = await stderr.read(4096)
        while await stderr.read(DRAIN_CHUNK):
            pass
        return kept

    try:
        async with asyncio.timeout(FINISH_SECONDS):
            _, kept = await asyncio.gather(drain_stdout(), read_stderr())
            out.error = kept.decode(errors="replace").strip()
            out.code = await proc.wait()
        from tunacode_lsp.tools.sandbox import reap_sandbox_inits

        reap_sandbox_inits()
    except TimeoutError:
        try:  # rg did not end after its stop: end bwrap too
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        out.code = proc.returncode


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the text rg searches, then close its stdin (rg may stop reading early: fine)."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass
