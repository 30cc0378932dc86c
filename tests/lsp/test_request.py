"""One agent request end to end: the real server over stdio, the scripted model over loopback."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import client_capabilities

from tests.conftest import scripted_options

HELLO = {"turns": [{"steps": [{"text": "Hello from the scripted model.", "chunks": 4},
                              {"usage": {"prompt_tokens": 120, "completion_tokens": 8, "cached_tokens": 20, "cost": 0.0042}}]}]}


async def test_hello_request_result_events_and_model_input(lsp, model, workspace):
    (workspace / "AGENTS.md").write_text("Always answer in English.\n")
    model.set_script(HELLO)
    await lsp.start(init_options=scripted_options(model))

    result = await lsp.command("tunacode.request", {"prompt": "Say hello"})

    assert result["stopReason"] == "end_turn"
    assert result["text"] == "Hello from the scripted model."
    assert result["sessionId"] and result["requestId"].startswith("req_")
    assert result["turns"] == 1 and result["toolCalls"] == []
    assert "error" not in result

    events = lsp.events_of(result["requestId"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["sessionId"] == result["sessionId"] for e in events)
    types_seen = [e["type"] for e in events]
    assert types_seen[0] == "request_start" and types_seen[-1] == "request_end"
    assert "turn_end" in types_seen
    assert events[0]["prompt"] == "Say hello" and events[0]["model"] == "openai-compatible:scripted"
    deltas = [e["text"] for e in events if e["type"] == "text_delta"]
    assert deltas and "".join(deltas) == result["text"]  # adjacent deltas may be merged
    assert events[-1]["stopReason"] == "end_turn"

    sent = model.requests
    assert len(sent) == 1
    messages = sent[0]["messages"]
    assert messages[0]["role"] == "system"
    assert str(workspace) in messages[0]["content"] and "Always answer in English." in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": "Say hello"} or messages[-1]["role"] == "user"
    assert "Say hello" in str(messages[-1]["content"])
    assert {t["function"]["name"] for t in sent[0]["tools"]} >= {"read_file", "edit_file", "bash"}


async def test_usage_is_normalised_and_priced(lsp, model):
    model.set_script(HELLO)
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    usage = result["usage"]
    assert usage["inputTokens"] == 100 and usage["cacheReadTokens"] == 20
    assert usage["outputTokens"] == 8 and usage["totalTokens"] == 128
    assert usage["cost"] == 0.0042
    end = lsp.events_of(result["requestId"])[-1]
    assert end["usage"] == usage


async def test_progress_on_client_token(lsp, model):
    model.set_script(HELLO)
    client = await lsp.start(init_options=scripted_options(model))
    client.progress_reports["client-token-1"] = []  # a token the client made itself
    result = await lsp.command("tunacode.request", {"prompt": "first line\nsecond"}, token="client-token-1")
    reports = client.progress_reports["client-token-1"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].title == "TunaCode" and reports[0].message == "first line" and reports[0].cancellable
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == result["stopReason"]


async def test_progress_on_server_created_token(lsp, model):
    model.set_script(HELLO)
    client = await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hello"})
    token = f"tunacode/{result['requestId']}"
    reports = client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "end_turn"


async def test_no_progress_for_a_client_without_support(lsp, model):
    model.set_script(HELLO)
    caps = types.ClientCapabilities()  # no window.workDoneProgress
    client = await lsp.start(init_options=scripted_options(model), capabilities=caps)
    result = await lsp.command("tunacode.request", {"prompt": "hello"})
    assert result["stopReason"] == "end_turn"
    assert client.progress_reports == {}


async def test_unusable_model_fails_at_once_naming_the_variable(lsp, model):
    await lsp.start(init_options={"model": "openai:gpt-4.1"})
    try:
        await lsp.command("tunacode.request", {"prompt": "hi"})
    except Exception as exc:  # pygls raises JsonRpcException subclasses
        assert getattr(exc, "code", None) == -32003
        assert "OPENAI_API_KEY" in str(exc)
    else:
        raise AssertionError("expected error -32003")
    assert model.requests == []


async def test_unknown_provider_and_missing_base_url(lsp, model):
    await lsp.start(init_options={"approval": "auto"})
    for spec, needle in (("nosuch:model", "unknown provider"), ("openai-compatible:qwen", "baseUrl")):
        try:
            await lsp.command("tunacode.request", {"prompt": "hi", "model": spec})
        except Exception as exc:
            assert getattr(exc, "code", None) == -32003 and needle in str(exc)
        else:
            raise AssertionError(spec)


async def test_bad_initialization_option_warns_and_server_still_works(lsp, model):
    model.set_script(HELLO)
    client = await lsp.start(init_options=scripted_options(model, maxTurns="many", approval="sometimes"))
    await lsp.wait_for(lambda: len(client.messages) >= 2)
    texts = [m.message for m in client.messages]
    assert any("tunacode.maxTurns" in t for t in texts) and any("tunacode.approval" in t for t in texts)
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn"


async def test_capabilities_advertise_every_command(lsp, model):
    await lsp.start(init_options=scripted_options(model))
    caps = lsp.initialize_result.capabilities
    commands = set(caps.execute_command_provider.commands)
    assert commands == {
        "tunacode.request", "tunacode.abort", "tunacode.status", "tunacode.models.list",
        "tunacode.session.new", "tunacode.session.list", "tunacode.session.get", "tunacode.session.delete",
        "tunacode.session.export", "tunacode.session.import", "tunacode.session.fork", "tunacode.session.compact",
        "tunacode.commands.list", "tunacode.settings.consent",
        "tunacode.changes", "tunacode.session.rewind", "tunacode.steer", "tunacode.request.result",
        "tunacode.session.allows",
    }
    assert caps.experimental == {"tunacode": {"protocolVersion": 3}}
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert lsp.initialize_result.server_info.name == "tunacode-lsp"


async def test_status_and_models_list(lsp, model, home):
    await lsp.start(init_options=scripted_options(model))
    status = await lsp.command("tunacode.status")
    assert status["protocolVersion"] == 3 and status["activeRequests"] == []
    assert status["sessionStore"] == str(home / "sessions.sqlite3")
    models = await lsp.command("tunacode.models.list")
    assert models["default"] == "openai-compatible:scripted"
    ids = {m["id"] for m in models["models"]}
    assert "openai:gpt-4.1" in ids
    assert all(m["configured"] is False for m in models["models"] if m["provider"] == "openai")


async def test_bad_params_are_invalid_params_naming_the_field(lsp, model):
    await lsp.start(init_options=scripted_options(model))
    for args, field in (({}, "params.prompt"), ({"prompt": 3}, "params.prompt"), ({"prompt": "x", "maxTurns": "2"}, "params.maxTurns")):
        try:
            await lsp.command("tunacode.request", args)
        except Exception as exc:
            assert getattr(exc, "code", None) == -32602, exc
            assert field in str(exc)
        else:
            raise AssertionError(args)
    assert (await lsp.command("tunacode.status"))["activeRequests"] == []


async def test_settings_from_workspace_configuration(lsp, model):
    model.set_script(HELLO)
    # initializationOptions name no model; the client's configuration does
    await lsp.start(init_options={"approval": "auto"}, configuration=scripted_options(model),
                    capabilities=client_capabilities("visual-studio-code"))
    models = await lsp.command("tunacode.models.list")
    assert models["default"] == "openai-compatible:scripted"


async def test_a_cleared_setting_is_unset_not_the_initialize_value(lsp, model):
    # The client started with a model, then the user cleared it: workspace/configuration
    # answers null, and the server falls back to its default, not the start value.
    cleared = {**scripted_options(model), "model": None}
    await lsp.start(init_options=scripted_options(model), configuration=cleared,
                    capabilities=client_capabilities("visual-studio-code"))
    models = await lsp.command("tunacode.models.list")
    assert models["default"] == "openai:gpt-4.1"


async def test_a_burst_of_deltas_is_merged_and_a_slow_stream_stays_live(lsp, model):
    model.set_script([
        {"steps": [{"text": "x" * 200, "chunks": 200}]},
        {"steps": [{"text": "abcdefgh", "chunks": 8, "delay": 0.05}]},
    ])
    await lsp.start(init_options=scripted_options(model))
    burst = await lsp.command("tunacode.request", {"prompt": "burst"})
    deltas = [e["text"] for e in lsp.events_of(burst["requestId"]) if e["type"] == "text_delta"]
    assert "".join(deltas) == "x" * 200 and len(deltas) < 50
    slow = await lsp.command("tunacode.request", {"prompt": "slow", "sessionId": burst["sessionId"]})
    deltas = [e["text"] for e in lsp.events_of(slow["requestId"]) if e["type"] == "text_delta"]
    assert "".join(deltas) == "abcdefgh" and len(deltas) >= 4
