"""The headless CLI end to end: `python -m tunacode_lsp run|sessions|demo` as real subprocesses,
the real server under them, the scripted model on 127.0.0.1 in this process."""

from __future__ import annotations

import io
import json
import re
import signal
import sys
from pathlib import Path

import pytest
from tests.clients.cli_support import CliProcess, cli_env, run_cli, scripted_args

from tunacode_lsp.cli import headless as cli_headless
from tunacode_lsp.cli import run as cli_run
from tunacode_lsp.cli import sessions as cli_sessions
from tunacode_lsp.cli.run import UsageError, initialization_options, parse_args
from tunacode_lsp.devtools.demo import BANNER
from tunacode_lsp.store.session_store import SessionStore

HELLO = {"turns": [{"steps": [{"text": "Hello from the scripted model.", "chunks": 4}]}]}
READ_THEN_ANSWER = {"turns": [
    {"steps": [{"text": "Reading notes.", "chunks": 2},
               {"tool_call": {"name": "read_file", "arguments": {"filepath": "notes.txt"}}}]},
    {"steps": [{"text": "The notes say: tuna.", "chunks": 3}]},
]}
SLOW = {"turns": [{"steps": [{"text": "word " * 400, "chunks": 400, "delay": 0.05}]}]}


def _args(model, workspace: Path, prompt: str, *extra: str) -> list[str]:
    return ["run", *scripted_args(model.chat_url, workspace, *extra), prompt]


def _user_texts(body: dict) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


# ---------------------------------------------------------------- output formats


def test_json_lines_are_every_event_then_the_result(model, workspace, home):
    model.set_script(HELLO)
    done = run_cli(_args(model, workspace, "Say hello", "--json"), home=home)
    assert done.code == 0, done.stderr
    lines = done.lines
    events, result = lines[:-1], lines[-1]
    assert result["type"] == "result"
    assert result["stopReason"] == "end_turn" and result["text"] == "Hello from the scripted model."
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "request_start" and events[0]["prompt"] == "Say hello"
    assert events[-1]["type"] == "request_end" and events[-1]["stopReason"] == "end_turn"
    assert all(e["requestId"] == result["requestId"] and e["sessionId"] == result["sessionId"] for e in events)
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == result["text"]
    assert "[session]" not in done.stderr  # JSON mode keeps stderr for problems


def test_plain_mode_prints_the_plan_briefly(model, workspace, home):
    todos = [{"content": "Read notes", "status": "completed", "activeForm": "Reading notes"},
             {"content": "Answer", "status": "in_progress", "activeForm": "Answering"}]
    model.set_script([{"tool_call": {"name": "todo_write", "arguments": {"todos": todos}}}, {"text": "Done."}])
    done = run_cli(_args(model, workspace, "Plan it."), home=home)
    assert done.code == 0, done.stderr
    assert "[plan] [x] Read notes; [~] Answer\n" in done.stderr
    assert "[plan]" not in done.stdout


def test_json_lines_keep_the_models_order_text_before_its_tool_call(model, workspace, home):
    (workspace / "notes.txt").write_text("tuna\n")
    model.set_script(READ_THEN_ANSWER)
    done = run_cli(_args(model, workspace, "What do the notes say?", "--json"), home=home)
    assert done.code == 0, done.stderr
    kinds = [e["type"] for e in done.lines[:-1]]
    assert kinds.index("text_delta") < kinds.index("tool_call")
    first_text = "".join(e["text"] for e in done.lines[: kinds.index("tool_call")] if e["type"] == "text_delta")
    assert first_text == "Reading notes."


def test_plain_mode_answer_on_stdout_tool_lines_and_session_on_stderr(model, workspace, home):
    (workspace / "notes.txt").write_text("tuna\n")
    model.set_script(READ_THEN_ANSWER)
    done = run_cli(_args(model, workspace, "What do the notes say?"), home=home)
    assert done.code == 0, done.stderr
    assert "Reading notes." in done.stdout and done.stdout.endswith("The notes say: tuna.\n")
    assert "[tool]" not in done.stdout
    assert "[tool] Read notes.txt\n" in done.stderr  # the row is the server's title
    assert "[tool] read_file completed in" in done.stderr
    stored = SessionStore(home / "sessions.sqlite3").list_sessions()
    assert len(stored) == 1
    assert f"[session] {stored[0].session_id}" in done.stderr
    # the tool really read the file: its content went back to the model
    assert "tuna" in json.dumps(model.requests[1]["messages"][-1])


def test_prompt_from_stdin(model, workspace, home):
    model.set_script(HELLO)
    done = run_cli(_args(model, workspace, "-"), home=home, stdin="Prompt from a pipe\nsecond line\n")
    assert done.code == 0, done.stderr
    assert "Prompt from a pipe\nsecond line" in _user_texts(model.requests[0])[-1]


def test_approve_deny_is_the_default_and_auto_allows(model, workspace, home):
    write = {"turns": [{"tool_call": {"name": "write_file", "arguments": {"filepath": "new.txt", "content": "x"}}},
                       {"text": "done"}]}
    model.set_script(write)
    denied = run_cli(_args(model, workspace, "write it", "--json"), home=home)
    assert denied.code == 0, denied.stderr
    assert not (workspace / "new.txt").exists()
    final = [e for e in denied.lines if e.get("type") == "tool_call_update"][-1]
    assert final["status"] == "failed"

    model.set_script(write)
    allowed = run_cli(_args(model, workspace, "write it", "--approve", "auto"), home=home)
    assert allowed.code == 0, allowed.stderr
    assert (workspace / "new.txt").read_text() == "x"


def test_flags_map_to_initialization_options(workspace):
    opts = parse_args(["--model", "m:x", "--base-url", "http://127.0.0.1:9/v1", "--max-turns", "7",
                       "--timeout", "12.5", "--cwd", str(workspace), "hello"])
    assert initialization_options(opts) == {
        "approval": "read-only", "model": "m:x", "baseUrl": "http://127.0.0.1:9/v1",
        "maxTurns": 7, "requestTimeout": 12.5,
    }
    assert initialization_options(parse_args(["--approve", "auto", "hi"])) == {"approval": "auto"}
    assert parse_args(["-"], stdin=io.StringIO("from stdin")).prompt == "from stdin"
    with pytest.raises(UsageError, match="empty"):
        parse_args(["-"], stdin=io.StringIO("  \n"))


# ---------------------------------------------------------------- exit codes


def test_provider_error_exits_1_with_the_message(model, workspace, home):
    model.set_script({"turns": [{"error": {"status": 400, "body": {"error": {"message": "bad tool schema"}}}}]})
    done = run_cli(_args(model, workspace, "hi", "--json"), home=home)
    assert done.code == 1, done.stderr
    result = done.lines[-1]
    assert result["type"] == "result" and result["stopReason"] == "error"
    assert "bad tool schema" in result["error"]["message"]


def test_missing_api_key_exits_2_naming_the_variable(model, workspace, home):
    done = run_cli(["run", "--model", "openai:gpt-4.1", "--cwd", str(workspace), "--json", "hi"], home=home)
    assert done.code == 2
    assert "OPENAI_API_KEY" in done.stderr
    assert done.lines == [{"type": "error", "code": -32003, "message": done.lines[0]["message"]}]
    assert "OPENAI_API_KEY" in done.lines[0]["message"]
    assert model.requests == []


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        ([], None, "prompt"),
        (["--approve", "maybe", "hi"], None, "--approve"),
        (["--max-turns", "0", "hi"], None, "--max-turns"),
        (["--timeout", "-1", "hi"], None, "--timeout"),
        (["--cwd", "/nonexistent/folder", "hi"], None, "not a folder"),
        (["-"], "", "empty"),
    ],
)
def test_usage_errors_exit_2(capsys, monkeypatch, args, stdin, needle):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin or ""))
    assert cli_run.main(args) == 2  # parsing fails before any server starts
    captured = capsys.readouterr()
    assert needle in captured.err and captured.out == ""


def test_usage_error_exit_2_as_a_subprocess(home):
    done = run_cli(["run", "--approve", "maybe", "hi"], home=home)
    assert done.code == 2 and "--approve" in done.stderr and done.stdout == ""


def test_unknown_session_exits_2(model, workspace, home):
    done = run_cli(_args(model, workspace, "hi", "--session", "no-such-session"), home=home)
    assert done.code == 2
    assert "no-such-session" in done.stderr
    assert model.requests == []


def test_max_turns_exits_3(model, workspace, home):
    (workspace / "notes.txt").write_text("tuna\n")
    model.set_script(READ_THEN_ANSWER)
    done = run_cli(_args(model, workspace, "read", "--max-turns", "1", "--json"), home=home)
    assert done.code == 3, done.stderr
    assert done.lines[-1]["stopReason"] == "max_turns"
    assert len(model.requests) == 1


def test_timeout_exits_124(model, workspace, home):
    model.set_script({"turns": [{"steps": [{"text": "thinking about it"}, {"stall": 60}]}]})
    done = run_cli(_args(model, workspace, "hi", "--timeout", "0.5", "--json"), home=home)
    assert done.code == 124, done.stderr
    result = done.lines[-1]
    assert result["stopReason"] == "timeout"
    assert result["text"].startswith("thinking about it")


def test_sigint_mid_stream_cancels_130_and_the_session_resumes(model, workspace, home):
    model.set_script(SLOW)
    cli = CliProcess(_args(model, workspace, "Tell me a long story", "--json"), home=home)
    first = cli.wait_for_json(lambda e: e.get("type") == "text_delta")
    cli.proc.send_signal(signal.SIGINT)
    done = cli.finish()
    assert done.code == 130, done.stderr
    result = done.lines[-1]
    assert result["type"] == "result" and result["stopReason"] == "cancelled"
    assert result["text"].startswith(first["text"]) and len(result["text"]) < len("word " * 400)
    assert [e["type"] for e in done.lines[:-1]][-1] == "request_end"

    model.set_script(HELLO)
    again = run_cli(_args(model, workspace, "Go on", "--session", result["sessionId"], "--json"), home=home)
    assert again.code == 0, again.stderr
    assert again.lines[-1]["sessionId"] == result["sessionId"]
    messages = model.requests[-1]["messages"]
    assert any("Tell me a long story" in str(m["content"]) for m in messages if m["role"] == "user")
    assert any("[INTERRUPTED]" in str(m.get("content")) for m in messages if m["role"] == "assistant")
    assert "Go on" in str(messages[-1]["content"])


def test_resume_with_session_sends_the_earlier_turns(model, workspace, home):
    model.set_script({"turns": [{"text": "Nice to meet you, Tuna."}, {"text": "Your name is Tuna."}]})
    first = run_cli(_args(model, workspace, "My name is Tuna.", "--json"), home=home)
    assert first.code == 0, first.stderr
    session_id = first.lines[-1]["sessionId"]
    second = run_cli(_args(model, workspace, "What is my name?", "--session", session_id), home=home)
    assert second.code == 0, second.stderr
    assert second.stdout == "Your name is Tuna.\n"
    roles = [(m["role"], str(m["content"])) for m in model.requests[1]["messages"] if m["role"] != "system"]
    assert [r for r, _ in roles] == ["user", "assistant", "user"]
    assert "My name is Tuna." in roles[0][1] and "Nice to meet you, Tuna." in roles[1][1]
    assert "What is my name?" in roles[2][1]


# ---------------------------------------------------------------- demo


def test_demo_fixes_the_project_offline(tmp_path):
    done = run_cli(["demo"], home=tmp_path / "unused-home", cwd=tmp_path,
                   env=cli_env(tmp_path / "unused-home", OPENAI_API_KEY="sk-must-not-be-used"))
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[1] == BANNER
    assert "before: python3 check.py (fails)" in done.stdout
    assert "+    return a + b" in done.stdout
    assert "after: python3 check.py (passes)\nall checks passed" in done.stdout
    assert "tunacode-lsp run" in done.stdout.split("== next")[1]
    assert "[tool] edit_file completed" in done.stderr
    assert not (tmp_path / "unused-home").exists()  # the demo used its own temp home


# ---------------------------------------------------------------- sessions


@pytest.fixture
def store_with_session(home: Path, workspace: Path) -> tuple[Path, str]:
    path = home / "sessions.sqlite3"
    with SessionStore(path) as store:
        record = store.create_session(cwd=str(workspace), model="openai-compatible:scripted", title="greeting")
        store.append_messages(record.session_id, [
            {"role": "user", "content": [{"type": "text", "text": "hello there"}], "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "general kenobi"}], "stop_reason": "stop",
             "timestamp": 2, "api": "openai-completions", "provider": "openai-compatible", "model": "scripted"},
        ])
    return path, record.session_id


def _sessions(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_sessions.run(list(argv), out, err, io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def test_sessions_list_show_export_import_delete(store_with_session, workspace, tmp_path):
    path, session_id = store_with_session
    store = ["--store", str(path)]

    code, out, _ = _sessions(*store, "list")
    assert code == 0 and session_id in out and "greeting" in out
    code, out, _ = _sessions(*store, "list", "--json", "--cwd", str(workspace))
    listed = json.loads(out)["sessions"]
    assert [s["sessionId"] for s in listed] == [session_id] and listed[0]["messageCount"] == 2
    code, out, _ = _sessions(*store, "list", "--json", "--cwd", str(tmp_path))
    assert json.loads(out) == {"sessions": []}

    code, out, _ = _sessions(*store, "show", session_id)
    assert code == 0 and "> hello there\n" in out and "general kenobi" in out  # the server's projection, as `run` shows it
    code, out, _ = _sessions(*store, "show", session_id, "--json")
    shown = json.loads(out)
    assert shown["session"]["title"] == "greeting" and len(shown["messages"]) == 2
    assert [e["type"] for e in shown["events"]] == ["request_start", "text_delta", "request_end"]

    exported = tmp_path / "doc.json"
    assert _sessions(*store, "export", session_id, "-o", str(exported))[0] == 0
    assert json.loads(exported.read_text())["session_id"] == session_id

    code, out, _ = _sessions(*store, "delete", session_id, "--json")
    assert code == 0 and json.loads(out) == {"deleted": True, "sessionId": session_id}
    assert _sessions(*store, "show", session_id)[0] == 1

    code, out, _ = _sessions(*store, "import", str(exported), "--json")
    assert code == 0 and json.loads(out)["sessionId"] == session_id
    assert _sessions(*store, "show", session_id)[0] == 0


def test_sessions_bad_input(store_with_session, tmp_path):
    path, _ = store_with_session
    store = ["--store", str(path)]
    code, _, err = _sessions(*store, "show", "nope")
    assert code == 1 and "nope" in err
    assert _sessions(*store, "delete", "nope")[0] == 1
    assert _sessions(*store, "list", "--limit", "0")[0] == 2
    assert _sessions(*store, "frobnicate")[0] == 2
    code, _, err = _sessions(*store, "import", "-", stdin="not json")
    assert code == 2 and "not JSON" in err
    code, _, err = _sessions(*store, "import", "-", stdin='{"version": 1}')
    assert code == 2 and "session_id" in err or "messages" in err

    missing = tmp_path / "none" / "sessions.sqlite3"
    code, out, _ = _sessions("--store", str(missing), "list")
    assert code == 0 and out == "no sessions\n"
    assert not missing.exists()  # reading never creates a store

    not_a_db = tmp_path / "garbage.sqlite3"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    code, _, err = _sessions("--store", str(not_a_db), "list")
    assert code == 2 and "not a usable session database" in err


def test_sessions_subprocess_uses_tunacode_home(store_with_session, home):
    _, session_id = store_with_session
    done = run_cli(["sessions", "list", "--json"], home=home)
    assert done.code == 0, done.stderr
    assert [s["sessionId"] for s in json.loads(done.stdout)["sessions"]] == [session_id]


async def test_a_server_that_dies_exits_1_with_its_stderr(workspace):
    out, err = io.StringIO(), io.StringIO()
    opts = cli_run.parse_args(["--cwd", str(workspace), "--json", "hi"])
    dying = [sys.executable, "-c", "import sys; sys.stderr.write('boom: no server here\\n'); sys.exit(3)"]
    code = await cli_headless.HeadlessRun(opts, cli_headless.JsonLinesOutput(out, err), server_command=dying).run()
    assert code == 1
    assert "the language server failed" in err.getvalue() and "boom: no server here" in err.getvalue()
    last = json.loads(out.getvalue().splitlines()[-1])
    assert last["type"] == "error" and "boom" in last["message"]


@pytest.mark.parametrize(("approve", "answer", "created"), [("deny", "Deny", False), ("auto", "Allow", True)])
async def test_an_approval_prompt_is_answered_by_the_approve_flag(
    model, workspace, home, monkeypatch, approve, answer, created
):
    # a server in "ask" mode (run itself never asks for it) sends window/showMessageRequest
    ask = lambda opts: {**initialization_options(opts), "approval": "ask"}  # noqa: E731
    monkeypatch.setattr(cli_run, "initialization_options", ask)
    model.set_script({"turns": [
        {"tool_call": {"name": "write_file", "arguments": {"filepath": "new.txt", "content": "x"}}},
        {"text": "done"},
    ]})
    opts = cli_run.parse_args(scripted_args(model.chat_url, workspace, "--approve", approve, "write it"))
    out, err = io.StringIO(), io.StringIO()
    code = await cli_headless.HeadlessRun(opts, cli_headless.PlainOutput(out, err), env=cli_env(home)).run()
    assert code == 0, err.getvalue()
    assert re.search(rf"TunaCode wants to create new\.txt \(1 lines\) \(write_file\).*\+x -> {answer}\n", err.getvalue()), err.getvalue()
    assert (workspace / "new.txt").exists() is created
    # a call the approval answer refused counts as denied, like one read-only mode refused
    assert ("[denied] write_file new.txt\n" in err.getvalue()) is not created
    assert ("[changed] new.txt\n" in err.getvalue()) is created
