"""apply_patch (Codex's patch format) on real files: the parser, the tolerant but unique hunk
search, and hostile patches (paths out, links out, special files, VCS metadata, files that run
code outside the sandbox, huge patches, Add of an existing file, Delete of a missing one):
each refused with a clear error and nothing written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tunacode_lsp.agent.approvals import approval_view, edits_code_outside
from tunacode_lsp.agent.edit_format import uses_apply_patch
from tunacode_lsp.agent.permissions import parse_rules
from tunacode_lsp.tools import LineRefLedger, ToolError, build_tools
from tunacode_lsp.tools.apply_patch import plan_patch
from tunacode_lsp.tools.patch_format import MAX_PATCH_CHARS, PatchError, apply_hunks, parse_patch

from .conftest import call, text_of

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def ptools(ws: Path):
    return {tool.name: tool for tool in build_tools(ws, apply_patch=True)}


@pytest.fixture
def calc(ws: Path) -> Path:
    path = ws / "calc.py"
    path.write_text(CALC)
    return path


# ---------------------------------------------------------------- the parser


def test_parse_every_operation() -> None:
    ops = parse_patch(patch(
        "*** Add File: new.txt", "+one", "+two",
        "*** Delete File: old.txt",
        "*** Update File: calc.py", "*** Move to: lib/calc.py", "@@ def add(a, b):", "-    return a - b", "+    return a + b",
    ))
    assert [(op.kind, op.path) for op in ops] == [("add", "new.txt"), ("delete", "old.txt"), ("update", "calc.py")]
    assert ops[0].content == "one\ntwo\n"
    assert ops[2].move_to == "lib/calc.py"
    assert ops[2].hunks[0].anchor == "def add(a, b):"
    assert ops[2].hunks[0].old == ["    return a - b"] and ops[2].hunks[0].new == ["    return a + b"]


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("*** Update File: a\n-x\n+y\n*** End Patch", "first line"),
    ("*** Begin Patch\n*** Update File: a\n-x\n+y\n", "last line"),
    ("*** Begin Patch\n*** End Patch", "changes no file"),
    ("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch", "not a file header"),
    ("*** Begin Patch\n*** Update File: a\n*** End Patch", "no hunk"),
    ("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch", "starts with neither"),
    ("*** Begin Patch\n*** Update File:   \n-x\n*** End Patch", "needs a path"),
])
def test_malformed_patches_are_errors(text: str, message: str) -> None:
    with pytest.raises(PatchError, match=message):
        parse_patch(text)


def test_a_huge_patch_is_refused_before_parsing() -> None:
    huge = patch("*** Add File: big.txt", *(["+" + "x" * 1000] * (MAX_PATCH_CHARS // 1000 + 10)))
    with pytest.raises(PatchError, match="over the limit"):
        parse_patch(huge)


def test_a_heredoc_wrapper_is_accepted() -> None:
    ops = parse_patch("<<'EOF'\n" + patch("*** Delete File: a.txt") + "EOF\n")
    assert [(op.kind, op.path) for op in ops] == [("delete", "a.txt")]


def test_hunks_apply_with_whitespace_drift_and_missing_anchor_but_never_ambiguously() -> None:
    text = "def f():\n    x = 1\n    return x\n\ndef g():\n    x = 1\n    return x\n"
    # the context occurs twice: without an @@ line the hunk is ambiguous, an error
    ops = parse_patch(patch("*** Update File: m.py", "     x = 1", "-    return x", "+    return x + 1"))
    with pytest.raises(PatchError, match="more than once"):
        apply_hunks(text, ops[0].hunks, "m.py")
    # with the anchor it is found below it
    ops = parse_patch(patch("*** Update File: m.py", "@@ def g():", "     x = 1", "-    return x", "+    return x + 1"))
    new, notes = apply_hunks(text, ops[0].hunks, "m.py")
    assert new == text.replace("    return x\n", "    return x + 1\n").replace("    return x + 1\n", "    return x\n", 1)
    assert notes == []
    # indentation drift (tabs, two spaces): found ignoring indentation, the file's own context kept
    ops = parse_patch(patch("*** Update File: m.py", "@@ def g():", "   x = 1", "-\treturn x", "+\treturn 2"))
    new, notes = apply_hunks(text, ops[0].hunks, "m.py")
    assert new.endswith("def g():\n    x = 1\n    return 2\n")
    assert notes and "ignoring indentation" in notes[0]
    # the context drifted but the added line is written at another depth: which one is meant
    # cannot be told, so it is refused
    ops = parse_patch(patch("*** Update File: m.py", "@@ def g():", " x = 1", "-return x", "+    return 2"))
    with pytest.raises(PatchError, match="cannot be told"):
        apply_hunks(text, ops[0].hunks, "m.py")


def test_a_wrong_context_line_is_an_error_naming_it() -> None:
    ops = parse_patch(patch("*** Update File: calc.py", " def add(x, y):", "-    return a - b", "+    return a + b"))
    with pytest.raises(PatchError, match="not found"):
        apply_hunks(CALC, ops[0].hunks, "calc.py")


def test_crlf_files_stay_crlf() -> None:
    text = "a\r\nb\r\nc\r\n"
    ops = parse_patch(patch("*** Update File: x", " a", "-b", "+B"))
    assert apply_hunks(text, ops[0].hunks, "x")[0] == "a\r\nB\r\nc\r\n"


# ---------------------------------------------------------------- the tool on real files


async def test_update_add_delete_apply_and_return_the_diff(ws: Path, calc: Path, ptools) -> None:
    (ws / "old.txt").write_text("bye\n")
    result = await call(ptools["apply_patch"], {"patch": patch(
        "*** Update File: calc.py", "@@ def add(a, b):", "-    return a - b", "+    return a + b",
        "*** Add File: docs/new.md", "+# new",
        "*** Delete File: old.txt",
    )})
    assert calc.read_text() == CALC.replace("a - b", "a + b")
    assert (ws / "docs" / "new.md").read_text() == "# new\n"
    assert not (ws / "old.txt").exists()
    assert text_of(result).startswith("Patched 3 files (+2 -2): calc.py (updated), docs/new.md (added), old.txt (deleted).")
    assert "+++ /dev/null" in result.details["diff"] and "-    return a - b" in result.details["diff"]


async def test_a_move_adds_the_new_path_and_deletes_the_old(ws: Path, calc: Path, ptools) -> None:
    await call(ptools["apply_patch"], {"patch": patch(
        "*** Update File: calc.py", "*** Move to: lib/calc.py", "@@", "-    return a - b", "+    return a + b",
    )})
    assert not calc.exists()
    assert (ws / "lib" / "calc.py").read_text() == CALC.replace("a - b", "a + b")


def _special(ws: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(ws / "pipe")
        return "pipe"
    (ws / "null").symlink_to("/dev/null")
    return "null"


HOSTILE = {
    "dotdot": lambda ws, out: patch("*** Update File: ../outside/secret.txt", "-TOP SECRET", "+owned"),
    "absolute": lambda ws, out: patch(f"*** Delete File: {out / 'secret.txt'}"),
    "add_outside": lambda ws, out: patch("*** Add File: ../outside/new.txt", "+x"),
    "link_out": lambda ws, out: patch("*** Update File: link_dir/secret.txt", "-TOP SECRET", "+owned"),
    "link_file_delete": lambda ws, out: patch("*** Delete File: link_file"),
    "move_out": lambda ws, out: patch("*** Update File: calc.py", "*** Move to: ../outside/calc.py", "-    return a - b", "+    return a + b"),
    "git_config": lambda ws, out: patch("*** Update File: .git/config", " [core]", "+\tfsmonitor = sh evil"),
    "git_add_hook": lambda ws, out: patch("*** Add File: .git/hooks/pre-commit", "+#!/bin/sh", "+evil"),
    "fifo": lambda ws, out: (_special(ws, "fifo"), patch("*** Update File: pipe", "-x", "+y"))[1],
    "device_link": lambda ws, out: (_special(ws, "device"), patch("*** Delete File: null"))[1],
    "add_existing": lambda ws, out: patch("*** Add File: calc.py", "+overwritten"),
    "delete_missing": lambda ws, out: patch("*** Delete File: nothing.txt"),
    "update_missing": lambda ws, out: patch("*** Update File: nothing.txt", "-a", "+b"),
    "twice": lambda ws, out: patch("*** Update File: calc.py", "-    return a - b", "+    return 1", "*** Delete File: calc.py"),
    "delete_folder": lambda ws, out: patch("*** Delete File: sub"),
    "half_bad": lambda ws, out: patch("*** Add File: fine.txt", "+fine", "*** Update File: ../outside/secret.txt", "-TOP SECRET", "+owned"),
    "huge": lambda ws, out: patch("*** Add File: big.txt", *(["+" + "x" * 1000] * (MAX_PATCH_CHARS // 1000 + 10))),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_patches_are_refused_and_nothing_is_written(
    name: str, ws: Path, outside: Path, escapes, calc: Path, ptools
) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "sub").mkdir()
    text = HOSTILE[name](ws, outside)
    before_ws, before_out = tree_digest(ws), tree_digest(outside)
    with pytest.raises(ToolError) as info:
        await call(ptools["apply_patch"], {"patch": text})
    message = str(info.value)
    assert message and "Traceback" not in message
    assert tree_digest(ws) == before_ws and tree_digest(outside) == before_out
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_the_errors_say_why(ws: Path, calc: Path, outside: Path, escapes, ptools) -> None:
    async def error(text: str) -> str:
        with pytest.raises(ToolError) as info:
            await call(ptools["apply_patch"], {"patch": text})
        return str(info.value)

    assert "outside the workspace" in await error(HOSTILE["dotdot"](ws, outside))
    assert "version-control metadata" in await error(HOSTILE["git_config"](ws, outside))
    assert "already exists" in await error(HOSTILE["add_existing"](ws, outside))
    assert "does not exist" in await error(HOSTILE["delete_missing"](ws, outside))
    assert "not a regular file" in await error(HOSTILE["fifo"](ws, outside))


def test_the_approval_shows_every_files_diff_and_flags_files_that_run_code_outside(ws: Path, calc: Path) -> None:
    text = patch(
        "*** Update File: calc.py", "-    return a - b", "+    return a + b",
        "*** Add File: .vscode/tasks.json", '+{"version": "2.0.0"}',
    )
    view = approval_view("apply_patch", {"patch": text}, ws, LineRefLedger())
    assert view.detail_kind == "diff" and view.runs_code_outside
    assert "--- a/calc.py" in view.detail and "+++ b/.vscode/tasks.json" in view.detail
    assert view.headline == "patch 2 files: calc.py, .vscode/tasks.json (-1 +2 lines)"
    assert view.digest == plan_patch(ws, text).digest
    assert edits_code_outside("apply_patch", {"patch": text}, ws)  # asked even under approval auto
    assert not edits_code_outside("apply_patch", {"patch": patch("*** Delete File: calc.py")}, ws)


async def test_the_tool_writes_only_what_was_approved(ws: Path, calc: Path) -> None:
    approved: dict[str, str] = {}
    tools = {t.name: t for t in build_tools(ws, approved=approved, apply_patch=True)}
    text = patch("*** Update File: calc.py", "-    return a * b", "+    return b * a")
    approved["call-1"] = plan_patch(ws, text).digest
    calc.write_text(CALC.replace("return a - b", "return 0"))  # changed while the user decided
    with pytest.raises(ToolError, match="while the user was deciding"):
        await call(tools["apply_patch"], {"patch": text})
    assert calc.read_text() == CALC.replace("return a - b", "return 0")


def test_permission_rules_of_the_file_tools_cover_patch_paths(ws: Path) -> None:
    rules, problems = parse_rules({"deny": ["edit_file(secrets/**)"], "allow": ["apply_patch(src/**)"]}, "user")
    assert not problems
    denied = rules.decide("apply_patch", {"patch": patch("*** Add File: ok.txt", "+x", "*** Delete File: secrets/key")}, ws)
    assert denied is not None and denied.effect == "deny"
    allowed = rules.decide("apply_patch", {"patch": patch("*** Add File: src/a.py", "+x")}, ws)
    assert allowed is not None and allowed.effect == "allow"
    mixed = rules.decide("apply_patch", {"patch": patch("*** Add File: src/a.py", "+x", "*** Add File: b.py", "+x")}, ws)
    assert mixed is None  # not every path is allowed: the approval mode decides


@pytest.mark.parametrize("provider, model, expected", [
    ("openai", "gpt-5-codex", True),
    ("openai", "gpt-4.1", True),
    ("openai", "o3", True),
    ("openai", "o4-mini", True),
    ("openai-compatible", "gpt-5-codex", True),
    ("openrouter", "openai/gpt-5", True),
    ("openai-compatible", "my-codex-finetune", True),
    ("anthropic", "claude-sonnet-4-5", False),
    ("openai-compatible", "qwen2.5-coder", False),
    ("openai-compatible", "scripted", False),
    ("openai", "gpt-image-1", False),
    ("gemini", "gemini-2.5-pro", False),
])
def test_the_gpt_codex_family_gets_apply_patch(provider: str, model: str, expected: bool) -> None:
    assert uses_apply_patch(provider, model) is expected
