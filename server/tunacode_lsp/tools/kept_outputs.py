"""Whole outputs kept: when a tool's result is cut for the model (bash's output, grep's matches),
all of it (up to MAX_KEPT_BYTES) is written to a file in the session's own outputs folder
(`<data folder>/outputs/<session id>/`, given by the agent layer as
`ToolSettings.outputs_dir`), and the cut result names that file. read_file reads such a file by
the path it was given (`kept_file`), confined to that one folder: not the rest of the data
folder (the store, the checkpoints), not another session's outputs. The folder holds at most
MAX_SESSION_BYTES (the oldest files go first) and is deleted with the session
(`remove_session_outputs`).

Tools built once for every session (MCP tools) learn the session's folder from
`outputs_folder()`, set around each of their calls by `keeping_outputs`.
"""

from __future__ import annotations

import os
import re
import shutil
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunacode_lsp.core.redact import process_redactor
from tunacode_lsp.tools.process_output import HeadTailBuffer

if TYPE_CHECKING:
    from tinyagent.agent_types import AgentTool

MAX_KEPT_BYTES = 5 * 1024 * 1024  # one kept output
MAX_SESSION_BYTES = 50 * 1024 * 1024  # all kept outputs of one session
OUTPUTS_FOLDER = "outputs"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def session_outputs_dir(data_folder: Path, session_id: str) -> Path | None:
    """The outputs folder of one session (None for an id that is not a plain name)."""

    if not _SESSION_ID.fullmatch(session_id) or ".." in session_id:
        return None
    return data_folder / OUTPUTS_FOLDER / session_id


def remove_session_outputs(data_folder: Path, session_id: str) -> None:
    folder = session_outputs_dir(data_folder, session_id)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _make_room(folder: Path, size: int) -> None:
    """Delete the oldest kept files until `size` more bytes fit in the session's bound."""

    files = []
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False):
            info = entry.stat(follow_symlinks=False)
            files.append((info.st_mtime_ns, info.st_size, entry.path))
    total = sum(size for _, size, _ in files)
    for _, old_size, path in sorted(files):
        if total + size <= MAX_SESSION_BYTES:
            break
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        total -= old_size


def keep_output(folder: Path | None, tool: str, data: bytes) -> Path | None:
    """Write a whole output (cut to MAX_KEPT_BYTES) to a new file of the folder; its path, or
    None when there is no folder or it cannot be written (the cut result simply names none)."""

    if folder is None:
        return None
    # no key of the server's on disk either (results are redacted as they are sent; this file is not)
    text = data[:MAX_KEPT_BYTES].decode("utf-8", "surrogateescape")
    data = process_redactor().text(text).encode("utf-8", "surrogateescape")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _make_room(folder, len(data))
        path = folder / f"{tool}-{os.urandom(6).hex()}.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return path
    except OSError:
        return None


def kept_note(path: Path | None, size: int, *, complete: bool = True) -> str:
    if path is None:
        return ""
    whole = "The whole output" if complete else f"The first {MAX_KEPT_BYTES // (1024 * 1024)} MB of the output"
    return f"\n[{whole} ({size:,} bytes) is kept in {path}: read it with read_file (offset/limit) to see the rest.]"


def kept_file(folder: Path | None, raw: str) -> Path | None:
    """The real path of a kept output named by `raw` (absolute), when it is a file directly in
    this session's outputs folder; else None (the path is then a workspace path as usual)."""

    if folder is None or not isinstance(raw, str) or not os.path.isabs(raw) or "\x00" in raw:
        return None
    real_folder = Path(os.path.realpath(folder))
    real = Path(os.path.realpath(raw))
    if real.parent != real_folder or not real.name.endswith(".txt"):
        return None
    return real


class KeepingBuffer(HeadTailBuffer):
    """bash's head-and-tail buffer that also holds the first MAX_KEPT_BYTES of the output, to keep
    them in a file when the shown output is cut."""

    def __init__(self, limit: int, folder: Path | None) -> None:
        super().__init__(limit)
        self.folder = folder
        self.whole = bytearray()

    def add(self, chunk: bytes) -> None:
        super().add(chunk)
        if self.folder is not None and len(self.whole) < MAX_KEPT_BYTES:
            self.whole += chunk[: MAX_KEPT_BYTES - len(self.whole)]

    def kept(self, tool: str = "bash") -> str:
        """The note naming the kept file, when the output was cut ('' otherwise)."""

        if self.cut == 0 or self.folder is None:
            return ""
        path = keep_output(self.folder, tool, bytes(self.whole))
        return kept_note(path, len(self.whole), complete=self.total <= MAX_KEPT_BYTES)


_CALL_FOLDER: ContextVar[Path | None] = ContextVar("kept_outputs_folder", default=None)


def outputs_folder() -> Path | None:
    """The outputs folder of the session whose call is running (set by `keeping_outputs`)."""

    return _CALL_FOLDER.get()


def keeping_outputs(tools: list[AgentTool], folder: Path | None) -> list[AgentTool]:
    """The same tools, each call running with `outputs_folder()` = this session's folder."""

    if folder is None:
        return tools
    from tinyagent.agent_types import AgentTool

    def wrap(tool: AgentTool) -> AgentTool:
        inner = tool.execute
        assert inner is not None

        async def execute(*args: Any, **kwargs: Any) -> Any:
            token = _CALL_FOLDER.set(folder)
            try:
                return await inner(*args, **kwargs)
            finally:
                _CALL_FOLDER.reset(token)

        return AgentTool(
            name=tool.name, description=tool.description, parameters=tool.parameters, label=tool.label, execute=execute
        )

    return [wrap(tool) for tool in tools]
