"""Instruction files: the project's, the user's, and those of sub-folders, with `@imports`.

- The root's `AGENTS.md` (or `CLAUDE.md` when the root has no `AGENTS.md`) and the user's
  `$XDG_CONFIG_HOME/tunacode/AGENTS.md` join the system prompt.
- A sub-folder's `AGENTS.md` (or `CLAUDE.md`) joins the context once per request, appended to
  the result of the first read_file / edit_file / write_file of a file below it.
- A line that is only `@relative/path` imports that file in its place (relative to the file
  that names it; inside the workspace, or inside the user's config folder for the user's
  file), at most `MAX_IMPORT_DEPTH` deep, each file once.

Every file is read with the confined reader (no link out, regular files only, bounded); a
skipped file is a notice, never its content. Blocking functions: call them from a thread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tunacode_lsp.tools.confined_read import read_confined

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")  # the first that exists in a folder
MAX_FILE_CHARS = 20_000  # of one file
MAX_TOTAL_CHARS = 60_000  # of one file with everything it imports
MAX_IMPORT_DEPTH = 5
MAX_NESTED_PER_CALL = 8  # sub-folder files joined to one tool result
MAX_FILES = 50  # read for one instruction file with its imports
MAX_NOTICES = 10  # about one instruction file (then one line says how many more)
_IMPORT = re.compile(r"^\s*@(?P<path>[^\s@][^\s]*)\s*$")


@dataclass
class Expanded:
    text: str
    notices: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # shown paths read (the file and its imports)
    cut: bool = False  # past MAX_TOTAL_CHARS: the rest was left out


def read_instruction_file(base: Path, relative: str) -> Expanded | None:
    """`relative` beneath `base` with its imports expanded; None when it does not exist."""

    seen: set[str] = set()
    result = Expanded("")
    text = _expand(base, PurePosixPath(relative), 0, seen, result, [MAX_TOTAL_CHARS])
    if len(result.notices) > MAX_NOTICES:
        result.notices[MAX_NOTICES:] = [f"{relative}: {len(result.notices) - MAX_NOTICES} more notices about its imports."]
    if text is None:
        return None if not result.notices else Expanded("", result.notices)
    result.text = text.strip()
    return result


def _expand(base: Path, relative: PurePosixPath, depth: int, seen: set[str], out: Expanded, budget: list[int]) -> str | None:
    key = str(relative)
    if depth and (budget[0] <= 0 or len(seen) >= MAX_FILES):  # a checkout's fan of imports is not all read
        out.notices.append(f"{key}: not imported (more than {MAX_FILES} files or {MAX_TOTAL_CHARS:,} characters).")
        return ""
    if key in seen:
        out.notices.append(f"{key}: imported more than once (a cycle?); imported only the first time.")
        return ""
    seen.add(key)
    found = read_confined(base, key, limit=MAX_FILE_CHARS * 4, truncate=True)
    text = found.text()
    if text is None:
        if found.notice:
            out.notices.append(found.notice)
        return None
    out.files.append(found.shown)
    if len(text) > MAX_FILE_CHARS or found.truncated:
        text = text[:MAX_FILE_CHARS] + f"\n[{key} truncated]"
    lines: list[str] = []
    for line in text.splitlines():
        match = _IMPORT.match(line)
        if match is None:  # a file's own lines count against the budget as they are taken
            if budget[0] <= 0:
                out.cut = True
                continue
            lines.append(line[: budget[0]])
            budget[0] -= len(line) + 1
            continue
        target = PurePosixPath(os.path.normpath(str(relative.parent / match.group("path"))))
        if target.is_absolute() or str(target).startswith(".."):
            out.notices.append(f"{key}: the import {match.group('path')!r} leads out of its folder tree; skipped.")
            continue
        if depth + 1 > MAX_IMPORT_DEPTH:
            out.notices.append(f"{key}: the import {match.group('path')!r} is deeper than {MAX_IMPORT_DEPTH}; skipped.")
            continue
        imported = _expand(base, target, depth + 1, seen, out, budget)
        if imported is None:
            out.notices.append(f"{key}: the import {match.group('path')!r} was not found; skipped.")
            continue
        lines.append(imported)
    if depth == 0 and out.cut:
        lines.append("[instructions cut: too long with their imports]")
    return "\n".join(lines)


def root_instructions(root: Path, env: Mapping[str, str] = os.environ) -> tuple[list[tuple[str, str]], list[str]]:
    """([(title, text)], notices): the user's file, then the root's."""

    from tunacode_lsp.agent.settings_files import user_config_dir

    sections: list[tuple[str, str]] = []
    notices: list[str] = []
    user_dir = user_config_dir(env)
    if user_dir.is_dir():
        user = read_instruction_file(user_dir, "AGENTS.md")
        if user is not None:
            notices += user.notices
            if user.text:
                sections.append((f"your instructions ({user_dir / 'AGENTS.md'})", user.text))
    project = folder_instructions(root, PurePosixPath("."))
    if project is not None:
        name, found = project
        notices += found.notices
        if found.text:
            sections.append((f"project instructions (from {name})", found.text))
    return sections, notices


def folder_instructions(root: Path, folder: PurePosixPath) -> tuple[str, Expanded] | None:
    """The folder's AGENTS.md, else its CLAUDE.md: (shown name, content), or None."""

    for name in INSTRUCTION_FILES:
        relative = str(folder / name) if str(folder) != "." else name
        found = read_instruction_file(root, relative)
        if found is not None:
            return relative, found
    return None


def nested_folders(root: Path, path: str) -> list[PurePosixPath]:
    """The sub-folders from the root (exclusive) down to `path`'s folder (inclusive), for a
    path inside the root; [] otherwise."""

    full = Path(path) if Path(path).is_absolute() else root / path
    normal = os.path.normpath(str(full))
    base = os.path.normpath(str(root)).rstrip("/")
    if not normal.startswith(base + "/"):
        return []
    parts = PurePosixPath(normal[len(base) + 1:]).parts[:-1]
    return [PurePosixPath(*parts[: i + 1]) for i in range(len(parts))]


class NestedInstructions:
    """The sub-folder instruction files of one request: each joins once."""

    TOOLS = frozenset({"read_file", "edit_file", "write_file"})

    def __init__(self, root: Path) -> None:
        self.root = root
        self.joined: set[str] = set()

    def for_call(self, tool: str, path: object) -> tuple[str, list[str]]:
        """(text to append to the tool's result, notices). Blocking: call from a thread."""

        if tool not in self.TOOLS or not isinstance(path, str):
            return "", []
        parts: list[str] = []
        notices: list[str] = []
        for folder in nested_folders(self.root, path):
            if str(folder) in self.joined or len(parts) >= MAX_NESTED_PER_CALL:
                continue
            self.joined.add(str(folder))
            found = folder_instructions(self.root, folder)
            if found is None:
                continue
            name, expanded = found
            notices += expanded.notices
            if expanded.text:
                parts.append(f"[Instructions from {name}, for the files below {folder}/]\n{expanded.text}")
        return "\n\n".join(parts), notices
