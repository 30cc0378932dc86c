"""The edit corpus: edit_file calls carrying the mistakes models make, each with the file it
is made on and the result the model meant (None: the only right outcome is a refusal).

Generated, seeded, from a few real source files of this repository (bench/edit_sources/,
copied so the corpus does not move when the sources do). An attempt picks a few lines of a
file, changes one of them (an identifier renamed) or adds a line after it: that is the
intended edit. Then one mistake is made in the old_text/new_text the model sends:

- `exact`: none (a control: it must keep working);
- `indent_drift`: every line of old_text and new_text dedented to column 0, or shifted right;
- `tabs_for_spaces` / `spaces_for_tabs`: the file's indentation unit written the other way;
- `trailing_ws`: trailing blanks the file does not have (in old and new alike), or the file
  has them on the lines and the model's copy does not;
- `crlf`: the file has CRLF line endings, the model writes LF;
- `missing_blank` / `extra_blank`: a blank line of the region left out, or one added;
- `escaped_quotes`: `"` sent as `\\"` (a JSON string escaped twice);
- `truncated_first` / `truncated_last`: old_text starts inside the first line (its
  indentation left out) or ends inside the last one, new_text alike;
- `truncated_and_blanks`: a truncated first line and trailing blanks on every line (taken
  when only the indentation was cut; no matcher takes a line cut inside its text);
- `stale_line`: a line of the region was changed by an earlier edit, the model sends the old
  one: must be refused (applying would undo the earlier edit);
- `twice`: the region occurs twice in the file: must be refused;
- `twice_drifted`: the region occurs twice at different indentations, old_text matches
  neither exactly: must be refused;
- `combo`: indentation drift and trailing blanks, or CRLF and tabs, together.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path(__file__).parent / "edit_sources"
SEED = 34
PER_KIND = 24

_IDENT = re.compile(r"\b[a-z_][a-z0-9_]{2,}\b")


@dataclass(frozen=True)
class Attempt:
    kind: str
    source: str
    before: str  # the file's text
    old_text: str
    new_text: str
    intended: str | None  # the file's text after the edit meant, or None: must be refused
    also: tuple[str, ...] = ()  # other results as good (a changed line keeping the file's trailing blanks)


@dataclass
class Region:
    lines: list[str]  # the file's line bodies (no endings)
    start: int
    end: int
    new: list[str]  # the region's lines after the intended change (bodies)

    @property
    def old(self) -> list[str]:
        return self.lines[self.start:self.end]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _unit(lines: list[str]) -> str:
    if any(line.startswith("\t") for line in lines):
        return "\t"
    widths = {len(_indent(line)) for line in lines if line.strip() and _indent(line)}
    return " " * (min(widths) if widths else 4)


def _pick_region(rng: random.Random, lines: list[str], need: Callable[[list[str]], bool]) -> Region | None:
    for _ in range(200):
        size = rng.randint(2, 6)
        start = rng.randrange(0, max(1, len(lines) - size))
        region = lines[start:start + size]
        if not region[0].strip() or not region[-1].strip() or not need(region):
            continue
        text = "\n".join(region)
        if "\n".join(lines).count(text) != 1:
            continue
        changeable = [i for i, line in enumerate(region) if _IDENT.search(line)]
        if not changeable:
            continue
        at = rng.choice(changeable)
        new = list(region)
        if rng.random() < 0.7:
            words = _IDENT.findall(new[at])
            word = rng.choice(words)
            new[at] = re.sub(rf"\b{word}\b", word + "_renamed", new[at], count=1)
        else:
            new.insert(at + 1, _indent(region[at]) + f"added_line({at})")
        return Region(lines, start, start + size, new)
    return None


def _file(lines: list[str], newline: str = "\n") -> str:
    return newline.join(lines) + newline


def _intended(region: Region, newline: str = "\n") -> str:
    return _file(region.lines[:region.start] + region.new + region.lines[region.end:], newline)


def _join(lines: list[str]) -> str:
    return "\n".join(lines)


def _has_indent(region: list[str]) -> bool:
    return any(_indent(line) for line in region if line.strip())


def _drift(lines: list[str], rng: random.Random, unit: str) -> list[str]:
    common = min((len(_indent(line)) for line in lines if line.strip()), default=0)
    if common and rng.random() < 0.6:
        return [line[common:] if line.strip() else line for line in lines]
    extra = unit * rng.randint(1, 2)
    return [extra + line if line.strip() else line for line in lines]


def _swap_unit(lines: list[str], unit: str, other: str) -> list[str]:
    out = []
    for line in lines:
        indent = _indent(line)
        levels = len(indent) // len(unit) if unit != "\t" else indent.count("\t")
        out.append(other * levels + line[len(indent):])
    return out


def generate(seed: int = SEED, per_kind: int = PER_KIND) -> list[Attempt]:
    rng = random.Random(seed)
    sources = {path.name.removesuffix(".txt"): path.read_text().splitlines() for path in sorted(SOURCES.glob("*.txt"))}
    # one tab-indented file, as Go and Makefiles are: the TypeScript source with tabs
    ts = sources["approvals.ts"]
    sources["approvals_tabs.ts"] = _swap_unit(ts, _unit(ts), "\t")
    attempts: list[Attempt] = []

    def add(kind: str, make: Callable[[str, list[str]], Attempt | None]) -> None:
        made = 0
        for _ in range(per_kind * 20):
            if made >= per_kind:
                break
            name = rng.choice(sorted(sources))
            attempt = make(name, sources[name])
            if attempt is not None:
                attempts.append(attempt)
                made += 1

    def simple(kind: str, need: Callable[[list[str]], bool], mutate: Callable[[list[str], str, int], list[str]]) -> None:
        def make(name: str, lines: list[str]) -> Attempt | None:
            region = _pick_region(rng, lines, need)
            if region is None:
                return None
            unit = _unit(lines)
            seed = rng.randrange(1 << 30)  # the same mistake on both sides
            old, new = mutate(region.old, unit, seed), mutate(region.new, unit, seed)
            return Attempt(kind, name, _file(lines), _join(old), _join(new), _intended(region))

        add(kind, make)

    simple("exact", lambda r: True, lambda ls, u, s: ls)
    simple("indent_drift", _has_indent, lambda ls, u, s: _drift(ls, random.Random(s), u))
    simple("tabs_for_spaces", _has_indent, lambda ls, u, s: _swap_unit(ls, u, "\t" if u != "\t" else "    "))
    simple("trailing_ws", lambda r: True, lambda ls, u, s: [line + " " * (1 + s % 3) if line.strip() else line for line in ls])

    def file_trailing(name: str, lines: list[str]) -> Attempt | None:
        region = _pick_region(rng, lines, lambda r: True)
        if region is None:
            return None
        spaced = list(lines)
        for i in range(region.start, region.end):
            if spaced[i].strip() and i % 2:
                spaced[i] += "  "
        new = list(region.new)
        kept = list(region.new)  # as good: a changed line keeps the blanks of the line it replaces
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, region.old, region.new, autojunk=False).get_opcodes():
            if tag == "equal":  # the lines the edit keeps keep their blanks
                new[j1:j2] = kept[j1:j2] = spaced[region.start + i1:region.start + i2]
            elif tag == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    line = spaced[region.start + i]
                    kept[j] += line[len(line.rstrip()):]
        moved = Region(spaced, region.start, region.end, new)
        also = Region(spaced, region.start, region.end, kept)
        return Attempt("trailing_ws_in_file", name, _file(spaced), _join(region.old), _join(region.new), _intended(moved),
                       (_intended(also),))

    add("trailing_ws_in_file", file_trailing)

    def crlf(name: str, lines: list[str]) -> Attempt | None:
        region = _pick_region(rng, lines, lambda r: True)
        if region is None:
            return None
        return Attempt("crlf", name, _file(lines, "\r\n"), _join(region.old), _join(region.new), _intended(region, "\r\n"))

    add("crlf", crlf)

    def drop_blank(ls: list[str], u: str, s: int) -> list[str]:
        return [line for line in ls if line.strip()]

    simple("missing_blank", lambda r: any(not line.strip() for line in r), drop_blank)

    def extra_blank(name: str, lines: list[str]) -> Attempt | None:
        region = _pick_region(rng, lines, lambda r: len(r) >= 3)
        if region is None:
            return None
        at = rng.randrange(1, len(region.old))
        if not region.old[at - 1].strip() or not region.old[at].strip():
            return None
        old = region.old[:at] + [""] + region.old[at:]
        line = region.old[at - 1]
        new_at = region.new.index(line) + 1 if line in region.new else None
        if new_at is None:
            return None
        new = region.new[:new_at] + [""] + region.new[new_at:]
        return Attempt("extra_blank", name, _file(lines), _join(old), _join(new), _intended(region))

    add("extra_blank", extra_blank)
    simple("escaped_quotes", lambda r: any('"' in line for line in r), lambda ls, u, s: [line.replace('"', '\\"') for line in ls])

    def truncated(first: bool) -> Callable[[str, list[str]], Attempt | None]:
        def make(name: str, lines: list[str]) -> Attempt | None:
            region = _pick_region(rng, lines, lambda r: len(r) >= 3)
            if region is None:
                return None
            edge = 0 if first else -1
            if region.new[edge] != region.old[edge]:
                return None  # the cut line must be one the edit keeps
            line = region.old[edge]
            if first:
                cut = len(_indent(line)) + (rng.randint(0, len(line.strip()) // 2) if rng.random() < 0.5 else 0)
                if cut == 0:
                    return None
                old, new = [line[cut:], *region.old[1:]], [line[cut:], *region.new[1:]]
            else:
                cut = rng.randint(len(_indent(line)) + 1, len(line))
                if cut == len(line):
                    return None
                old, new = [*region.old[:-1], line[:cut]], [*region.new[:-1], line[:cut]]
            return Attempt("truncated_first" if first else "truncated_last", name, _file(lines), _join(old), _join(new), _intended(region))

        return make

    add("truncated_first", truncated(True))
    add("truncated_last", truncated(False))

    def truncated_blanks(name: str, lines: list[str]) -> Attempt | None:
        made = truncated(True)(name, lines)
        if made is None:
            return None
        old, new = ([line + " " for line in text.split("\n")] for text in (made.old_text, made.new_text))
        return Attempt("truncated_and_blanks", name, made.before, _join(old), _join(new), made.intended)

    add("truncated_and_blanks", truncated_blanks)

    def stale(name: str, lines: list[str]) -> Attempt | None:
        region = _pick_region(rng, lines, lambda r: True)
        if region is None:
            return None
        keep = [i for i, line in enumerate(region.old) if line in region.new and _IDENT.search(line)]
        if not keep:
            return None
        at = region.start + rng.choice(keep)
        changed = list(lines)
        word = rng.choice(_IDENT.findall(changed[at]))
        changed[at] = re.sub(rf"\b{word}\b", word + "_v2", changed[at], count=1)
        return Attempt("stale_line", name, _file(changed), _join(region.old), _join(region.new), None)

    add("stale_line", stale)

    def twice(drifted: bool) -> Callable[[str, list[str]], Attempt | None]:
        def make(name: str, lines: list[str]) -> Attempt | None:
            region = _pick_region(rng, lines, _has_indent if drifted else (lambda r: True))
            if region is None:
                return None
            unit = _unit(lines)
            copy = [unit + line if line.strip() else line for line in region.old] if drifted else region.old
            doubled = lines + [""] + copy
            old, new = region.old, region.new
            if drifted:  # matches neither place exactly
                old, new = [line.lstrip() for line in old], [line.lstrip() for line in new]
                if "\n".join(doubled).count(_join(old)) or _join(old) == _join(region.old):
                    return None
            return Attempt("twice_drifted" if drifted else "twice", name, _file(doubled), _join(old), _join(new), None)

        return make

    add("twice", twice(False))
    add("twice_drifted", twice(True))

    def combo(name: str, lines: list[str]) -> Attempt | None:
        region = _pick_region(rng, lines, _has_indent)
        if region is None:
            return None
        unit = _unit(lines)
        if rng.random() < 0.5:
            seed = rng.randrange(1 << 30)
            old = [line + "  " if line.strip() else line for line in _drift(region.old, random.Random(seed), unit)]
            new = [line + "  " if line.strip() else line for line in _drift(region.new, random.Random(seed), unit)]
            return Attempt("combo", name, _file(lines), _join(old), _join(new), _intended(region))
        other = "\t" if unit != "\t" else "    "
        return Attempt("combo", name, _file(lines, "\r\n"), _join(_swap_unit(region.old, unit, other)),
                       _join(_swap_unit(region.new, unit, other)), _intended(region, "\r\n"))

    add("combo", combo)
    return attempts
