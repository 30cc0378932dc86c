"""Which line a `line:hash` reference from the model means, in the file as it is now.

The model gets references from read_file. Edits made by edit_file move lines, so a reference
from an earlier read may point at a different line now; a line hash alone cannot tell, because
repeated lines (blank lines, `}`, `return`) share a hash. This ledger remembers, per file, the
versions whose line numbers the model has seen (line hashes only) and how each of our edits
moved lines. A reference is resolved by every version it fits, mapped through the edits that
followed, and accepted only if all readings agree on one line whose hash matches the file on
disk now. Anything else is refused; a wrong line is never chosen. If the file on disk is not the
version we last knew (changed outside edit_file), every line reference is refused until the
model reads the file again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from tunacode_lsp.tools.errors import ToolError, retry_hint

MAX_FILES = 256
MAX_VERSIONS = 32

# One edit of a transition: lines [start, end) (0-based) of the old version became `count` lines.
Span = tuple[int, int, int]


@dataclass
class _Chain:
    digests: list[str] = field(default_factory=list)
    hashes: list[list[str]] = field(default_factory=list)
    transitions: list[list[Span]] = field(default_factory=list)

    def push(self, digest: str, hashes: list[str], spans: list[Span]) -> None:
        self.digests.append(digest)
        self.hashes.append(hashes)
        self.transitions.append(sorted(spans))
        if len(self.digests) > MAX_VERSIONS:
            del self.digests[0], self.hashes[0], self.transitions[0]


def _map_range(start: int, end: int, transitions: list[list[Span]]) -> tuple[int, int] | None:
    """Map inclusive 0-based lines [start, end] through edits; None if an edit touched them."""
    for spans in transitions:
        shift = 0
        for span_start, span_end, count in spans:
            if span_end <= start:
                shift += count - (span_end - span_start)
            elif span_start <= end:
                return None
        start, end = start + shift, end + shift
    return start, end


class LineRefLedger:
    """Per-file record of the line numberings the model has seen (see the module docstring)."""

    def __init__(self) -> None:
        self._chains: OrderedDict[str, _Chain] = OrderedDict()

    def _chain(self, key: str) -> _Chain | None:
        chain = self._chains.get(key)
        if chain is not None:
            self._chains.move_to_end(key)
        return chain

    def record_read(self, key: str, digest: str, hashes: list[str], whole_file: bool) -> None:
        chain = self._chain(key)
        if chain is None or chain.digests[-1] != digest or whole_file:
            # A new state from outside, or a fresh view of every line: older references lapse.
            chain = _Chain()
            chain.push(digest, hashes, [])
            self._chains[key] = chain
            self._chains.move_to_end(key)
            while len(self._chains) > MAX_FILES:
                self._chains.popitem(last=False)

    def record_edit(
        self, key: str, before_digest: str, after_digest: str, after_hashes: list[str], spans: list[Span]
    ) -> None:
        chain = self._chain(key)
        if chain is None:
            return
        if chain.digests[-1] != before_digest:
            # The edit applied to a state the model never read: its references cannot be mapped.
            del self._chains[key]
            return
        chain.push(after_digest, after_hashes, spans)

    def forget(self, key: str) -> None:
        self._chains.pop(key, None)

    def resolve(
        self,
        key: str,
        shown: str,
        current_digest: str,
        current_hashes: list[str],
        line: int,
        line_hash: str,
        end_line: int,
        end_hash: str,
    ) -> tuple[int, int]:
        """0-based inclusive [start, end] in the current file for the 1-based reference range."""
        chain = self._chain(key)
        if chain is None:
            raise ToolError(
                f"No line references are known for '{shown}' (it was not read with read_file since the "
                "server started). Read it with read_file first, or use old_text/new_text."
            )
        if chain.digests[-1] != current_digest:
            raise ToolError(retry_hint(
                f"'{shown}' changed on disk since you last read it (not by edit_file), so line "
                "references from that read may point at the wrong lines. Nothing was written",
                "read the file again with read_file and use the new references",
            ))
        readings: set[tuple[int, int] | None] = set()
        last = len(chain.digests) - 1
        for index, hashes in enumerate(chain.hashes):
            if end_line > len(hashes):
                continue
            if hashes[line - 1] != line_hash or hashes[end_line - 1] != end_hash:
                continue
            if index == last:
                readings.add((line - 1, end_line - 1))
            else:
                readings.add(_map_range(line - 1, end_line - 1, chain.transitions[index + 1 :]))
        ref = f"{line}:{line_hash}" if end_line == line else f"{line}:{line_hash}..{end_line}:{end_hash}"
        if not readings:
            raise ToolError(self._mismatch_message(shown, current_hashes, line, line_hash, end_line, end_hash))
        if None in readings:
            raise ToolError(
                f"Line reference {ref} in '{shown}' is from before an earlier edit that changed those "
                "lines. Nothing was written. Read the file again with read_file and use the new references."
            )
        if len(readings) > 1:
            targets = ", ".join(str(start + 1) for start, _ in sorted(readings))  # type: ignore[misc,type-var]
            raise ToolError(
                f"Line reference {ref} in '{shown}' is ambiguous: your earlier edits moved lines, and it "
                f"could mean line {targets}. Nothing was written. Use old_text with enough surrounding "
                "lines to match once, or read the whole file again with read_file."
            )
        (start, end), = readings  # type: ignore[misc]
        if end >= len(current_hashes) or current_hashes[start] != line_hash or current_hashes[end] != end_hash:
            raise ToolError(f"Line reference {ref} does not match '{shown}' on disk. Read the file again.")
        return start, end

    @staticmethod
    def _mismatch_message(
        shown: str, current: list[str], line: int, line_hash: str, end_line: int, end_hash: str
    ) -> str:
        if end_line > len(current):
            return (
                f"Line {end_line} is past the end of '{shown}' ({len(current)} lines). Nothing was "
                "written. Read the file again with read_file."
            )
        wrong = line if current[line - 1] != line_hash else end_line
        return (
            f"Hash mismatch at line {wrong} of '{shown}': the reference does not match that line as "
            f"you read it (it now has hash {current[wrong - 1]}). Nothing was written. Read the file "
            "again with read_file and use the new line:hash references."
        )
