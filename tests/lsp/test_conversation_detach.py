"""Detached requests over the real server, with a client that gives up on any request after
10 s (as eglot does): `tunacode.request {detach: true}` answers at once, the end comes as
`request_end` and the progress end, `tunacode.request.result` gives the RequestResult."""

from __future__ import annotations

import json

from tests.conftest import scripted_options
from tests.lsp.raw_wire_client import NO_ANSWER, RawClient

CLIENT_TIMEOUT = 10.0  # eglot-execute-command's


def _event(request_id: str, type_: str):
    return lambda m: m.get("method") == "tunacode/event" and m["params"].get("requestId") == request_id and m["params"]["type"] == type_


async def test_detached_request_answers_at_once_and_its_result_waits(home, workspace, model):
    model.set_script([
        {"steps": [{"tool_call": {"name": "write_file", "arguments": {"filepath": "out.txt", "content": "hi\n"}}}]},
        {"text": "Done."},
    ])
    client = await RawClient.start(home, workspace)
    client.answers["window/workDoneProgress/create"] = lambda _params: None
    client.answers["window/showMessageRequest"] = lambda _params: NO_ANSWER  # answered by hand below
    try:
        await client.initialize(workspace, scripted_options(model, approval="ask"), {"window": {"workDoneProgress": True}})
        answer = await client.command("tunacode.request", {"prompt": "write it", "detach": True}, CLIENT_TIMEOUT)
        detached = answer["result"]
        request_id, session_id = detached["requestId"], detached["sessionId"]
        assert set(detached) == {"requestId", "sessionId"}
        # the request waits for the user; the client's own request is long answered
        ask = await client.wait_for(lambda m: m.get("method") == "window/showMessageRequest", CLIENT_TIMEOUT)
        early = await client.command("tunacode.request.result", {"requestId": request_id}, CLIENT_TIMEOUT)
        assert early["error"]["code"] == -32005 and "still running" in early["error"]["message"]
        status = await client.command("tunacode.status", None, CLIENT_TIMEOUT)
        assert [a["requestId"] for a in status["result"]["activeRequests"]] == [request_id]
        client.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"title": "Allow"}})

        end = await client.wait_for(_event(request_id, "request_end"), CLIENT_TIMEOUT)
        assert end["params"]["stopReason"] == "end_turn" and end["params"]["sessionId"] == session_id
        token = f"tunacode/{request_id}"
        await client.wait_for(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
                              and m["params"]["value"]["kind"] == "end", CLIENT_TIMEOUT)
        result = (await client.command("tunacode.request.result", {"requestId": request_id}, CLIENT_TIMEOUT))["result"]
        assert result["requestId"] == request_id and result["sessionId"] == session_id
        assert result["stopReason"] == "end_turn" and result["text"] == "Done." and result["changedFiles"] == ["out.txt"]
        assert (workspace / "out.txt").read_text() == "hi\n"
        again = await client.command("tunacode.request.result", {"requestId": request_id}, CLIENT_TIMEOUT)
        assert again["error"]["code"] == -32602 and "already read" in again["error"]["message"]
    finally:
        await client.close()


async def test_detached_errors_and_a_deleted_session_drops_the_result(home, workspace, model):
    model.set_script([{"text": "One."}, {"steps": [{"text": "Two"}, {"stall": 30}]}])
    client = await RawClient.start(home, workspace)
    try:
        await client.initialize(workspace, scripted_options(model))
        unknown = await client.command("tunacode.request", {"prompt": "x", "sessionId": "nope", "detach": True})
        assert unknown["error"]["code"] == -32001
        bad_model = await client.command("tunacode.request", {"prompt": "x", "model": "nope:nope", "detach": True})
        assert bad_model["error"]["code"] in (-32003, -32602)

        first = (await client.command("tunacode.request", {"prompt": "one", "detach": True}))["result"]
        await client.wait_for(_event(first["requestId"], "request_end"))
        one = await client.command("tunacode.request.result", {"requestId": first["requestId"]})  # then the session is free
        assert one["result"]["text"] == "One."
        second = (await client.command("tunacode.request", {"prompt": "two", "sessionId": first["sessionId"], "detach": True}))["result"]
        busy = await client.command("tunacode.request", {"prompt": "three", "sessionId": first["sessionId"], "detach": True})
        assert busy["error"]["code"] == -32002
        await client.wait_for(_event(second["requestId"], "text_delta"))
        stopped = await client.command("tunacode.abort", {"requestId": second["requestId"]})
        assert stopped["result"] == {"aborted": 1}
        await client.wait_for(_event(second["requestId"], "request_end"))
        for _ in range(200):  # its answer follows request_end within moments: ask until it is idle
            if not (await client.command("tunacode.status"))["result"]["activeRequests"]:
                break
        deleted = await client.command("tunacode.session.delete", {"sessionId": first["sessionId"]})
        assert deleted["result"] == {"deleted": True}
        for request_id in (second["requestId"],):  # kept until the session went
            gone = await client.command("tunacode.request.result", {"requestId": request_id})
            assert gone["error"]["code"] == -32602
    finally:
        await client.close()


def test_kept_results_are_bounded_oldest_dropped():
    from tunacode_lsp.agent.detached import DetachedResults
    from tunacode_lsp.contract.protocol import RequestResult, Usage

    kept = DetachedResults(limit=3)
    for n in range(5):
        kept.started(f"r{n}", "s")
        assert kept.is_running(f"r{n}")
        kept.ended(f"r{n}", RequestResult("s", f"r{n}", "end_turn", "", Usage(), 1, []))
    assert kept.take("r0") is None and kept.take("r1") is None
    assert kept.take("r4") is not None and kept.take("r4") is None


async def test_a_detached_request_uses_the_model_of_the_user_settings_file(home, workspace, model):
    """A plain client that sets nothing (eglot, ALE): the model comes from
    ~/.config/tunacode/settings.json, for the detached check as for the request itself."""

    settings = home / "config/tunacode/settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"model": "openai-compatible:scripted", "baseUrl": model.chat_url}))
    model.set_script([{"text": "From the settings file."}])
    client = await RawClient.start(home, workspace)
    try:
        await client.initialize(workspace, {"approval": "auto"})
        answer = await client.command("tunacode.request", {"prompt": "hi", "detach": True})
        assert "result" in answer, answer
        request_id = answer["result"]["requestId"]
        await client.wait_for(_event(request_id, "request_end"))
        result = (await client.command("tunacode.request.result", {"requestId": request_id}))["result"]
        assert result["text"] == "From the settings file." and result["stopReason"] == "end_turn"
        session = (await client.command("tunacode.session.get", {"sessionId": answer["result"]["sessionId"]}))["result"]
        assert session["session"]["model"] == "openai-compatible:scripted"
    finally:
        await client.close()
