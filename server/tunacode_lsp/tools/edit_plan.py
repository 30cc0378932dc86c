"""Turn edit_file's edits into line replacements against one snapshot, then apply them all at once.

Every edit of a call refers to the file as it is on disk when the call starts; replacements are
checked for overlap and applied bottom-up, so one edit never shifts the lines another one means.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.tools.edit_match import MATCHERS, MAX_NEAREST_LINES, Ambiguous, Matcher, nearest, tolerant_match
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.line_refs import LineRefLedger, Span
from tunacode_lsp.tools.snapshot import Snapshot
from tunacode_lsp.tools.textfile import file_newline, line_body, printable, split_lines

_REF_PREFIX = re.compile(r"^\d+:[0-9a-fA-F]+\|")


@dataclass(frozen=True)
class Replacement:
    """Lines [start, end) (0-based) of the snapshot become `text`; `number` is the edit's 1-based index."""

    start: int
    end: int
    text: str
    number: int


def _with_newline(text: str, newline: str) -> str:
    unified = text.replace("\r\n", "\n")
    return unified.replace("\n", newline) if newline != "\n" else unified


def _looks_copied_from_read(text: str) -> bool:
    lines = [line for line in text.split("\n") if line.strip()]
    return bool(lines) and all(_REF_PREFIX.match(line) for line in lines)


def normalize_hash(raw: str) -> str:
    """Accept `a3f0`, and also `12:a3f0` or `12:a3f0|...` as copied from read_file."""
    value = raw.strip().split("|", 1)[0]
    return value.rsplit(":", 1)[-1].strip().lower()


def _lines(start: int, end: int) -> str:
    return f"lines {start + 1}-{end}" if end - start > 1 else f"line {start + 1}"


class EditPlanner:
    def __init__(
        self, snapshot: Snapshot, shown: str, ledger: LineRefLedger, matchers: Sequence[Matcher] = MATCHERS
    ) -> None:
        self.matchers = matchers
        self.notes: list[str] = []  # what a tolerant match matched, for the result
        self.snapshot = snapshot
        self.shown = shown
        self.ledger = ledger
        self.lines = snapshot.lines
        self.newline = file_newline(self.lines)
        self.line_starts: list[int] = []
        offset = 0
        for line in self.lines:
            self.line_starts.append(offset)
            offset += len(line)

    def _line_of(self, char_offset: int) -> int:
        return bisect.bisect_right(self.line_starts, char_offset) - 1

    def plan(self, edits: list[dict[str, Any]]) -> list[Replacement]:
        replacements = [self._resolve(edit, number) for number, edit in enumerate(edits, start=1)]
        replacements.sort(key=lambda item: (item.start, item.end))
        for before, after in zip(replacements, replacements[1:]):
            if after.start < before.end:
                raise ToolError(
                    f"Edits {before.number} and {after.number} both touch line {after.start + 1} of "
                    f"'{self.shown}'. Nothing was written. Merge them into one edit."
                )
        return replacements

    def _resolve(self, edit: dict[str, Any], number: int) -> Replacement:
        has_text = "old_text" in edit
        has_line = any(key in edit for key in ("line", "hash", "end_line", "end_hash"))
        label = f"edits[{number - 1}]"
        if has_text and has_line:
            raise ToolError(
                f"{label} mixes old_text with line/hash: give either old_text or line+hash, not both."
            )
        if has_text:
            return self._resolve_text(edit["old_text"], edit["new_text"], number, label)
        if "line" not in edit or "hash" not in edit:
            raise ToolError(
                f"{label} needs either old_text, or both line and hash (from read_file's LINE:HASH)."
            )
        if ("end_line" in edit) != ("end_hash" in edit):
            raise ToolError(f"{label}: end_line and end_hash go together; give both or neither.")
        return self._resolve_lines(edit, number, label)

    def _resolve_text(self, old: str, new: str, number: int, label: str) -> Replacement:
        text = self.snapshot.text
        given_old, given_new = old, new
        if old == "":
            raise ToolError(f"{label}.old_text is empty: give the exact text to replace.")
        if self.newline == "\r\n":
            new = _with_newline(new, "\r\n")
            if text.find(old) == -1 and "\r\n" not in old:
                old = _with_newline(old, "\r\n")
        first = text.find(old)
        if first == -1:
            return self._resolve_tolerant(given_old, given_new, number, label)
        if text.find(old, first + 1) != -1:
            found_lines: list[str] = []
            position = first
            while position != -1 and len(found_lines) < 10:
                found_lines.append(str(self._line_of(position) + 1))
                position = text.find(old, position + 1)
            raise ToolError(
                f"{label}.old_text matches more than once in '{self.shown}' (at lines "
                f"{', '.join(found_lines)}). Nothing was written. Add surrounding lines to old_text "
                "so it matches exactly once, or use line+hash references."
            )
        start = self._line_of(first)
        end = self._line_of(first + len(old) - 1) + 1
        region_start = self.line_starts[start]
        region = "".join(self.lines[start:end])
        new_region = region[: first - region_start] + new + region[first + len(old) - region_start :]
        # A replacement that ate the last line break joins the next line: it is part of the edit.
        while new_region and not new_region.endswith("\n") and end < len(self.lines):
            new_region += self.lines[end]
            end += 1
        return Replacement(start, end, new_region, number)

    def _resolve_tolerant(self, old: str, new: str, number: int, label: str) -> Replacement:
        """old_text not found as it is: a unique match under a looser comparison, or an error."""

        try:
            found = tolerant_match(self.lines, self.newline, old, new, self.matchers) if self.matchers else None
        except Ambiguous as exc:
            places = ", ".join(_lines(start, end).removeprefix("lines ").removeprefix("line ") for start, end in exc.places)
            raise ToolError(
                f"{label}.old_text was not found exactly in '{self.shown}', and {exc.matcher.what} it matches "
                f"more than once (lines {places}). Nothing was written. Copy the current text of the place you "
                "mean with a few more surrounding lines, or use line+hash references."
            ) from None
        if found is not None:
            self.notes.append(f"{label}.old_text matched {_lines(found.start, found.end)} {found.matcher.what}")
            return Replacement(found.start, found.end, found.text, number)
        hint = (
            " It looks like it contains LINE:HASH| prefixes from read_file: remove them."
            if _looks_copied_from_read(old)
            else ""
        )
        close = nearest(self.lines, old)
        if close is None:
            where = " Read the file again and copy the current text."
        else:
            start, end, _ = close
            shown = [f"{index + 1}|{printable(line_body(self.lines[index]))[:200]}" for index in range(start, min(end, start + MAX_NEAREST_LINES))]
            where = (
                f" The nearest text is at {_lines(start, end)}:\n" + "\n".join(shown) + "\nIf that is the "
                "place, copy it as it is now (it may have changed since you read it), or read the file again."
            )
        raise ToolError(
            f"{label}.old_text was not found in '{self.shown}'. It must match the file exactly, including "
            "indentation and line breaks (it was not found either ignoring whitespace, indentation and blank "
            f"lines).{hint} Nothing was written.{where}"
        )

    def _resolve_lines(self, edit: dict[str, Any], number: int, label: str) -> Replacement:
        line: int = edit["line"]
        end_line: int = edit.get("end_line", line)
        if end_line < line:
            raise ToolError(f"{label}: end_line ({end_line}) is before line ({line}).")
        line_hash = normalize_hash(edit["hash"])
        end_hash = normalize_hash(edit["end_hash"]) if "end_hash" in edit else line_hash
        start, last = self.ledger.resolve(
            str(self.snapshot.path),
            self.shown,
            self.snapshot.digest,
            self.snapshot.hashes,
            line,
            line_hash,
            end_line,
            end_hash,
        )
        new_text: str = edit["new_text"]
        if _looks_copied_from_read(new_text):
            raise ToolError(
                f"{label}.new_text contains LINE:HASH| prefixes from read_file: give the plain new content."
            )
        new_text = _with_newline(new_text, self.newline)
        at_unterminated_end = last == len(self.lines) - 1 and not self.lines[last].endswith("\n")
        if new_text and not new_text.endswith("\n") and not at_unterminated_end:
            new_text += self.newline
        return Replacement(start, last + 1, new_text, number)


def apply_replacements(lines: list[str], replacements: list[Replacement]) -> tuple[str, list[Span]]:
    """The new file text and the line spans that changed (for the line-reference ledger)."""
    result = list(lines)
    spans: list[Span] = []
    for item in reversed(replacements):
        new_lines = split_lines(item.text)
        result[item.start : item.end] = new_lines
        spans.append((item.start, item.end, len(new_lines)))
    return "".join(result), spans
