"""The scripted model server over real HTTP on 127.0.0.1, its script validation and its CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tunacode_lsp.devtools.script import ScriptError, TextStep, ToolCallStep, load_script
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

DEVTOOLS = Path(__file__).resolve().parents[2] / "server" / "tunacode_lsp" / "devtools"
DEMO_SCRIPT = DEVTOOLS / "scripts" / "demo.json"

CHAT_BODY = {
    "model": "scripted",
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


def stream_chunks(http: httpx.Client, url: str, body: dict[str, Any] = CHAT_BODY) -> list[Any]:
    """The SSE data payloads of one streamed response: JSON chunks, then "[DONE]"."""

    payloads: list[Any] = []
    with http.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line.startswith("data: "):
                data = line[len("data: ") :]
                payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


def deltas(payloads: list[Any]) -> list[dict[str, Any]]:
    return [p["choices"][0]["delta"] for p in payloads if p != "[DONE]" and p["choices"]]


def finish_reasons(payloads: list[Any]) -> list[str]:
    return [
        p["choices"][0]["finish_reason"]
        for p in payloads
        if p != "[DONE]" and p["choices"] and p["choices"][0]["finish_reason"]
    ]


# ---------------------------------------------------------------- steps over HTTP


def test_text_is_streamed_in_chunks_then_finish_usage_and_done(serve, client) -> None:
    server = serve([{"text": "Hello, world!", "chunks": 3}])
    payloads = stream_chunks(client, server.chat_url)

    assert deltas(payloads)[0] == {"role": "assistant", "content": ""}
    pieces = [d["content"] for d in deltas(payloads)[1:] if "content" in d]
    assert len(pieces) == 3
    assert "".join(pieces) == "Hello, world!"
    assert finish_reasons(payloads) == ["stop"]
    assert payloads[-2]["choices"] == [] and payloads[-2]["usage"]["total_tokens"] > 0
    assert payloads[-1] == "[DONE]"
    assert {p["object"] for p in payloads[:-1]} == {"chat.completion.chunk"}
    assert payloads[0]["model"] == "scripted"


def test_thinking_uses_reasoning_content_or_the_field_asked_for(serve, client) -> None:
    server = serve(
        [
            {
                "steps": [
                    {"thinking": "abcdef", "chunks": 2},
                    {"thinking": "xy", "field": "reasoning"},
                    {"text": "done"},
                ]
            }
        ]
    )
    found = deltas(stream_chunks(client, server.chat_url))
    assert [d["reasoning_content"] for d in found if "reasoning_content" in d] == ["abc", "def"]
    assert [d["reasoning"] for d in found if "reasoning" in d] == ["xy"]


def test_tool_calls_stream_a_header_then_argument_pieces(serve, client) -> None:
    server = serve(
        [
            {
                "steps": [
                    {"tool_call": {"id": "call_a", "name": "read_file",
                                   "arguments": {"filepath": "calc.py"}}, "chunks": 4},
                    {"tool_call": {"name": "bash", "arguments": "{not json"}},
                ]
            }
        ]
    )
    payloads = stream_chunks(client, server.chat_url)
    calls = [c for d in deltas(payloads) for c in d.get("tool_calls", [])]
    heads = [c for c in calls if "id" in c]
    assert [(h["index"], h["id"], h["type"], h["function"]["name"]) for h in heads] == [
        (0, "call_a", "function", "read_file"),
        (1, heads[1]["id"], "function", "bash"),
    ]
    assert heads[1]["id"].startswith("call_") and heads[1]["id"] != "call_a"
    pieces = [c["function"]["arguments"] for c in calls if c["index"] == 0 and "id" not in c]
    assert len(pieces) == 4
    assert json.loads("".join(pieces)) == {"filepath": "calc.py"}
    raw = "".join(c["function"]["arguments"] for c in calls if c["index"] == 1)
    assert raw == "{not json"
    assert finish_reasons(payloads) == ["tool_calls"]


def test_default_tool_call_ids_are_unique_across_turns(serve, client) -> None:
    turn = {"tool_call": {"name": "bash", "arguments": {"command": "true"}}}
    server = serve({"turns": [turn, turn]})
    ids = [
        c["id"]
        for _ in range(2)
        for d in deltas(stream_chunks(client, server.chat_url))
        for c in d.get("tool_calls", [])
        if "id" in c
    ]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_scripted_usage_and_finish(serve, client) -> None:
    server = serve(
        [
            {
                "steps": [
                    {"text": "cut"},
                    {"finish": "length"},
                    {"usage": {"prompt_tokens": 100, "completion_tokens": 7,
                               "cached_tokens": 40, "cost": 0.25}},
                ]
            }
        ]
    )
    payloads = stream_chunks(client, server.chat_url)
    assert finish_reasons(payloads) == ["length"]
    usage = payloads[-2]["usage"]
    assert usage["prompt_tokens"] == 100
    assert usage["completion_tokens"] == 7
    assert usage["total_tokens"] == 107
    assert usage["prompt_tokens_details"] == {"cached_tokens": 40}
    assert usage["cost"] == 0.25


def test_computed_usage_follows_the_characters(serve, client) -> None:
    server = serve([{"text": "x" * 400}])
    body = dict(CHAT_BODY, messages=[{"role": "user", "content": "y" * 800}])
    usage = stream_chunks(client, server.chat_url, body)[-2]["usage"]
    assert usage["completion_tokens"] == 100
    assert 200 <= usage["prompt_tokens"] <= 220  # the JSON of the messages / 4
    assert "cost" not in usage


def test_no_usage_chunk_unless_the_client_asks(serve, client) -> None:
    server = serve([{"text": "hi"}])
    body = {k: v for k, v in CHAT_BODY.items() if k != "stream_options"}
    payloads = stream_chunks(client, server.chat_url, body)
    assert not any(p != "[DONE]" and "usage" in p for p in payloads)
    assert payloads[-1] == "[DONE]"


def test_error_turn_answers_with_status_headers_and_json_body(serve, client) -> None:
    server = serve(
        [
            {"error": {"status": 429, "headers": {"Retry-After": "3"},
                       "body": {"error": {"message": "slow down"}}}},
            {"error": {"status": 503, "body": "upstream gone"}},
            {"text": "after the errors"},
        ]
    )
    first = client.post(server.chat_url, json=CHAT_BODY)
    assert first.status_code == 429
    assert first.headers["retry-after"] == "3"
    assert first.json() == {"error": {"message": "slow down"}}
    second = client.post(server.chat_url, json=CHAT_BODY)
    assert second.status_code == 503
    assert second.headers["content-type"].startswith("text/plain")
    assert second.text == "upstream gone"
    third = stream_chunks(client, server.chat_url)  # same keep-alive connection goes on
    assert "".join(d.get("content", "") for d in deltas(third)) == "after the errors"
    assert server.accepted_connections == 1


def test_drop_closes_the_connection_after_the_chunks_before_it(serve, client) -> None:
    server = serve([{"steps": [{"text": "partial"}, {"drop": True}, ]}])
    received: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError):
        with client.stream("POST", server.chat_url, json=CHAT_BODY) as response:
            for line in response.iter_lines():
                received.append(line)
    assert any('"content":"partial"' in line for line in received)
    assert not any("[DONE]" in line for line in received)
    assert server.wait_for_closed(timeout=5)


def test_stall_keeps_the_stream_open_until_the_client_leaves(serve, client) -> None:
    server = serve([{"steps": [{"text": "before"}, {"stall": 30}, {"text": "never"}]}])
    with client.stream("POST", server.chat_url, json=CHAT_BODY) as response:
        lines = response.iter_lines()
        assert '"content":""' in next(lines)
        next(lines)  # the blank line ending the event
        assert '"content":"before"' in next(lines)
        assert server.open_streams == 1
        assert server.wait_for_closed(timeout=0.2) is False
    # Leaving the block closed the connection mid-stall: the server notices at once.
    assert server.wait_for_closed(timeout=5)
    assert server.open_streams == 0


def test_short_stall_and_delays_then_the_stream_goes_on(serve, client) -> None:
    server = serve([{"steps": [{"text": "a"}, {"stall": 0.1}, {"delay": 0.1},
                               {"text": "bc", "chunks": 2, "delay": 0.1}]}])
    started = time.monotonic()
    payloads = stream_chunks(client, server.chat_url)
    assert time.monotonic() - started >= 0.3
    assert [d["content"] for d in deltas(payloads)[1:] if "content" in d] == ["a", "b", "c"]


def test_raw_bytes_are_sent_verbatim(serve, client) -> None:
    server = serve([{"steps": [{"text": "ok"}, {"raw": "data: {not json\n\n"}]}])
    with client.stream("POST", server.chat_url, json=CHAT_BODY) as response:
        text = response.read().decode()
    assert "data: {not json\n\n" in text
    assert text.rstrip().endswith("data: [DONE]")


def test_stop_closes_stalled_and_idle_connections_quietly(caplog) -> None:
    server = ScriptedModelServer([{"text": "idle after this"},
                                  {"steps": [{"text": "x"}, {"stall": 30}]}]).start()
    with httpx.Client(timeout=10) as idle, httpx.Client(timeout=10) as busy:
        stream_chunks(idle, server.chat_url)  # leaves a keep-alive connection open
        with busy.stream("POST", server.chat_url, json=CHAT_BODY) as response:
            lines = response.iter_lines()
            next(lines)
            started = time.monotonic()
            server.stop()
            assert time.monotonic() - started < 5  # not the 30 s stall
            with pytest.raises(httpx.RemoteProtocolError):
                list(lines)
    assert server.open_streams == 0
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelname == "ERROR"]


# ---------------------------------------------------------------- recording and control


def test_requests_are_recorded_in_order(serve, client) -> None:
    server = serve([{"text": "one"}, {"text": "two"}])
    for n in (1, 2):
        body = dict(CHAT_BODY, messages=[{"role": "user", "content": f"q{n}"}])
        stream_chunks(client, server.chat_url, body)
    recorded = server.requests
    assert [r["messages"][0]["content"] for r in recorded] == ["q1", "q2"]
    recorded.clear()  # a copy: the server's record is untouched
    assert len(server.requests) == 2


def test_wait_for_requests_wakes_when_a_request_arrives(serve) -> None:
    server = serve([{"text": "hi"}])
    worker = threading.Thread(
        target=lambda: httpx.post(server.chat_url, json=CHAT_BODY, timeout=10), daemon=True
    )
    worker.start()
    recorded = server.wait_for_requests(1, timeout=5)
    worker.join(timeout=5)
    assert recorded[0]["messages"] == CHAT_BODY["messages"]


def test_wait_for_requests_times_out_with_a_clear_error(serve) -> None:
    server = serve([{"text": "hi"}])
    with pytest.raises(TimeoutError, match="got 0"):
        server.wait_for_requests(1, timeout=0.05)


def test_an_exhausted_script_fails_loudly(serve, client) -> None:
    server = serve([{"text": "only"}])
    stream_chunks(client, server.chat_url)
    response = client.post(server.chat_url, json=CHAT_BODY)
    assert response.status_code == 500
    assert "exhausted" in response.json()["error"]["message"]
    assert len(server.requests) == 2  # the extra request is still recorded


def test_repeat_last_serves_the_last_turn_again(serve, client) -> None:
    server = serve({"turns": [{"text": "first"}, {"text": "again"}], "on_exhausted": "repeat_last"})
    texts = [
        "".join(d.get("content", "") for d in deltas(stream_chunks(client, server.chat_url)))
        for _ in range(4)
    ]
    assert texts == ["first", "again", "again", "again"]


def test_set_script_replaces_the_remaining_turns(serve, client) -> None:
    server = serve([{"text": "old 1"}, {"text": "old 2"}])
    stream_chunks(client, server.chat_url)
    server.set_script([{"text": "new"}])
    assert server.remaining_turns == 1
    assert "".join(d.get("content", "") for d in deltas(stream_chunks(client, server.chat_url))) == "new"
    with pytest.raises(ScriptError):
        server.set_script([{"txt": "typo"}])
    assert server.remaining_turns == 0  # a bad script leaves the old state alone


def test_control_endpoints(serve, client) -> None:
    server = serve([{"text": "one"}])
    root = server.base_url.removesuffix("/v1")
    assert client.get(f"{root}/healthz").json() == {"status": "ok"}
    stream_chunks(client, server.chat_url)
    assert client.get(f"{root}/_scripted/requests").json() == [CHAT_BODY]
    replaced = client.post(f"{root}/_scripted/script", json=[{"text": "a"}, {"text": "b"}])
    assert replaced.json() == {"remaining_turns": 2}
    bad = client.post(f"{root}/_scripted/script", json=[{"text": 3}])
    assert bad.status_code == 400
    assert "turns[0].text" in bad.json()["error"]["message"]
    assert client.get(f"{root}/nowhere").status_code == 404


def test_bad_completion_requests_are_refused(serve, client) -> None:
    server = serve([{"text": "one"}, {"text": "two"}])
    not_json = client.post(server.chat_url, content=b"{nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 400
    not_streaming = client.post(server.chat_url, json={"model": "m", "messages": []})
    assert not_streaming.status_code == 400
    assert "stream" in not_streaming.json()["error"]["message"]


# ---------------------------------------------------------------- script validation


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("not a script", "cannot read script file"),
        ("{broken", "not valid JSON"),
        (42, "must be an object or a list"),
        ({"turns": {}}, "script.turns: must be a list"),
        ({"turns": [], "on_exhausted": "loop"}, "script.on_exhausted"),
        ({"turns": [], "extra": 1}, "unknown field(s) extra"),
        ([{"steps": []}], "turns[0].steps: must be a non-empty list"),
        ([{"text": "a"}, {"txt": "b"}], "turns[1]: unknown step"),
        ([{"text": "a", "thinking": "b"}], "exactly one kind"),
        ([{"text": 5}], "turns[0].text: must be a string"),
        ([{"steps": [{"text": "a", "chunks": 0}]}], "turns[0].steps[0].chunks: must be an integer >= 1"),
        ([{"text": "a", "delay": -1}], "turns[0].delay"),
        ([{"text": "a", "colour": "red"}], "unknown field(s) colour"),
        ([{"thinking": "a", "field": "thoughts"}], "turns[0].field"),
        ([{"tool_call": {"arguments": {}}}], "turns[0].tool_call.name: must be a string"),
        ([{"tool_call": {"name": "x", "arguments": [1]}}], "turns[0].tool_call.arguments"),
        ([{"tool_call": {"name": "x", "id": ""}}], "turns[0].tool_call.id"),
        ([{"usage": {"prompt_tokens": -1}}], "turns[0].usage.prompt_tokens"),
        ([{"usage": {"prompt_tokens": 5, "cached_tokens": 6}}], "cached_tokens: must not exceed"),
        ([{"usage": {"cost": "free"}}], "turns[0].usage.cost"),
        ([{"finish": "done"}], "turns[0].finish"),
        ([{"error": {"status": 200}}], "turns[0].error.status"),
        ([{"error": {"status": 500, "headers": {"A": 1}}}], "turns[0].error.headers"),
        ([{"steps": [{"text": "a"}, {"error": {"status": 500}}]}], "only delay and stall"),
        ([{"steps": [{"error": {"status": 500}}, {"delay": 1}]}], "must be the last step"),
        ([{"steps": [{"drop": True}, {"text": "a"}]}], "turns[0].steps[1]: steps after a drop"),
        ([{"drop": "yes"}], "turns[0].drop: must be true"),
        ([{"stall": "long"}], "turns[0].stall"),
        ([{"raw": ""}], "turns[0].raw: must not be empty"),
        ([{"steps": [{"finish": "stop"}, {"finish": "length"}]}], "at most one finish"),
        (["text"], "turns[0]: must be an object"),
    ],
)
def test_script_errors_name_where_and_why(script: Any, message: str) -> None:
    with pytest.raises(ScriptError) as error:
        load_script(script)
    assert message in str(error.value)


def test_scripts_load_from_a_file_json_text_and_parsed_json(tmp_path: Path) -> None:
    data = {"turns": [{"text": "hi", "chunks": 2}], "on_exhausted": "repeat_last"}
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data))
    for source in (path, str(path), json.dumps(data), data):
        script = load_script(source)
        assert script.turns[0].steps == (TextStep(text="hi", chunks=2),)
        assert script.on_exhausted == "repeat_last"
    assert load_script([{"delay": 0.5}]).on_exhausted == "error"


def test_the_demo_script_drives_the_contract_tools() -> None:
    script = load_script(DEMO_SCRIPT)
    calls = [turn.tool_calls for turn in script.turns]
    assert [[c.name for c in turn_calls] for turn_calls in calls] == [
        ["read_file"], ["edit_file"], ["bash"], []
    ]
    read, edit, bash = calls[0][0], calls[1][0], calls[2][0]
    assert isinstance(read, ToolCallStep) and read.arguments == {"filepath": "calc.py"}
    assert edit.arguments == {
        "filepath": "calc.py",
        "edits": [{"old_text": "return a - b", "new_text": "return a + b"}],
    }
    assert bash.arguments == {"command": "python3 check.py"}
    calc = (DEVTOOLS / "demo_workspace" / "calc.py").read_text()
    assert calc.count("return a - b") == 1  # the edit's old_text matches exactly once


def test_the_demo_workspace_fails_its_checks_until_fixed(tmp_path: Path) -> None:
    for name in ("calc.py", "check.py"):
        (tmp_path / name).write_text((DEVTOOLS / "demo_workspace" / name).read_text())
    broken = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True)
    assert broken.returncode == 1 and "FAILED: add(2, 3) == 5" in broken.stdout
    calc = tmp_path / "calc.py"
    calc.write_text(calc.read_text().replace("return a - b", "return a + b"))
    fixed = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True)
    assert fixed.returncode == 0 and fixed.stdout.strip() == "all checks passed"


# ---------------------------------------------------------------- CLI


def test_cli_serves_until_sigterm() -> None:
    command = [sys.executable, "-m", "tunacode_lsp.devtools.scripted_model",
               "--script", str(DEMO_SCRIPT), "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            assert line.startswith("scripted model listening on http://127.0.0.1:")
            base_url = line.rsplit(" ", 1)[1]
            assert base_url.endswith("/v1")
            with httpx.Client(timeout=10) as http:
                assert http.get(base_url.removesuffix("/v1") + "/healthz").status_code == 200
                payloads = stream_chunks(http, f"{base_url}/chat/completions")
            assert "".join(d.get("content", "") for d in deltas(payloads)) == "Let me look at calc.py."
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
        finally:
            if process.poll() is None:
                process.kill()


def test_cli_refuses_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"text": "a", "chunks": 0}]')
    result = subprocess.run(
        [sys.executable, "-m", "tunacode_lsp.devtools.scripted_model", "--script", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "turns[0].chunks" in result.stderr
    assert result.stdout == ""


def test_bodies_not_decoded_are_recorded_as_their_length_and_still_answered(client) -> None:
    # The benchmarks' mode (--no-decode-bodies): the answer is the same stream, usage included.
    with ScriptedModelServer([{"text": "x" * 400}], decode_bodies=False) as server:
        body = dict(CHAT_BODY, messages=[{"role": "user", "content": "y" * 800}])
        payloads = stream_chunks(client, server.chat_url, body)
        sent = len(json.dumps(body).encode())  # httpx's json= encoding (compact separators aside)
        (recorded,) = server.requests
    assert "".join(d.get("content") or "" for d in deltas(payloads)) == "x" * 400
    assert finish_reasons(payloads) == ["stop"]
    assert set(recorded) == {"stream", "stream_options", "undecoded_bytes"} and "messages" not in recorded
    assert 0 < recorded["undecoded_bytes"] <= sent
    assert payloads[-2]["usage"]["prompt_tokens"] == recorded["undecoded_bytes"] // 4


def test_the_cli_takes_no_decode_bodies(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tunacode_lsp.devtools.scripted_model", "--script", str(script), "--no-decode-bodies"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip().split()[-1]
        with httpx.Client(timeout=10) as http:
            payloads = stream_chunks(http, url + "/chat/completions")
            recorded = http.get(url.rsplit("/v1", 1)[0] + "/_scripted/requests").json()
        assert deltas(payloads)[-1].get("content") or payloads
        assert list(recorded[0]) == ["stream", "stream_options", "undecoded_bytes"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
