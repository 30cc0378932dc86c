"""Text file helpers shared by the tools: binary sniffing, lossless decoding, line splitting, the
per-line content hash shown by read_file and checked by edit_file, and head+tail truncation."""

from __future__ import annotations

import errno
import os
import stat
import zlib
from pathlib import Path

from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import special_file_message

MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
HASH_CHARS = 4


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def decode(data: bytes) -> str:
    # surrogateescape keeps bytes that are not UTF-8, so an edit writes them back unchanged.
    return data.decode("utf-8", errors="surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def printable(text: str) -> str:
    """Text safe to show the model: undecodable bytes become U+FFFD."""
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def split_lines(text: str) -> list[str]:
    """Lines with their endings; only '\\n' separates lines (str.splitlines also splits on \\f etc.)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_body(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith("\n"):
        return line[:-1]
    return line


def line_hash(body: str) -> str:
    """Short content hash of one line (without its ending)."""
    return f"{zlib.crc32(encode(body)) & 0xFFFF:0{HASH_CHARS}x}"


def file_newline(lines: list[str]) -> str:
    for line in lines:
        if line.endswith("\n"):
            return "\r\n" if line.endswith("\r\n") else "\n"
    return "\n"


def read_text_file(real_path: Path, shown: str, real_root: Path | None = None) -> bytes:
    """The bytes of a regular text file, or a ToolError saying why not. With `real_root` the
    file is opened relative to the root without following a link out (tools/beneath.py)."""
    data: bytes | None = None
    try:
        if real_root is not None:
            from tunacode_lsp.tools.beneath import read_beneath

            info, data = read_beneath(real_root, real_path, shown, MAX_FILE_BYTES)
        else:
            info = os.stat(real_path)
    except FileNotFoundError:
        raise ToolError(
            f"File not found: '{shown}'. Check the path with list_files, or create it with write_file."
        ) from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver) cannot be opened
            raise ToolError(special_file_message(shown)) from None
        raise ToolError(f"Cannot access '{shown}': {exc.strerror}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"'{shown}' is a directory: use list_files to see what it holds.")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(special_file_message(shown))
    if info.st_size > MAX_FILE_BYTES:
        raise ToolError(
            f"'{shown}' is too large ({info.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}). "
            "Use grep to find the part you need, or bash with head/sed."
        )
    if data is None:
        try:
            data = real_path.read_bytes()
        except OSError as exc:
            raise ToolError(f"Cannot read '{shown}': {exc.strerror}.") from None
    if is_binary(data):
        raise ToolError(f"'{shown}' is a binary file ({len(data):,} bytes): it cannot be shown as text.")
    return data


def cut_middle(text: str, limit: int) -> tuple[str, int]:
    """Keep the head and tail of `text` within about `limit` chars; return the text and chars cut."""
    if len(text) <= limit:
        return text, 0
    head = limit // 2
    tail = limit - head
    cut = len(text) - head - tail
    marker = f"\n\n[... {cut:,} characters cut from the middle ...]\n\n"
    return text[:head] + marker + text[-tail:], cut
