"""The edit corpus (bench/edit_corpus.py) expressed as apply_patch calls, plus the mistakes
GPT models make in patches.

- `<kind>` (every kind of the edit corpus): the model's old_text/new_text written as one hunk,
  lines both sides share as context (` `), the others as `-`/`+`, no `@@` line: the same
  mistakes (indentation drift, tabs, trailing blanks, CRLF, a truncated line, a stale line, a
  region that occurs twice) in patch form;
- `patch_exact`: the intended change as a correct patch (3 lines of context, an `@@` line
  naming the nearest unindented line above it): a control;
- `patch_no_anchor`: the same without the `@@` line;
- `patch_whitespace`: the correct patch, its context and removed lines re-indented and with
  trailing blanks (whitespace drift);
- `patch_wrong_context`: one context line of the correct patch misremembered (a word
  changed): refusing is right, applying elsewhere is wrong.
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass

from .edit_corpus import SEED, Attempt

PATH = "file.txt"


@dataclass(frozen=True)
class PatchAttempt:
    kind: str
    before: str
    patch: str
    intended: str | None  # None: the only right outcome is a refusal
    also: tuple[str, ...] = ()


def _wrap(body: list[str]) -> str:
    return "\n".join(["*** Begin Patch", f"*** Update File: {PATH}", *body, "*** End Patch"]) + "\n"


def _model_hunk(old: str, new: str) -> list[str]:
    a, b = old.replace("\r\n", "\n").split("\n"), new.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [" " + line for line in a[i1:i2]]
        else:
            out += ["-" + line for line in a[i1:i2]] + ["+" + line for line in b[j1:j2]]
    return out


def _correct_hunks(before: str, intended: str) -> list[tuple[str | None, list[str]]]:
    """(the @@ anchor, the hunk's lines) of a correct patch from `before` to `intended`."""

    a = before.replace("\r\n", "\n").split("\n")
    b = intended.replace("\r\n", "\n").split("\n")
    hunks: list[tuple[str | None, list[str]]] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[i1:i2]]
            else:
                lines += ["-" + line for line in a[i1:i2]] + ["+" + line for line in b[j1:j2]]
        first = group[0][1]
        anchor = next((a[i] for i in range(first - 1, -1, -1) if a[i].strip() and not a[i][0].isspace()), None)
        hunks.append((anchor, lines))
    return hunks


def _body(hunks: list[tuple[str | None, list[str]]], anchors: bool) -> list[str]:
    out: list[str] = []
    for anchor, lines in hunks:
        out.append(f"@@ {anchor}" if anchors and anchor is not None else "@@")
        out += lines
    return out


def _drifted(hunks: list[tuple[str | None, list[str]]], rng: random.Random) -> list[tuple[str | None, list[str]]]:
    out = []
    for anchor, lines in hunks:
        shift = rng.choice(["  ", "\t", ""])
        moved = []
        for line in lines:
            op, text = line[0], line[1:]
            if op in " -" and text.strip():
                text = (shift + text if shift else text.lstrip()) + " " * rng.randint(0, 2)
            moved.append(op + text)
        out.append((anchor, moved))
    return out


_WORD = re.compile(r"\b[a-z_][a-z0-9_]{2,}\b")


def _wrong_context(hunks: list[tuple[str | None, list[str]]], rng: random.Random) -> list[tuple[str | None, list[str]]] | None:
    anchor, lines = hunks[0]
    candidates = [i for i, line in enumerate(lines) if line[0] == " " and _WORD.search(line)]
    if not candidates:
        return None
    at = rng.choice(candidates)
    word = rng.choice(_WORD.findall(lines[at]))
    changed = list(lines)
    changed[at] = re.sub(rf"\b{word}\b", word + "_old", changed[at], count=1)
    return [(anchor, changed), *hunks[1:]]


def generate_patches(attempts: list[Attempt], seed: int = SEED) -> list[PatchAttempt]:
    rng = random.Random(seed)
    out: list[PatchAttempt] = []
    for attempt in attempts:
        out.append(PatchAttempt(attempt.kind, attempt.before, _wrap(_model_hunk(attempt.old_text, attempt.new_text)),
                                attempt.intended, attempt.also))
    for attempt in attempts:
        if attempt.kind != "exact" or attempt.intended is None:
            continue
        hunks = _correct_hunks(attempt.before, attempt.intended)
        if not hunks:
            continue
        out.append(PatchAttempt("patch_exact", attempt.before, _wrap(_body(hunks, True)), attempt.intended))
        out.append(PatchAttempt("patch_no_anchor", attempt.before, _wrap(_body(hunks, False)), attempt.intended))
        out.append(PatchAttempt("patch_whitespace", attempt.before, _wrap(_body(_drifted(hunks, rng), True)), attempt.intended))
        wrong = _wrong_context(hunks, rng)
        if wrong is not None:
            out.append(PatchAttempt("patch_wrong_context", attempt.before, _wrap(_body(wrong, True)), attempt.intended))
    return out
