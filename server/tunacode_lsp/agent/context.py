"""Context from the editor (files, selections, diagnostics, images) turned into what the
model receives with the prompt.

Every item is checked before the request starts: a URI outside the workspace, a range past
the end of its document, an image that is not what its type says, or an image for a model
that takes none is a ParamsError naming the item (-32602), and nothing is created or run.
Text is bounded and says so when cut.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from tunacode_lsp.contract.protocol import (
    ContextItem,
    DiagnosticContext,
    FileContext,
    ImageContext,
    ParamsError,
    Range,
    SelectionContext,
)
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.confined_read import read_confined
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import display_path, resolve_in_workspace, workspace_real_root

MAX_FILE_CHARS = 50_000  # one file item
MAX_CONTEXT_CHARS = 200_000  # all text items together
MAX_FILE_BYTES = 4_000_000  # a file item larger than this is read only up to it
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}

# Models known to take images (prefixes of model ids); others need `imageInput: "on"`.
VISION_MODEL_PREFIXES = (
    "gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o",
    "anthropic/claude", "claude", "google/gemini", "gemini", "openai/gpt-4o", "openai/gpt-4.1", "openai/gpt-5",
    "moonshotai/kimi-k2.5", "qwen/qwen2.5-vl", "qwen2.5-vl", "qwen-vl", "llava", "pixtral", "mistralai/pixtral",
)
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}

TextOf = Callable[[Path], str | None]  # the editor's text of an open document, else None


@dataclass
class PromptContext:
    """What the model gets besides the prompt: one text block, and images."""

    text: str = ""
    images: list[tuple[str, str]] = field(default_factory=list)  # (mime type, base64 data)


def accepts_images(model_id: str, setting: str) -> bool:
    if setting in ("on", "off"):
        return setting == "on"
    return model_id.lower().startswith(VISION_MODEL_PREFIXES)


def resolve_context(
    items: list[ContextItem],
    workspace_root: Path,
    *,
    model_id: str,
    image_input: str = "auto",
    text_of: TextOf | None = None,
) -> PromptContext:
    """Check every item and render the context; ParamsError names the first bad one."""

    root = workspace_real_root(workspace_root)
    blocks: list[str] = []
    images: list[tuple[str, str]] = []
    budget = MAX_CONTEXT_CHARS
    for index, item in enumerate(items):
        where = f"params.context[{index}]"
        if isinstance(item, ImageContext):
            images.append(_checked_image(item, where, model_id, image_input))
            continue
        path = _path_of(item.uri, root, where)
        shown_path = display_path(root, path)
        if isinstance(item, FileContext):
            text = _document_text(root, path, where, text_of)
            block = _file_block(shown_path, text, min(MAX_FILE_CHARS, budget))
        elif isinstance(item, SelectionContext):
            text = item.text if item.text is not None else _slice(_document_text(root, path, where, text_of), item.range, where)
            block = _selection_block(shown_path, item.range, text, budget)
        else:
            block = _diagnostic_line(shown_path, item)
        budget -= len(block)
        blocks.append(block)
        if budget <= 0:
            blocks.append(f"[context cut: more than {MAX_CONTEXT_CHARS:,} characters in all; the rest left out]")
            break
    text = ""
    if blocks:
        text = "Context from the editor:\n\n" + "\n\n".join(blocks)
    return PromptContext(text, images)


def _path_of(uri: str, root: Path, where: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ParamsError(f"{where}.uri: only file: URIs are supported, got {clip(uri, 60)!r}")
    raw = unquote(parsed.path)
    try:
        return resolve_in_workspace(root, raw, field="uri")
    except ToolError:
        raise ParamsError(f"{where}.uri: {clip(uri, 80)!r} is outside the workspace ({root})") from None


def _document_text(root: Path, path: Path, where: str, text_of: TextOf | None) -> str:
    if text_of is not None:
        open_text = text_of(path)
        if open_text is not None:
            return open_text
    # the confined reader: beneath the root, a regular file (a FIFO never blocks), bounded
    found = read_confined(root, path, limit=MAX_FILE_BYTES, truncate=True)
    if found.notice is not None:
        raise ParamsError(f"{where}.uri: {found.notice}")
    if found.data is None:
        raise ParamsError(f"{where}.uri: cannot read {path.name}: no such file")
    data = found.data
    if b"\0" in data[:8192]:
        raise ParamsError(f"{where}.uri: {path.name} is a binary file")
    return data.decode("utf-8", errors="replace")


def _column(line: str, utf16_units: int, where: str) -> int:
    """The index in `line` of an LSP character offset (UTF-16 code units, the LSP default)."""

    units = 0
    for index, char in enumerate(line):
        if units >= utf16_units:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    if units >= utf16_units:
        return len(line)
    raise ParamsError(f"{where}.range: a character past the end of its line")


def _slice(text: str, rng: Range, where: str) -> str:
    """The text in an LSP range (0-based lines, characters in UTF-16 code units)."""

    lines = text.split("\n")
    start, end = rng.start, rng.end
    if start.line >= len(lines) or end.line >= len(lines):
        raise ParamsError(f"{where}.range: past the end of the document ({len(lines)} lines)")
    first = _column(lines[start.line], start.character, where)
    last = _column(lines[end.line], end.character, where)
    if start.line == end.line:
        return lines[start.line][first:last]
    middle = lines[start.line + 1:end.line]
    return "\n".join([lines[start.line][first:], *middle, lines[end.line][:last]])


def _cut(text: str, limit: int) -> tuple[str, str]:
    if len(text) <= limit:
        return text, ""
    return text[: max(0, limit)], f"\n[cut: showing the first {max(0, limit):,} of {len(text):,} characters]"


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return ticks


def _file_block(shown_path: str, text: str, limit: int) -> str:
    body, note = _cut(text, limit)
    fence = _fence(body)
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)  # a final newline ends a line
    end = "" if body.endswith("\n") else "\n"
    return f"File {shown_path} ({lines} line{'' if lines == 1 else 's'}):\n{fence}\n{body}{end}{fence}{note}"


def _selection_block(shown_path: str, rng: Range, text: str, limit: int) -> str:
    body, note = _cut(text, min(limit, MAX_FILE_CHARS))
    fence = _fence(body)
    last = rng.end.line - 1 if rng.end.character == 0 and rng.end.line > rng.start.line else rng.end.line  # up to a line's start: not that line
    where = f"line {rng.start.line + 1}" if rng.start.line == last else f"lines {rng.start.line + 1}-{last + 1}"
    return f"Selection in {shown_path}, {where}:\n{fence}\n{body}\n{fence}{note}"


def _diagnostic_line(shown_path: str, item: DiagnosticContext) -> str:
    severity = SEVERITY.get(item.severity or 0, "problem")
    origin = " ".join(str(x) for x in (item.source, item.code) if x not in (None, ""))
    origin = f" [{origin}]" if origin else ""
    return f"Diagnostic in {shown_path} line {item.range.start.line + 1}: {severity}{origin}: {item.message}"


def _checked_image(item: ImageContext, where: str, model_id: str, image_input: str) -> tuple[str, str]:
    try:
        data = base64.b64decode(item.data, validate=True)
    except (binascii.Error, ValueError):
        raise ParamsError(f"{where}.data: not valid base64") from None
    if not data.startswith(_MAGIC[item.mime_type]) or (item.mime_type == "image/webp" and data[8:12] != b"WEBP"):
        raise ParamsError(f"{where}.data: the bytes are not a {item.mime_type} image")
    if not accepts_images(model_id, image_input):
        raise ParamsError(
            f"{where}: the model {model_id!r} does not take images (set tunacode.imageInput to \"on\" if it does)"
        )
    return item.mime_type, item.data

