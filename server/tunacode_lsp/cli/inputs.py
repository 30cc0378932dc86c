"""What `tunacode-lsp run` sends besides the prompt, read from files named on the command line:
`--context-file PATH[:START-END]` (a file or a range of its lines as a context item),
`--image PATH` (an image context item) and `--mcp-config FILE` (MCP servers, the
`.mcp.json` shape). Each problem is a UsageError (exit 2) naming the flag and the file, before
the server starts. Light: json, base64 and pathlib only.

Each file is read as a regular file only, bounded, opened without waiting (`O_NONBLOCK`): a
FIFO, a device or a socket named on the command line (or a link to one) is refused at once
instead of hanging the run. Whether a context file lies inside the workspace is the server's
check (the confined reader, tools/confined_read.py); text read here travels with its resolved
path, so a link out of the workspace is refused there and its text never reaches the model."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the server's own limit (agent/context.py)
MAX_CONTEXT_ITEMS = 50
MAX_TEXT_BYTES = 4_000_000  # a --context-file range is read up to this (the server's own file bound)
MAX_MCP_CONFIG_BYTES = 1_000_000
_RANGE = re.compile(r"^(?P<path>.+):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


class InputError(ValueError):
    """A file named on the command line cannot be used (the message says why)."""


def read_regular(path: Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; InputError (naming `what`) for
    anything else. Never waits on a FIFO: opened with O_NONBLOCK, checked before reading."""

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{what}: cannot read it ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what}: not a regular file (a folder, FIFO, device or socket); refused")
        if info.st_size > limit:
            raise InputError(f"{what}: {info.st_size:,} bytes, more than the {limit:,} it may have")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{what}: more than the {limit:,} bytes it may have")
    return data


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def context_file_item(spec: str) -> dict[str, Any]:
    """`PATH` -> a file item; `PATH:START-END` or `PATH:LINE` (1-based, inclusive) -> a
    selection item with the lines' text."""

    match = _RANGE.match(spec)
    path = Path(match["path"] if match and not Path(spec).exists() else spec).expanduser()
    if path.is_dir():
        raise InputError(f"--context-file {spec}: a folder, not a file (name the files to give)")
    if not path.exists():
        raise InputError(f"--context-file {spec}: no such file")
    if not path.is_file():
        raise InputError(f"--context-file {spec}: not a regular file (a folder, FIFO, device or socket); refused")
    uri = path.resolve().as_uri()
    if match is None or Path(spec).exists():
        return {"type": "file", "uri": uri}
    start = int(match["start"])
    end = int(match["end"] or start)
    try:
        lines = read_regular(path, MAX_TEXT_BYTES, f"--context-file {spec}").decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise InputError(f"--context-file {spec}: not a readable UTF-8 text file ({exc})") from None
    count = len(lines) - (1 if lines[-1] == "" else 0)
    if not 1 <= start <= end or end > count:
        raise InputError(f"--context-file {spec}: lines {start}-{end} are not in the file ({count} lines)")
    last = lines[end - 1]
    return {
        "type": "selection", "uri": uri,
        "range": {"start": {"line": start - 1, "character": 0}, "end": {"line": end - 1, "character": _utf16_len(last)}},
        "text": "\n".join(lines[start - 1:end]),
    }


def image_item(spec: str) -> dict[str, Any]:
    path = Path(spec).expanduser()
    data = read_regular(path, MAX_IMAGE_BYTES, f"--image {spec}")
    mime = next((kind for magic, kind in _IMAGE_MAGIC if data.startswith(magic)), None)
    if mime is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        mime = "image/webp"
    if mime is None:
        raise InputError(f"--image {spec}: not a PNG, JPEG, GIF or WebP image")
    return {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode("ascii")}


def context_items(files: list[str], images: list[str]) -> list[dict[str, Any]]:
    items = [context_file_item(spec) for spec in files] + [image_item(spec) for spec in images]
    if len(items) > MAX_CONTEXT_ITEMS:
        raise InputError(f"at most {MAX_CONTEXT_ITEMS} --context-file and --image in all, got {len(items)}")
    return items


def mcp_servers(path_text: str) -> dict[str, Any]:
    """The `mcpServers` object of a `.mcp.json`-shaped file (entries are checked by the server,
    which reports a bad one as a warning and starts the others)."""

    path = Path(path_text).expanduser()
    try:
        data = json.loads(read_regular(path, MAX_MCP_CONFIG_BYTES, f"--mcp-config {path_text}").decode("utf-8"))
    except ValueError as exc:
        raise InputError(f"--mcp-config {path_text}: not JSON ({exc})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise InputError(f'--mcp-config {path_text}: expected an object with "mcpServers": {{name: {{command, args?}} ...}}')
    return servers
