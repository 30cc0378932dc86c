"""Attacks on the tools through the real server (issue 13): secrets, repository metadata,
oversized arguments, the sandbox as the server runs it."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest

from tests.conftest import scripted_options
from tunacode_lsp.tools.sandbox import sandbox_state

DONE = {"steps": [{"text": "Done."}]}
KEY = "sk-test-secret-0123456789abcdef"


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _tool_messages(model, index=-1):
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_keys_never_surface(lsp, model, workspace, home, sandbox):
    """Bug: /proc/$PPID/environ from a command returned every key, into the result, the store,
    the export and the next model request; a 401 body echoing the key went everywhere too."""

    model.set_script([
        call("bash", {"command": "cat /proc/$PPID/environ /proc/1/environ | tr '\\0' '\\n'"}),
        DONE,
        {"error": {"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY}"}}}},
    ])
    await lsp.start(
        init_options=scripted_options(model, maxRetries=0, logFile=True, shellSandbox=sandbox),
        env={"OPENAI_COMPATIBLE_API_KEY": KEY, "TUNACODE_LOG_FILE": "1"},
    )
    first = await lsp.command("tunacode.request", {"prompt": "show env"})
    second = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": first["sessionId"]})
    assert second["stopReason"] == "error" and "[redacted]" in second["error"]["message"]
    exported = await lsp.command("tunacode.session.export", {"sessionId": first["sessionId"]})
    seen = {
        "tool result to the model": json.dumps(model.requests[1]),
        "events": json.dumps(lsp.events),
        "results": json.dumps([first, second]),
        "export": json.dumps(exported),
    }
    await lsp.stop()
    log = home / "server.log"
    seen["log file"] = log.read_text() if log.exists() else ""
    for where, text in seen.items():
        assert KEY not in text, where
    if sandbox == "off":  # unsandboxed the command did read the server's environment, without the key
        assert "OPENAI_COMPATIBLE_API_KEY=" in seen["tool result to the model"]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("edit_file", {"filepath": ".git/config", "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = \"touch PWNED\""}),
        ("write_file", {"filepath": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch PWNED\n"}),
        ("read_file", {"filepath": "sub/../.git/config"}),
    ],
)
async def test_repository_metadata_is_not_a_file_like_others(lsp, model, workspace, tool, args):
    """Bug: an edit of .git/config adding core.fsmonitor ran its payload at the next git status."""

    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "sub").mkdir()
    before = (workspace / ".git" / "config").read_text()
    model.set_script([call(tool, args), DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    await lsp.command("tunacode.request", {"prompt": "configure git"})
    assert "version-control metadata" in _tool_messages(model, 1)[-1]
    assert (workspace / ".git" / "config").read_text() == before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    subprocess.run(["git", "status"], cwd=workspace, capture_output=True, check=True)
    assert not (workspace / "PWNED").exists()


async def test_a_huge_argument_is_refused_short(lsp, model, workspace):
    huge = "x" * 50_000_000
    # in 10 events of 5 MB: one server-sent event over 16 MB is a hostile stream, an error of its
    # own (agent/provider/sse.py MAX_EVENT_BYTES, tests/unit/test_openai_provider.py)
    chunked = {"steps": [{"tool_call": {"name": "write_file", "arguments": {"filepath": "a.txt", "content": huge}},
                          "chunks": 10}]}
    model.set_script([chunked, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "write"})
    assert result["stopReason"] == "end_turn"
    message = _tool_messages(model, 1)[-1]
    assert "over the 256 KB limit" in message and len(message) < 500
    assert not (workspace / "a.txt").exists()
    stored = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    assert len(json.dumps(stored)) < 100_000  # the argument was not stored


async def test_a_huge_path_is_echoed_short(lsp, model):
    model.set_script([call("read_file", {"filepath": "p" * 10_000_000}), DONE])
    await lsp.start(init_options=scripted_options(model))
    await lsp.command("tunacode.request", {"prompt": "read"})
    message = _tool_messages(model, 1)[-1]
    assert len(message) < 1_000


async def test_status_and_notice_say_whether_the_shell_is_sandboxed(lsp, model):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    status = await lsp.command("tunacode.status")
    expected = sandbox_state("auto")
    assert status["sandbox"]["mode"] == "auto" and status["sandbox"]["active"] is expected.active
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    notices = [e["message"] for e in lsp.events_of(result["requestId"]) if e["type"] == "notice"]
    assert any("without a sandbox" in n for n in notices) is (not expected.active)


async def test_tool_call_events_carry_the_servers_summary(lsp, model):
    model.set_script([call("bash", {"command": "echo hi"}), DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    [event] = [e for e in lsp.events_of(result["requestId"]) if e["type"] == "tool_call"]
    assert event["summary"] == "echo hi"


async def test_the_servers_environment_shows_no_key_even_to_an_unsandboxed_root_shell(lsp, model):
    """Bug: unsandboxed (shellSandbox off, or no bwrap) a command running as root read
    /proc/$PPID/environ whole (non-dumpable does not stop root); redaction hid the plain key,
    but any encoding of it (base64, rev) went to the model, the store and the export."""

    model.set_script([call("bash", {"command": "base64 -w0 /proc/$PPID/environ; echo; echo END"}), DONE])
    await lsp.start(
        init_options=scripted_options(model, shellSandbox="off"),
        env={"OPENAI_COMPATIBLE_API_KEY": KEY},
    )
    result = await lsp.command("tunacode.request", {"prompt": "show env"})
    assert result["stopReason"] == "end_turn"
    [output] = _tool_messages(model, 1)
    environ = base64.b64decode(output.split("\n")[0])
    names = {item.split(b"=", 1)[0] for item in environ.split(b"\0")}
    assert b"OPENAI_COMPATIBLE_API_KEY" in names and b"TUNACODE_HOME" in names  # it is the server's environment
    assert KEY.encode() not in environ
    assert KEY.encode() not in environ[::-1] and KEY[::-1].encode() not in environ
