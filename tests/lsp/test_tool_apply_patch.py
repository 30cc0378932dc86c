"""apply_patch over the real server with a scripted model named as the GPT/Codex family: the
tool is offered to it (and not to other models), the approval shows the patch's diff exactly,
the patch applies, `tunacode.changes` lists it and a rewind undoes it; a hostile patch is
refused with a clear error and nothing is written."""

from __future__ import annotations

from tests.conftest import scripted_options

CALC = "def add(a, b):\n    return a - b\n"
GPT = "openai-compatible:gpt-5-codex"
DONE = {"steps": [{"text": "Done."}]}
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: calc.py\n"
    "@@ def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n"
    "*** Add File: notes.md\n"
    "+# notes\n"
    "*** End Patch\n"
)
HOSTILE = (
    "*** Begin Patch\n"
    "*** Add File: fine.txt\n"
    "+fine\n"
    "*** Update File: ../outside.txt\n"
    "-secret\n"
    "+owned\n"
    "*** End Patch\n"
)


def call(args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": "apply_patch", "arguments": args}}]}


def _offered(model, index: int = 0) -> list[str]:
    return [t["function"]["name"] for t in model.requests[index].get("tools", [])]


def _tool_messages(model, index: int = -1) -> list[str]:
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_a_gpt_model_patches_with_approval_and_the_patch_is_listed_and_rewound(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    model.set_script([call({"patch": PATCH}), DONE])
    await lsp.start(init_options={**scripted_options(model, approval="ask"), "model": GPT})
    lsp.approvals.answer = "Allow"
    result = await lsp.command("tunacode.request", {"prompt": "fix it"})
    assert result["stopReason"] == "end_turn"
    assert "apply_patch" in _offered(model) and "edit_file" in _offered(model)
    [prompt] = lsp.approvals.prompts
    assert "patch 2 files: calc.py, notes.md (-1 +2 lines)" in prompt.message
    diff = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
        "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1 @@\n+# notes"
    )
    assert diff in prompt.message  # the diff exactly, every file of the patch
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (workspace / "notes.md").read_text() == "# notes\n"
    assert result["changedFiles"] == ["calc.py", "notes.md"]
    assert _tool_messages(model)[0].startswith("Patched 2 files (+2 -1): calc.py (updated), notes.md (added).")

    changes = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert [(f["path"], f["status"]) for f in changes["files"]] == [("calc.py", "modified"), ("notes.md", "added")]
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert sorted(rewound["restored"]) == ["calc.py", "notes.md"]
    assert (workspace / "calc.py").read_text() == CALC and not (workspace / "notes.md").exists()


async def test_a_hostile_patch_is_refused_before_anyone_is_asked_and_nothing_is_written(lsp, model, workspace):
    (workspace.parent / "outside.txt").write_text("secret\n")
    model.set_script([call({"patch": HOSTILE}), DONE])
    await lsp.start(init_options={**scripted_options(model, approval="ask"), "model": GPT})
    lsp.approvals.answer = "Allow"
    result = await lsp.command("tunacode.request", {"prompt": "patch"})
    assert result["toolCalls"][0]["status"] == "failed"
    assert lsp.approvals.prompts == []  # it cannot run as shown: nobody is asked
    [error] = _tool_messages(model)
    assert "outside the workspace" in error and "../outside.txt" in error
    assert not (workspace / "fine.txt").exists()
    assert (workspace.parent / "outside.txt").read_text() == "secret\n"
    assert result["changedFiles"] == []


async def test_other_models_are_not_offered_apply_patch(lsp, model, workspace):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    await lsp.command("tunacode.request", {"prompt": "hi"})
    assert "edit_file" in _offered(model) and "apply_patch" not in _offered(model)
