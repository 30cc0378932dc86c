"""Tolerant matching of edit_file's old_text, tried only when the exact text is not found.

Models copy text with the wrong indentation, tabs for spaces, trailing whitespace, a blank
line missing or added, or quotes escaped as in JSON. Each matcher compares lines under a
looser key; a match is used only when it is the only one in the file, and then the change
the model meant (its old_text -> new_text, line by line) is applied to the lines the file
really has: the lines the edit leaves alone are kept byte for byte, the new lines are
re-indented to the file's indentation. An ambiguous match is an error naming the places;
no match at all is an error showing the nearest text (`nearest`).

bench/edit_bench.py measures each matcher on a corpus of the mistakes models make.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tunacode_lsp.tools.textfile import line_body


@dataclass(frozen=True)
class Matcher:
    """One way of comparing lines: `key` of a line body; blank lines ignored or not; `\\"` read as `"`."""

    name: str
    what: str  # what was ignored, for the result: "ignoring indentation"
    key: Callable[[str], str]
    skip_blank: bool = False
    unescape: bool = False


def _rstrip(line: str) -> str:
    return line.rstrip()


def _strip(line: str) -> str:
    return line.strip()


MATCHERS: tuple[Matcher, ...] = (
    Matcher("whitespace", "ignoring trailing whitespace and line endings", _rstrip),
    Matcher("indentation", "ignoring indentation", _strip),
    Matcher("blank_lines", "ignoring indentation and blank lines", _strip, skip_blank=True),
    Matcher("escaped_quotes", 'reading \\" as " (and ignoring indentation and blank lines)', _strip, True, True),
)
MATCHER_NAMES = tuple(m.name for m in MATCHERS)
MAX_TOLERANT_LINES = 2_000  # old_text or new_text longer than this: exact matching only

_ESCAPED = re.compile(r"\\([\"'\\])")


def unescape(text: str) -> str:
    return _ESCAPED.sub(r"\1", text)


def _model_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the text ended with a line break: no extra empty line
    return lines


@dataclass(frozen=True)
class Found:
    start: int  # first file line (0-based)
    end: int  # after the last file line
    pairs: dict[int, int]  # old_text line -> file line


@dataclass(frozen=True)
class TolerantMatch:
    matcher: Matcher
    start: int
    end: int
    text: str  # the new text of file lines start..end (with the file's line endings)


class Ambiguous(Exception):
    def __init__(self, matcher: Matcher, places: list[tuple[int, int]]) -> None:
        super().__init__(matcher.name)
        self.matcher = matcher
        self.places = places


def _code(ids: dict[str, int], key: str) -> str:
    """One character standing for one distinct line key (never a surrogate)."""
    number = ids.setdefault(key, len(ids)) + 0x100
    return chr(number + 0x800 if number >= 0xD800 else number)


def _find(file_keys: list[tuple[int, str]], old_keys: list[tuple[int, str]], limit: int = 10) -> list[Found]:
    """Where the old lines' keys occur in a row among the file's: each key is one character, so
    the search is str.find's, linear even for a file of blank lines (no quadratic scan)."""
    ids: dict[str, int] = {}
    haystack = "".join(_code(ids, key) for _, key in file_keys)
    if any(key not in ids for _, key in old_keys):
        return []
    needle = "".join(_code(ids, key) for _, key in old_keys)
    found: list[Found] = []
    n = len(old_keys)
    p = haystack.find(needle)
    while p != -1 and len(found) < limit:
        pairs = {old_keys[k][0]: file_keys[p + k][0] for k in range(n)}
        found.append(Found(file_keys[p][0], file_keys[p + n - 1][0] + 1, pairs))
        p = haystack.find(needle, p + 1)
    return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


class _Reindent:
    """New lines written in the model's indentation, put in the file's."""

    def __init__(self, old: list[str], file_lines: list[str], pairs: dict[int, int]) -> None:
        self.mapping: dict[str, str] = {}
        # trailing blanks the model copied that the file's lines do not have are noise
        self.strip_end = not any(file_lines[f] != file_lines[f].rstrip() for f in pairs.values())
        file_indents = [_indent(file_lines[f]) for f in pairs.values() if file_lines[f].strip()]
        self.tabs = any(ind.startswith("\t") for ind in file_indents)
        widths = sorted({len(ind) for ind in file_indents if ind and "\t" not in ind})
        steps = [b - a for a, b in zip([0, *widths], widths) if b - a > 0]
        self.unit = min(steps) if steps else 4
        deltas: Counter[int] = Counter()
        for o, f in pairs.items():
            if old[o].strip():
                old_ind, file_ind = _indent(old[o]), _indent(file_lines[f])
                self.mapping.setdefault(old_ind, file_ind)
                deltas[self._width(file_ind) - self._width(old_ind)] += 1
        self.delta = deltas.most_common(1)[0][0] if deltas else 0

    def _width(self, indent: str) -> int:
        return sum(self.unit if char == "\t" else 1 for char in indent)

    def __call__(self, line: str) -> str:
        if not line.strip():
            return ""
        if self.strip_end:
            line = line.rstrip()
        indent = _indent(line)
        if indent in self.mapping:
            return self.mapping[indent] + line[len(indent):]
        width = max(0, self._width(indent) + self.delta)
        made = "\t" * (width // self.unit) + " " * (width % self.unit) if self.tabs else " " * width
        return made + line[len(indent):]


def _rebuild(
    matcher: Matcher, file_lines: list[str], newline: str, old: list[str], new: list[str], found: Found
) -> str:
    """The file's lines start..end with the model's change applied (see the module docstring)."""

    reindent = _Reindent(old, [line_body(line) for line in file_lines], found.pairs)
    keys_old = [matcher.key(line) for line in old]
    keys_new = [matcher.key(line) for line in new]
    out: list[str] = []
    cursor = found.start

    def keep_until(file_index: int, keep_it: bool) -> None:
        nonlocal cursor
        out.extend(file_lines[cursor:file_index])  # lines the model did not see (blank ones)
        if keep_it:
            out.append(file_lines[file_index])
        cursor = file_index + 1

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys_old, keys_new, autojunk=False).get_opcodes():
        if tag == "equal":  # the same under the key; a line the model re-indented is still changed
            for i, j in zip(range(i1, i2), range(j1, j2)):
                if i in found.pairs:
                    keep_until(found.pairs[i], keep_it=old[i] == new[j])
                    if old[i] != new[j]:
                        out.append(reindent(new[j]) + newline)
            continue
        for i in range(i1, i2):
            if i in found.pairs:
                keep_until(found.pairs[i], keep_it=False)
        if tag in ("replace", "insert"):
            out.extend(reindent(line) + newline for line in new[j1:j2])
    out.extend(file_lines[cursor:found.end])
    text = "".join(out)
    if not file_lines[found.end - 1].endswith("\n") and text.endswith(newline):
        text = text[: -len(newline)]  # the file's last line had no line break: still none
    return text


def tolerant_match(
    file_lines: list[str], newline: str, old_text: str, new_text: str, matchers: Sequence[Matcher] = MATCHERS
) -> TolerantMatch | None:
    """The first matcher's unique match; raises Ambiguous when it matches several places."""

    if old_text.count("\n") >= MAX_TOLERANT_LINES or new_text.count("\n") >= MAX_TOLERANT_LINES:
        return None  # a diff of so many lines is no slip of copying: exact matching only
    bodies = [line_body(line) for line in file_lines]
    for matcher in matchers:
        old = _model_lines(unescape(old_text) if matcher.unescape else old_text)
        new = _model_lines(unescape(new_text) if matcher.unescape else new_text)
        if new_text == "":
            new = []
        if matcher.unescape and old_text == unescape(old_text):
            continue  # nothing escaped: the matchers before saw the same text
        old_keys = [(i, matcher.key(line)) for i, line in enumerate(old) if not (matcher.skip_blank and not line.strip())]
        if not old_keys or not any(key for _, key in old_keys):
            continue
        file_keys = [(i, matcher.key(line)) for i, line in enumerate(bodies) if not (matcher.skip_blank and not line.strip())]
        found = _find(file_keys, old_keys)
        if len(found) > 1:
            raise Ambiguous(matcher, [(f.start, f.end) for f in found])
        if found:
            text = _rebuild(matcher, file_lines, newline, old, new, found[0])
            return TolerantMatch(matcher, found[0].start, found[0].end, text)
    return None


MAX_NEAREST_LINES = 12
MAX_SCAN_LINES = 5_000  # nearest() looks in files this long at most
MAX_NEAREST_OLD_LINES = 100  # ... for an old_text this long at most


def nearest(file_lines: list[str], old_text: str) -> tuple[int, int, float] | None:
    """The file lines most like old_text: (start, end, similarity 0-1), or None."""

    old = [line.strip() for line in _model_lines(old_text)]
    if not file_lines or len(file_lines) > MAX_SCAN_LINES or len(old) > MAX_NEAREST_OLD_LINES or not any(old):
        return None
    bodies = [line_body(line).strip() for line in file_lines]
    size = min(len(old), len(bodies))
    wanted = "\n".join(old)
    best: tuple[float, int] = (0.0, 0)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(wanted)
    for start in range(len(bodies) - size + 1):
        matcher.set_seq1("\n".join(bodies[start:start + size]))
        if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
            continue
        ratio = matcher.ratio()
        if ratio > best[0]:
            best = (ratio, start)
    if best[0] < 0.5:
        return None
    return best[1], best[1] + size, best[0]
