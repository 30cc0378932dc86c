"""Workspace files whose change makes code run outside the shell sandbox later: VCS control files
(read-only inside the sandbox) and the files an editor, the shell, git, CI or this server runs by
itself (read-only inside too, and an edit of one is flagged and always asked: agent/approvals.py)."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

# Workspace files and folders whose change makes code run outside the sandbox later (the editor's
# own `git status`, a hook at the next commit): read-only inside. Their top folder (`.git`, `.hg`,
# `.github`, ...) is bound onto itself so it cannot be renamed or replaced to get around them.
VCS_CONTROL = (".git/config", ".git/config.worktree", ".git/hooks", ".git/commondir", ".git/info",
               ".hg/hgrc", ".hg/hgrc.d", ".svn/hooks", ".jj/repo/config.toml")


# Workspace files that a tool on the user's machine (or CI) runs or loads by itself, without the
# user naming them: the editor on opening the folder (.vscode tasks with runOn folderOpen, settings
# that name executables, launch configurations; .idea run configurations; a dev container's
# commands; Neovim's exrc), the shell on entering it (direnv), git on commit (.husky, pre-commit),
# CI on push (.github/workflows), this server on start (.mcp.json, .tunacode/). Folders end in "/".
# Build files (Makefile, package.json scripts) run only when the user asks for them: not listed.
# An edit of one is flagged in its approval and never auto-approved (agent/approvals.py); inside
# the sandbox those that exist are read-only.
RUNS_CODE_OUTSIDE = (
    ".vscode/", ".idea/", ".devcontainer/", ".github/workflows/", ".husky/", ".tunacode/",
    ".envrc", ".pre-commit-config.yaml", ".mcp.json", ".nvim.lua", ".nvimrc", ".exrc", ".lazy.lua",
)
RUNS_CODE_OUTSIDE_SUFFIXES = (".code-workspace", ".devcontainer.json")


def runs_code_outside(relative: str) -> bool:
    """A workspace path (relative to the root, `/`-separated) that RUNS_CODE_OUTSIDE covers."""

    path = relative.replace(os.sep, "/").lstrip("/").lower()
    if path.endswith(RUNS_CODE_OUTSIDE_SUFFIXES):
        return True
    return any(path.startswith(entry) if entry.endswith("/") else path == entry for entry in RUNS_CODE_OUTSIDE)


def runs_code_paths(workspace: Path, *, existing: bool = True) -> list[Path]:
    """The real paths, inside the workspace, of its RUNS_CODE_OUTSIDE entries (a link in their
    place is followed: `.vscode -> cfg` makes `cfg` one of them)."""

    names = [entry.rstrip("/") for entry in RUNS_CODE_OUTSIDE]
    try:
        names += [name for name in sorted(os.listdir(workspace)) if name.lower().endswith(RUNS_CODE_OUTSIDE_SUFFIXES)]
    except OSError:
        pass
    found: list[Path] = []
    for name in names:
        path = workspace / name
        if not os.path.lexists(path):
            continue
        real = Path(os.path.realpath(path))
        if real != workspace and workspace in real.parents and (os.path.exists(real) or not existing):
            found.append(real)
    return found


def runs_code_outside_path(workspace: Path, real: Path) -> bool:
    """A real path inside the (real) workspace that a tool runs by itself outside the sandbox."""

    try:
        relative = real.relative_to(workspace).as_posix()
    except ValueError:
        return False
    if runs_code_outside(relative):
        return True
    return any(real == entry or entry in real.parents for entry in runs_code_paths(workspace, existing=False))


# `.git/config` settings that name a place git runs code from, or reads more config from:
# inside the worktree, it is as much a control file as `.git/hooks` (`core.hooksPath = .githooks`)
_GIT_PATH_SETTING = re.compile(r"^[ \t]*(hookspath|path)[ \t]*=[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
MAX_GIT_CONFIG_BYTES = 256 * 1024


def _inside(workspace: Path, path: str, *, existing: bool = True) -> Path | None:
    real = Path(os.path.realpath(path))
    return real if real != workspace and workspace in real.parents and (os.path.exists(real) or not existing) else None


def _git_config_places(workspace: Path, *, existing: bool = True) -> list[Path]:
    """Where `.git/config` (and `config.worktree`) point git for hooks and included config,
    when that is inside the workspace: `hooksPath` from the worktree, `path` from `.git/`."""

    found: list[Path] = []
    for name in ("config", "config.worktree"):
        config = workspace / ".git" / name
        try:
            if not config.is_file() or config.stat().st_size > MAX_GIT_CONFIG_BYTES:
                continue
            text = config.read_text("utf-8", "replace")
        except OSError:
            continue
        for key, raw in _GIT_PATH_SETTING.findall(text):
            value = raw.strip()
            value = value[1:].split('"', 1)[0] if value.startswith('"') else re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
            if not value or value.startswith("~"):
                continue
            base = workspace if key.lower() == "hookspath" else workspace / ".git"
            inside = _inside(workspace, os.path.join(base, value), existing=existing)
            if inside is not None:
                found.append(inside)
    return found


def vcs_control_paths(workspace: Path) -> list[Path]:
    """The VCS control files of the workspace (and of git submodules) that exist now; for one
    that is a link, the place it leads to inside the workspace (the link itself is put back
    after a command: `Absent.links`); the places `.git/config` names (`_git_config_places`)."""

    found: list[Path] = []
    for rel in VCS_CONTROL:
        path = workspace / rel
        if os.path.islink(path):
            inside = _inside(workspace, str(path))
            if inside is not None:
                found.append(inside)
        elif os.path.lexists(path):
            found.append(path)
    found += _git_config_places(workspace)
    modules = workspace / ".git" / "modules"
    if modules.is_dir() and not modules.is_symlink():
        for sub in sorted(modules.glob("**/config"))[:200]:
            if not sub.is_symlink() and sub.is_file():
                found.append(sub)
                if (sub.parent / "hooks").is_dir():
                    found.append(sub.parent / "hooks")
    return found


@dataclass(frozen=True)
class Absent:
    """Protected places that did not exist before a sandboxed command (which cannot be made
    read-only, as there is nothing to bind): the command must not leave them behind."""

    paths: tuple[Path, ...]
    root_names: frozenset[str]
    links: tuple[tuple[Path, str], ...] = ()  # VCS control files that are links, and where they lead


def absent_protected(workspace: Path) -> Absent:
    """Before a command: the VCS control files of existing repositories (a repository the command
    creates, `git init`, is its own) and the RUNS_CODE_OUTSIDE places that do not exist."""

    paths = [workspace / rel for rel in VCS_CONTROL if (workspace / rel.split("/")[0]).is_dir()]
    paths += [workspace / entry.rstrip("/") for entry in RUNS_CODE_OUTSIDE]
    paths += _git_config_places(workspace, existing=False)  # `core.hooksPath = .githooks` not made yet
    try:
        names = frozenset(os.listdir(workspace))
    except OSError:
        names = frozenset()
    links = tuple((workspace / rel, os.readlink(workspace / rel)) for rel in VCS_CONTROL if os.path.islink(workspace / rel))
    return Absent(tuple(p for p in paths if not os.path.lexists(p)), names, links)


def remove_appeared(workspace: Path, absent: Absent) -> list[str]:
    """After the command (its processes gone): remove what it created in those places (a folder
    with everything in it, a link as the link); returns their workspace-relative paths."""

    found = [p for p in absent.paths if os.path.lexists(p)]
    try:
        found += [workspace / name for name in sorted(os.listdir(workspace))
                  if name not in absent.root_names and name.lower().endswith(RUNS_CODE_OUTSIDE_SUFFIXES)]
    except OSError:
        pass
    removed: list[str] = []
    for link, target in absent.links:  # a linked `.git/hooks` replaced by a folder of one's own
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        try:
            if os.path.isdir(link) and not os.path.islink(link):
                shutil.rmtree(link)
            elif os.path.lexists(link):
                link.unlink()
            os.symlink(target, link)
        except OSError:
            continue
        removed.append(link.relative_to(workspace).as_posix())
    for path in found:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path.relative_to(workspace).as_posix())
    return removed
