"""Secrets and limits: the API key appears in no store, log or event; events stay small;
one request's events never reach another session's view."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets as random_secrets
import sqlite3
import string
import uuid
from pathlib import Path

from tests.conftest import scripted_options
from tests.lsp.fault_checks import check_request_events
from tests.lsp.fault_stderr import start_with_stderr_file

EVENT_BYTES_LIMIT = 16_000


def _token(size: int) -> str:
    return "".join(random_secrets.choice(string.ascii_letters + string.digits) for _ in range(size))


async def test_the_api_key_is_never_stored_logged_or_sent_as_an_event(lsp, model, home, tmp_path):
    secret = f"sk-test-SECRET-{uuid.uuid4().hex}"
    model.set_script([
        {"steps": [{"text": "Checking the environment."},
                   {"tool_call": {"name": "bash", "arguments": {"command": 'env; echo "key=[$TUNACODE_API_KEY]"'}}}]},
        {"steps": [{"text": "Done."}]},
        {"error": {"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}},
    ])
    stderr_path = tmp_path / "server.stderr"
    client = await start_with_stderr_file(
        lsp, stderr_path, env={"TUNACODE_API_KEY": secret},
        init_options=scripted_options(model, logFile=True, logLevel="debug"),
    )
    # the key is really there: in the server's environment (and so in its model requests)
    assert secret.encode() in Path(f"/proc/{client._server.pid}/environ").read_bytes()

    first = await lsp.command("tunacode.request", {"prompt": "show me the environment"})
    failed = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": first["sessionId"]})
    answers = [
        first, failed,
        await lsp.command("tunacode.session.export", {"sessionId": first["sessionId"]}),
        await lsp.command("tunacode.session.get", {"sessionId": first["sessionId"]}),
        await lsp.command("tunacode.session.list", {}),
        await lsp.command("tunacode.models.list"),
        await lsp.command("tunacode.status"),
    ]
    await lsp.stop()
    lsp.client = None

    assert first["stopReason"] == "end_turn" and failed["stopReason"] == "error"
    assert "Incorrect API key" in failed["error"]["message"]
    bash_output = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "key=[]" in bash_output and "PATH=" in bash_output  # the shell ran without the key
    log_file = home / "server.log"
    assert log_file.stat().st_size > 0 and stderr_path.stat().st_size > 0
    places = {
        "events": json.dumps(lsp.events),
        "answers": json.dumps(answers),
        "client messages": repr(client.log_messages) + repr(client.messages) + repr(client.progress_reports),
        "model request bodies": json.dumps(model.requests),
        "stderr": stderr_path.read_text(errors="replace"),
        **{f"home/{p.name}": p.read_bytes().decode("latin-1") for p in home.iterdir() if p.is_file()},
    }
    assert {"home/server.log", "home/sessions.sqlite3"} <= set(places)
    leaks = [where for where, text in places.items() if secret in text or secret[8:] in text]
    assert leaks == [], leaks


async def test_secrets_the_model_echoes_or_a_tool_prints_reach_no_event_store_export_or_log(lsp, model, home, workspace, tmp_path):
    """Every kind of secret (a configured key, a GITHUB_TOKEN-like variable, a token shape in
    no variable, the extraheader actions/checkout leaves in .git/config) echoed by the model
    in text split across deltas, in thinking, in a tool call's arguments, and printed by a
    tool: in no event, progress report, log line, store byte or export."""

    api_key = f"sk-test-{_token(40)}"
    github_token = f"ghs_{_token(36)}"
    npm_token = f"npm_{_token(36)}"
    aws_secret = _token(40)
    loose_pat = f"ghp_{_token(36)}"  # in no variable: caught by its shape
    aws_key_id = "AKIA" + _token(16).upper()
    header_value = base64.b64encode(f"x-access-token:{github_token}".encode()).decode()
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text(
        '[core]\n\trepositoryformatversion = 0\n[http "https://github.com/"]\n'
        f"\textraheader = AUTHORIZATION: basic {header_value}\n"
    )
    (workspace / "notes.txt").write_text(f"deploy with {loose_pat} and {aws_key_id}\n")
    echoed = f"Your key is {api_key} and the token {github_token}; npm {npm_token}, aws {aws_secret}. Also {loose_pat}."
    model.set_script([
        {"steps": [
            {"thinking": f"The header is AUTHORIZATION: basic {header_value} and {github_token}", "chunks": 17},
            {"text": echoed, "chunks": 23},
            {"tool_call": {"name": "bash", "arguments": {"command": f"cat .git/config notes.txt; env; echo {api_key} {npm_token}"}},
             "chunks": 5},
            {"tool_call": {"name": "read_file", "arguments": {"filepath": "notes.txt"}}},
        ]},
        {"steps": [{"text": f"Done: {github_token} {aws_key_id} {header_value}", "chunks": 9}]},
    ])
    stderr_path = tmp_path / "server.stderr"
    env = {"TUNACODE_API_KEY": api_key, "GITHUB_TOKEN": github_token, "NPM_TOKEN": npm_token,
           "AWS_SECRET_ACCESS_KEY": aws_secret}
    client = await start_with_stderr_file(
        lsp, stderr_path, env=env, init_options=scripted_options(model, logFile=True, logLevel="debug"),
    )
    result = await lsp.command("tunacode.request", {"prompt": "show me everything"})
    exported = await lsp.command("tunacode.session.export", {"sessionId": result["sessionId"]})
    await lsp.stop()
    lsp.client = None

    assert result["stopReason"] == "end_turn" and [c["status"] for c in result["toolCalls"]] == ["completed"] * 2
    tool_results = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "extraheader = AUTHORIZATION: basic [redacted]" in tool_results[0]  # the tool ran; its output is redacted
    events = lsp.events_of(result["requestId"])
    streamed = {kind: "".join(e["text"] for e in events if e["type"] == kind) for kind in ("text_delta", "thinking_delta")}
    assert streamed["text_delta"].startswith("Your key is [redacted] and the token [redacted];")  # nothing lost but secrets
    assert streamed["thinking_delta"] == "The header is AUTHORIZATION: basic [redacted] and [redacted]"
    with sqlite3.connect(home / "sessions.sqlite3") as db:  # every row, as the file holds it
        rows = repr([list(r) for table in ("sessions", "messages") for r in db.execute(f"SELECT * FROM {table}")])
    places = {
        "events": json.dumps(lsp.events),
        "streamed text": streamed["text_delta"],
        "streamed thinking": streamed["thinking_delta"],
        "answer": json.dumps(result),
        "export": json.dumps(exported),
        "client messages": repr(client.log_messages) + repr(client.messages) + repr(client.progress_reports),
        "store rows": rows,
        "tool results the model got": json.dumps(tool_results),
        "stderr": stderr_path.read_text(errors="replace"),
        **{f"home/{p.name}": p.read_bytes().decode("latin-1") for p in home.iterdir() if p.is_file()},
    }
    assert {"home/server.log", "home/sessions.sqlite3"} <= set(places)
    secrets = {"api key": api_key, "GITHUB_TOKEN": github_token, "NPM_TOKEN": npm_token, "AWS secret": aws_secret,
               "ghp_ shape": loose_pat, "AKIA shape": aws_key_id, "extraheader": header_value}
    leaks = [(what, where) for where, text in places.items() for what, secret in secrets.items() if secret in text]
    assert leaks == [], leaks


async def test_event_payloads_and_tool_previews_are_bounded(lsp, model, workspace):
    huge_text, huge_content = "t" * 200_000, "y\n" * 60_000  # 180 KB of JSON: under the 256 KB argument limit
    model.set_script([
        {"steps": [{"text": huge_text},
                   {"tool_call": {"name": "write_file", "arguments": {"filepath": "big.txt", "content": huge_content}}}]},
        {"steps": [{"thinking": "h" * 50_000}, {"tool_call": {"name": "read_file", "arguments": {"filepath": "big.txt"}}}]},
        {"steps": [{"text": "ok"}]},
    ])
    client = await lsp.start(init_options=scripted_options(model))

    result = await lsp.command("tunacode.request", {"prompt": "write a big file"})

    assert result["stopReason"] == "end_turn" and [c["status"] for c in result["toolCalls"]] == ["completed"] * 2
    assert (workspace / "big.txt").read_text() == huge_content  # the tool got its argument whole
    events = lsp.events_of(result["requestId"])
    check_request_events(events, result["sessionId"], result["requestId"])
    largest = max(events, key=lambda e: len(json.dumps(e)))
    assert len(json.dumps(largest)) < EVENT_BYTES_LIMIT, largest["type"]
    deltas = [e["text"] for e in events if e["type"] == "text_delta"]
    assert "".join(deltas) == huge_text + "ok" and len(deltas) > 2  # split, nothing lost
    assert "".join(e["text"] for e in events if e["type"] == "thinking_delta") == "h" * 50_000
    write_call = next(e for e in events if e["type"] == "tool_call" and e["name"] == "write_file")
    assert write_call["args"]["filepath"] == "big.txt" and "more characters" in write_call["args"]["content"]
    assert all(len(e.get("result", "")) <= 400 for e in events if e["type"] == "tool_call_update")
    reports = [r for token_reports in client.progress_reports.values() for r in token_reports]
    assert reports and all(len(getattr(r, "message", None) or "") <= 200 for r in reports)


def _slow_turn(word: str, call_id: str) -> dict:
    return {"steps": [{"text": f"{word} " * 40, "chunks": 40, "delay": 0.05},
                      {"tool_call": {"id": call_id, "name": "list_files", "arguments": {}}}]}


async def test_one_requests_events_never_reach_another_session(lsp, model):
    done = {"steps": [{"text": "Done."}]}
    model.set_script([_slow_turn("alpha", "call_alpha"), _slow_turn("beta", "call_beta"), done, done])
    await lsp.start(init_options=scripted_options(model))

    pending_a = lsp.send_command("tunacode.request", {"prompt": "task A"})
    await lsp.wait_for_event(lambda e: e["type"] == "text_delta")  # A streams its first turn...
    pending_b = lsp.send_command("tunacode.request", {"prompt": "task B"})  # ...when B starts
    result_a, result_b = await asyncio.wait_for(asyncio.gather(pending_a, pending_b), 20)

    assert result_a["sessionId"] != result_b["sessionId"]
    assert {e["requestId"] for e in lsp.events} == {result_a["requestId"], result_b["requestId"]}
    starts = {e["requestId"]: i for i, e in enumerate(lsp.events) if e["type"] == "request_start"}
    end_a = next(i for i, e in enumerate(lsp.events) if e["type"] == "request_end" and e["requestId"] == result_a["requestId"])
    assert starts[result_b["requestId"]] < end_a  # the two really ran at once
    for result, word, other, call_id in ((result_a, "alpha", "beta", "call_alpha"), (result_b, "beta", "alpha", "call_beta")):
        events = lsp.events_of(result["requestId"])
        check_request_events(events, result["sessionId"], result["requestId"])
        text = "".join(e["text"] for e in events if e["type"] == "text_delta")
        assert word in text and other not in text
        assert {e["toolCallId"] for e in events if "toolCallId" in e} == {call_id}
        assert [c["toolCallId"] for c in result["toolCalls"]] == [call_id]
        assert result["text"] == "Done."
