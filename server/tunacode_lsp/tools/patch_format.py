"""Codex's patch format (openai/codex codex-rs/apply-patch), parsed and applied to text.

    *** Begin Patch
    *** Add File: path          then `+line`s
    *** Delete File: path
    *** Update File: path       then optionally `*** Move to: path`, then hunks:
    @@ [a line of the file to find first]
     context / -removed / +added lines
    *** End of File             (optional: the hunk ends the file)
    *** End Patch

This module knows text only (no file system): `parse_patch` gives the operations, and
`apply_hunks` applies an update's hunks to a file's text. A hunk is found as it is, else
ignoring trailing whitespace, else ignoring indentation; at each level it must be the only
match after the previous hunk (a second match is an error, never a guess), so a patch
applies as meant or not at all. tools/apply_patch.py does the paths, approval and writing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_PATCH_CHARS = 2_000_000
MAX_PATCH_FILES = 200

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"


class PatchError(Exception):
    """The patch cannot be parsed or applied; the message is for the model."""


@dataclass
class Hunk:
    anchor: str | None  # the text after `@@ `, a line to find before the hunk
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)
    end_of_file: bool = False

    @property
    def old(self) -> list[str]:
        return [text for op, text in self.lines if op != "+"]

    @property
    def new(self) -> list[str]:
        return [text for op, text in self.lines if op != "-"]


@dataclass
class FileOp:
    kind: str  # add | delete | update
    path: str
    content: str = ""  # add: the new file's text
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def _strip_heredoc(lines: list[str]) -> list[str]:
    """`<<'EOF'` ... `EOF` around the patch (as a shell call would have it) is dropped."""

    if len(lines) >= 2 and lines[0].strip().startswith("<<") and lines[-1].strip() in ("EOF", "'EOF'", '"EOF"'):
        return lines[1:-1]
    return lines


def parse_patch(text: str) -> list[FileOp]:
    if not isinstance(text, str) or not text.strip():
        raise PatchError("The patch is empty: give `*** Begin Patch` ... `*** End Patch`.")
    if len(text) > MAX_PATCH_CHARS:
        raise PatchError(f"The patch is {len(text):,} characters, over the limit of {MAX_PATCH_CHARS:,}: split it.")
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    lines = _strip_heredoc(lines)
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"The first line of the patch must be '{BEGIN}'.")
    if lines[-1].strip() != END:
        raise PatchError(f"The last line of the patch must be '{END}'.")
    body = lines[1:-1]
    ops: list[FileOp] = []
    index = 0
    while index < len(body):
        line = body[index]
        header = line.strip()
        if header.startswith(ADD.strip()):
            op = FileOp("add", _path(header, ADD))
            index += 1
            added: list[str] = []
            while index < len(body) and body[index].startswith("+"):
                added.append(body[index][1:])
                index += 1
            op.content = "\n".join(added) + ("\n" if added else "")
        elif header.startswith(DELETE.strip()):
            op = FileOp("delete", _path(header, DELETE))
            index += 1
        elif header.startswith(UPDATE.strip()):
            op = FileOp("update", _path(header, UPDATE))
            index += 1
            if index < len(body) and body[index].strip().startswith(MOVE.strip()):
                op.move_to = _path(body[index].strip(), MOVE)
                index += 1
            index = _parse_hunks(body, index, op)
        elif not header:
            index += 1
            continue
        else:
            raise PatchError(
                f"Line {index + 2} of the patch, {line[:120]!r}, is not a file header: expected "
                f"'{ADD}', '{DELETE}' or '{UPDATE}' followed by a path."
            )
        ops.append(op)
        if len(ops) > MAX_PATCH_FILES:
            raise PatchError(f"The patch touches more than {MAX_PATCH_FILES} files: split it.")
    if not ops:
        raise PatchError("The patch changes no file.")
    return ops


def _path(header: str, prefix: str) -> str:
    path = header[len(prefix.strip()) :].strip()
    if not path:
        raise PatchError(f"'{prefix.strip()}' needs a path after it.")
    return path


def _parse_hunks(body: list[str], index: int, op: FileOp) -> int:
    hunk: Hunk | None = None
    while index < len(body):
        line = body[index]
        stripped = line.strip()
        if stripped.startswith("*** ") and stripped != END_OF_FILE:
            break  # the next file
        if stripped == END_OF_FILE:
            if hunk is None:
                raise PatchError(f"'{END_OF_FILE}' in '{op.path}' before any hunk line.")
            hunk.end_of_file = True
        elif stripped == "@@" or line.startswith("@@ "):
            hunk = Hunk(line[3:].strip() or None if line.startswith("@@ ") else None)
            op.hunks.append(hunk)
        elif line[:1] in (" ", "-", "+") or line == "":
            if hunk is None:  # the first hunk may come without `@@` (Codex accepts it)
                hunk = Hunk(None)
                op.hunks.append(hunk)
            hunk.lines.append((line[:1] or " ", line[1:]))
        else:
            raise PatchError(
                f"In '{op.path}', the line {line[:120]!r} starts with neither ' ' (context), '-', '+' nor '@@'."
            )
        index += 1
    op.hunks = [h for h in op.hunks if h.lines]
    if not op.hunks and op.move_to is None:
        raise PatchError(f"'{UPDATE}{op.path}' has no hunk: nothing to change.")
    return index


# ---------------------------------------------------------------- applying hunks to text

_LEVELS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exactly", lambda s: s),
    ("ignoring trailing whitespace", lambda s: s.rstrip()),
    ("ignoring indentation", lambda s: s.strip()),
)


def _find(lines: list[str], want: list[str], start: int, shown: str, what: str) -> tuple[int, str]:
    """The one index >= start where `want` occurs, at the strictest level where it occurs."""

    if not want:
        return start, "exactly"
    for level, key in _LEVELS:
        keys = [key(line) for line in lines]
        wanted = [key(line) for line in want]
        found = [
            i for i in range(start, len(lines) - len(wanted) + 1) if keys[i : i + len(wanted)] == wanted
        ]
        if len(found) == 1:
            return found[0], level
        if len(found) > 1:
            places = ", ".join(str(i + 1) for i in found[:10])
            raise PatchError(
                f"In '{shown}', {what} matches more than once ({level}, at lines {places}). Nothing was "
                "written. Add context lines or an `@@` line naming the enclosing function or class."
            )
    first = want[0].strip()[:120]
    raise PatchError(
        f"In '{shown}', {what} was not found (starting {first!r}; searched exactly, ignoring trailing "
        "whitespace and ignoring indentation). Nothing was written. Read the file again and copy its "
        "current lines as context."
    )


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(body: str, model_lead: str, file_lead: str, shown: str, what: str) -> str:
    """An added line of a hunk found ignoring indentation, moved to the file's indentation by
    the line before it in the hunk (`model_lead` as the model wrote it, `file_lead` as the file
    has it). A line whose indentation cannot be told for sure is an error, never a guess."""

    lead = body[: len(body) - len(body.lstrip())]
    rest = body[len(lead) :]
    if not rest or model_lead == file_lead:
        return body
    if lead == model_lead:
        return file_lead + rest
    extra = lead[len(model_lead) :]
    same_kind = not file_lead or set(extra) <= set(file_lead)
    if lead.startswith(model_lead) and lead != file_lead and same_kind:
        return file_lead + extra + rest
    raise PatchError(
        f"In '{shown}', {what} was found only ignoring indentation, and the indentation of its added line "
        f"{rest[:80]!r} cannot be told for sure. Nothing was written. Copy the lines with the file's indentation."
    )


def apply_hunks(text: str, hunks: list[Hunk], shown: str) -> tuple[str, list[str]]:
    """(the new text, notes on hunks that matched only loosely). Keeps CRLF files CRLF."""

    newline = "\r\n" if "\r\n" in text else "\n"
    ends_with_newline = text.endswith("\n") or text == ""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    notes: list[str] = []
    replacements: list[tuple[int, int, list[str]]] = []
    position = 0
    for number, hunk in enumerate(hunks, start=1):
        what = f"hunk {number}"
        if hunk.anchor is not None:
            at, level = _find(lines, [hunk.anchor], position, shown, f"the @@ line of hunk {number}")
            position = at + 1
            if level != "exactly":
                notes.append(f"the @@ line of hunk {number} matched line {at + 1} {level}")
        old = hunk.old
        if not old:  # only additions: at the end of the file (as Codex does)
            replacements.append((len(lines), len(lines), hunk.new))
            position = len(lines)
            continue
        if hunk.end_of_file:
            start = len(lines) - len(old)
            if start < position or [s.rstrip() for s in lines[start:]] != [s.rstrip() for s in old]:
                at, level = _find(lines, old, position, shown, what)
            else:
                at, level = start, "exactly"
        else:
            try:
                at, level = _find(lines, old, position, shown, what)
            except PatchError:
                if old[-1].strip() != "":  # a trailing empty context line the model added: once more without it
                    raise
                trimmed = list(hunk.lines)
                while trimmed and trimmed[-1][0] == " " and not trimmed[-1][1].strip():
                    trimmed.pop()
                hunk = Hunk(hunk.anchor, trimmed, hunk.end_of_file)
                old = hunk.old
                at, level = _find(lines, old, position, shown, what)
        if level != "exactly":
            notes.append(f"{what} matched lines {at + 1}-{at + len(old)} {level}")
        moved = level == "ignoring indentation"
        # found only ignoring whitespace, in lines that have no trailing blanks: the model's copy
        # added them, to its added lines too
        clean = level != "exactly" and all(line == line.rstrip() for line in lines[at : at + len(old)])
        replacement: list[str] = []
        cursor = at
        reference = ("", "")  # (the model's, the file's) indentation of the last line matched
        for op, body in hunk.lines:
            if op in " -":
                if body.strip():
                    reference = (_leading(body), _leading(lines[cursor]))
                if op == " ":
                    replacement.append(lines[cursor])  # the file's own line, byte for byte
                cursor += 1
            else:
                added = _reindent(body, *reference, shown, what) if moved else body
                replacement.append(added.rstrip() if clean else added)
        replacements.append((at, at + len(old), replacement))
        position = at + len(old)
    for start, end, new in reversed(replacements):
        lines[start:end] = new
    result = newline.join(lines)
    if lines and ends_with_newline:
        result += newline
    return result, notes
