"""`python -m bench.edit_bench [--markdown FILE]`: the edit corpus (bench/edit_corpus.py) through
the real edit_file tool, once with exact matching only (the tool before issue 34) and then
adding the tolerant matchers one by one (tools/edit_match.py). For each: the share of attempts
applied as the model meant, the share applied wrongly (a file changed otherwise than meant, or
changed where only a refusal is right: must stay 0) and the share refused.

Then the same corpus as apply_patch calls (bench/patch_corpus.py), with the mistakes GPT
models make in patches, through the real apply_patch tool, by kind beside edit_file's."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tunacode_lsp.tools import ToolError
from tunacode_lsp.tools.apply_patch import create_apply_patch_tool
from tunacode_lsp.tools.edit_file import create_edit_file_tool
from tunacode_lsp.tools.edit_match import MATCHERS, Matcher

from .edit_corpus import Attempt, generate
from .patch_corpus import PatchAttempt, generate_patches


@dataclass
class Tally:
    label: str
    intended: int = 0
    wrong: int = 0
    refused: int = 0
    refused_rightly: int = 0  # of the attempts where a refusal is the right outcome
    should_apply: int = 0
    should_refuse: int = 0
    wrong_kinds: Counter[str] = field(default_factory=Counter)
    missed_kinds: Counter[str] = field(default_factory=Counter)
    intended_kinds: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)

    def score(self, attempt: Attempt | PatchAttempt, after: str) -> None:
        changed = after != attempt.before
        self.kinds[attempt.kind] += 1
        if attempt.intended is None:
            self.should_refuse += 1
            if changed:
                self.wrong += 1
                self.wrong_kinds[attempt.kind] += 1
            else:
                self.refused += 1
                self.refused_rightly += 1
                self.intended_kinds[attempt.kind] += 1
            return
        self.should_apply += 1
        if after == attempt.intended or after in attempt.also:
            self.intended += 1
            self.intended_kinds[attempt.kind] += 1
        elif changed:
            self.wrong += 1
            self.wrong_kinds[attempt.kind] += 1
        else:
            self.refused += 1
            self.missed_kinds[attempt.kind] += 1


async def run_corpus(attempts: list[Attempt], matchers: tuple[Matcher, ...], label: str, folder: Path) -> Tally:
    tally = Tally(label)
    tool = create_edit_file_tool(folder, matchers=matchers)
    assert tool.execute is not None
    target = folder / "file.txt"
    for index, attempt in enumerate(attempts):
        target.write_bytes(attempt.before.encode())
        args = {"filepath": "file.txt", "old_text": attempt.old_text, "new_text": attempt.new_text}
        try:
            await tool.execute(f"call-{index}", args, None, None)
        except ToolError:
            pass
        tally.score(attempt, target.read_bytes().decode())
    return tally


async def run_patches(attempts: list[PatchAttempt], folder: Path) -> Tally:
    tally = Tally("apply_patch")
    tool = create_apply_patch_tool(folder)
    assert tool.execute is not None
    target = folder / "file.txt"
    for index, attempt in enumerate(attempts):
        target.write_bytes(attempt.before.encode())
        try:
            await tool.execute(f"call-{index}", {"patch": attempt.patch}, None, None)
        except ToolError:
            pass
        tally.score(attempt, target.read_bytes().decode())
    return tally


async def measure_patches(attempts: list[Attempt]) -> Tally:
    folder = Path(tempfile.mkdtemp(prefix="patch-bench-"))
    try:
        return await run_patches(generate_patches(attempts), folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def render_patches(edit: Tally, patch: Tally) -> str:
    """By kind: the share done as meant (applied as intended, or refused where a refusal is
    right) and the count applied wrongly, edit_file (all matchers) beside apply_patch."""

    def cell(t: Tally, kind: str) -> str:
        n = t.kinds[kind]
        if not n:
            return "– | –"
        return f"{t.intended_kinds[kind]} of {n} | {t.wrong_kinds[kind]}"

    rows = [
        f"apply_patch: {sum(patch.kinds.values())} attempts; applied as intended {patch.intended} of "
        f"{patch.should_apply} ({100 * patch.intended / max(1, patch.should_apply):.1f} %), applied wrongly "
        f"{patch.wrong}, refusals that were right {patch.refused_rightly} of {patch.should_refuse}.",
        "",
        "| kind | edit_file: as meant | edit_file: wrong | apply_patch: as meant | apply_patch: wrong |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind in dict.fromkeys([*edit.kinds, *patch.kinds]):
        rows.append(f"| {kind} | {cell(edit, kind)} | {cell(patch, kind)} |")
    return "\n".join(rows)


async def measure(attempts: list[Attempt]) -> list[Tally]:
    folder = Path(tempfile.mkdtemp(prefix="edit-bench-"))
    try:
        tallies = [await run_corpus(attempts, (), "exact only (before issue 34)", folder)]
        for count in range(1, len(MATCHERS) + 1):
            tallies.append(await run_corpus(attempts, MATCHERS[:count], f"+ {MATCHERS[count - 1].name}", folder))
        return tallies
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def render(attempts: list[Attempt], tallies: list[Tally]) -> str:
    kinds = Counter(a.kind for a in attempts)
    total = len(attempts)
    rows = [
        f"{len(attempts)} attempts ({', '.join(f'{k} {n}' for k, n in kinds.items())}); "
        f"{tallies[0].should_apply} have an intended result, {tallies[0].should_refuse} must be refused.",
        "",
        "| matchers | applied as intended | applied wrongly | refused | refusals that were right |",
        "| --- | --- | --- | --- | --- |",
    ]
    for t in tallies:
        rows.append(
            f"| {t.label} | {t.intended} of {t.should_apply} ({100 * t.intended / t.should_apply:.1f} %) "
            f"| {t.wrong} of {total} ({100 * t.wrong / total:.1f} %) | {t.refused} "
            f"| {t.refused_rightly} of {t.should_refuse} |"
        )
    last = tallies[-1]
    if last.missed_kinds:
        rows += ["", "Still refused with all matchers (by kind): " + ", ".join(f"{k} {n}" for k, n in last.missed_kinds.most_common())]
    wrong = Counter[str]()
    for t in tallies:
        wrong.update(t.wrong_kinds)
    if wrong:
        rows += ["", "APPLIED WRONGLY (by kind): " + ", ".join(f"{k} {n}" for k, n in wrong.most_common())]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.edit_bench", description=__doc__)
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    attempts = generate()
    tallies = asyncio.run(measure(attempts))
    patches = asyncio.run(measure_patches(attempts))
    text = render(attempts, tallies) + "\n\n" + render_patches(tallies[-1], patches)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 1 if any(t.wrong for t in tallies[1:]) or patches.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
