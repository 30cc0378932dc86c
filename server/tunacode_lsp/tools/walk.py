"""Files under a folder of the workspace, as git would see them: .gitignore files (nested ones too,
and .git/info/exclude) are honoured, tool and dependency folders are skipped, and symlinks are
never followed out of the workspace (symlinked folders are not entered at all)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec, PathSpec

from tunacode_lsp.tools.paths import is_inside

SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs",
    }
)  # fmt: skip


@dataclass(frozen=True)
class _IgnoreRules:
    base: str  # folder of the .gitignore, relative to the root ("" for the root)
    spec: GitIgnoreSpec

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a `!` rule, None: no rule matched."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        return self.spec.check_file(rel + "/" if is_dir else rel).include


def _load_rules(path: Path, base: str) -> _IgnoreRules | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _IgnoreRules(base, GitIgnoreSpec.from_lines(lines)) if lines else None


def _is_ignored(rules: list[_IgnoreRules], rel: str, is_dir: bool) -> bool:
    for rule in reversed(rules):  # the deepest .gitignore that has a say wins
        decision = rule.decide(rel, is_dir)
        if decision is not None:
            return decision
    return False


def glob_matcher(glob: str | None) -> Callable[[str], bool]:
    """gitignore-style glob on the path relative to the root: `*.py` matches at any depth."""
    if not glob:
        return lambda rel: True
    spec = PathSpec.from_lines("gitignore", [glob])
    return spec.match_file


def walk_files(real_root: Path, start: Path, should_stop: Callable[[], bool]) -> Iterator[tuple[Path, str]]:
    """Yield (real path, path relative to the root) of every visible file under `start`, sorted."""
    rules: list[_IgnoreRules] = []
    exclude = _load_rules(real_root / ".git" / "info" / "exclude", "")
    if exclude:
        rules.append(exclude)
    rel_start = "" if start == real_root else start.relative_to(real_root).as_posix()
    # .gitignore files of the folders above `start` apply too; `start` itself is searched even if
    # ignored, because the model asked for it by name.
    folder = ""
    for part in [p for p in rel_start.split("/") if p]:
        rule = _load_rules(real_root / folder / ".gitignore", folder)
        if rule:
            rules.append(rule)
        folder = f"{folder}/{part}" if folder else part
    yield from _walk(real_root, start, rel_start, rules, should_stop)


def _walk(
    real_root: Path, folder: Path, rel_folder: str, rules: list[_IgnoreRules], should_stop: Callable[[], bool]
) -> Iterator[tuple[Path, str]]:
    if should_stop():
        return
    own = _load_rules(folder / ".gitignore", rel_folder)
    if own:
        rules = [*rules, own]
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
        try:
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if not is_inside(real_root, target) or not os.path.isfile(target):
                    continue  # links out of the workspace, dangling links and linked folders
                if not _is_ignored(rules, rel, False):
                    yield Path(target), rel
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRS and not _is_ignored(rules, rel, True):
                    yield from _walk(real_root, Path(entry.path), rel, rules, should_stop)
            elif entry.is_file(follow_symlinks=False) and not _is_ignored(rules, rel, False):
                yield Path(entry.path), rel
        except OSError:
            continue
