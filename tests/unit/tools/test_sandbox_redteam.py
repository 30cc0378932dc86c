"""The sandbox, second attacker's pass (issue 26): places git runs code from that are not at
their default path (`core.hooksPath`, an `include.path` into the worktree, a `.git/hooks` that
is a link) are read-only inside too. Real bwrap, real git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolSettings
from tunacode_lsp.tools.sandbox import sandbox_state

from .conftest import call, text_of, tools_for

needs_bwrap = pytest.mark.skipif(not sandbox_state("auto").active, reason="bwrap cannot run here")


async def run(ws: Path, command: str) -> str:
    return text_of(await call(tools_for(ws, ToolSettings())["bash"], {"command": command}))


def git(ws: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=ws, check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})


@pytest.fixture
def repo(ws: Path) -> Path:
    if not shutil.which("git"):
        pytest.skip("no git")
    git(ws, "init", "-q")
    return ws


@needs_bwrap
async def test_a_hooks_path_in_the_worktree_is_read_only(repo: Path) -> None:
    (repo / ".githooks").mkdir()
    git(repo, "config", "core.hooksPath", ".githooks")
    text = await run(repo, "echo 'touch PWNED' > .githooks/pre-commit; echo rc=$?")
    assert "rc=0" not in text and not (repo / ".githooks" / "pre-commit").exists(), text


@needs_bwrap
async def test_a_config_file_included_from_the_worktree_is_read_only(repo: Path) -> None:
    (repo / "tools").mkdir()
    (repo / "tools" / "gitconfig").write_text("[user]\n\tname = T\n")
    git(repo, "config", "include.path", "../tools/gitconfig")  # relative to .git/
    text = await run(repo, "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' >> tools/gitconfig; echo rc=$?")
    assert "rc=0" not in text and "fsmonitor" not in (repo / "tools" / "gitconfig").read_text(), text


@needs_bwrap
async def test_a_linked_hooks_folder_cannot_be_written_or_replaced(repo: Path) -> None:
    shutil.rmtree(repo / ".git" / "hooks")
    (repo / "scripts" / "hooks").mkdir(parents=True)
    (repo / ".git" / "hooks").symlink_to("../scripts/hooks")
    text = await run(repo, "echo 'touch PWNED' > scripts/hooks/pre-commit; echo write=$?; "
                           "rm .git/hooks && mkdir .git/hooks && echo 'touch PWNED' > .git/hooks/pre-commit; echo swap=$?")
    assert "write=0" not in text and not (repo / "scripts" / "hooks" / "pre-commit").exists(), text
    assert (repo / ".git" / "hooks").is_symlink() and os.readlink(repo / ".git" / "hooks") == "../scripts/hooks", text


@needs_bwrap
async def test_a_hooks_path_not_made_yet_is_removed_when_a_command_makes_it(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    await run(repo, "mkdir .githooks && echo 'touch PWNED' > .githooks/pre-commit")
    assert not (repo / ".githooks").exists()
