"""SessionDocument export/import, the message codec and the store location helpers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from tinyagent.agent_types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)

from tests.unit.store.session_samples import assistant_calls, conversation, tool_result, user
from tunacode_lsp.core.codec import dump_message, load_message
from tunacode_lsp.core.history import violations
from tunacode_lsp.store.document import DOCUMENT_KEYS, OPTIONAL_DOCUMENT_KEYS
from tunacode_lsp.store.errors import DocumentError, MessageFormatError
from tunacode_lsp.store.locations import default_store_path, project_id_for
from tunacode_lsp.store.session_store import SessionStore


def stored_session(store: SessionStore, cwd: Path) -> str:
    record = store.create_session(cwd=str(cwd), model="openrouter:moonshotai/kimi-k2.5")
    store.append_messages(
        record.session_id,
        conversation(),
        usage_delta={"input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "cost": 0.002},
        thoughts="plan",
    )
    return record.session_id


def test_export_has_exactly_the_document_keys(store: SessionStore, tmp_path: Path) -> None:
    session_id = stored_session(store, tmp_path)
    document = store.export_document(session_id)
    record = store.get_session(session_id)
    assert record is not None
    assert list(document) == list(DOCUMENT_KEYS) + list(OPTIONAL_DOCUMENT_KEYS)
    assert document["plan"] == [] and document["compaction"] is None
    assert set(DOCUMENT_KEYS) == {
        "version", "session_id", "project_id", "created_at", "last_modified", "working_directory",
        "current_model", "total_tokens", "session_total_usage", "thoughts", "messages",
    }  # fmt: skip
    assert document["version"] == 1
    assert document["session_id"] == session_id
    assert document["working_directory"] == record.cwd
    assert document["current_model"] == "openrouter:moonshotai/kimi-k2.5"
    assert document["total_tokens"] == 120
    assert document["session_total_usage"] == record.usage.as_store_dict()
    assert document["thoughts"] == "plan"
    assert document["messages"] == conversation()
    orjson.dumps(document)  # plain JSON


def test_round_trip_keeps_messages_and_tool_call_ids(store: SessionStore, tmp_path: Path) -> None:
    session_id = stored_session(store, tmp_path)
    document = orjson.loads(orjson.dumps(store.export_document(session_id)))
    imported = store.import_document(document)
    assert imported.session_id != session_id  # the id was taken
    again = store.export_document(imported.session_id)
    assert again["messages"] == document["messages"]
    ids = [b["id"] for m in again["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_call"]
    assert ids == ["call_1", "call_2"]
    for key in ("project_id", "created_at", "last_modified", "working_directory", "current_model",
                "total_tokens", "session_total_usage", "thoughts"):  # fmt: skip
        assert again[key] == document[key], key
    assert imported.title == "Fix the bug in a.py"
    assert imported.message_count == len(conversation())


def test_import_into_another_store_keeps_the_id(store: SessionStore, tmp_path: Path) -> None:
    session_id = stored_session(store, tmp_path)
    document = store.export_document(session_id)
    with SessionStore(tmp_path / "other" / "sessions.sqlite3") as other:
        imported = other.import_document(document)
        assert imported.session_id == session_id
        assert other.load_messages(session_id) == document["messages"]


def test_import_of_a_crashed_session_makes_its_history_valid(store: SessionStore) -> None:
    document = valid_document()
    document["messages"] = [user("go"), assistant_calls("c1"), user("again"), tool_result("c1")]
    imported = store.import_document(document)
    messages = store.load_messages(imported.session_id)
    assert violations(messages) == []
    assert [m["role"] for m in messages] == ["user", "assistant", "tool_result", "user"]


def valid_document() -> dict[str, Any]:
    return {
        "version": 1,
        "session_id": "doc-1",
        "project_id": "abcdef0123456789",
        "created_at": "2026-11-22T02:31:50.123Z",
        "last_modified": "2026-11-22T03:00:00.000Z",
        "working_directory": "/work/project",
        "current_model": "openai:gpt-4.1",
        "total_tokens": 7,
        "session_total_usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7, "cost": 0.0},
        "thoughts": "",
        "messages": [user("hello")],
    }


def test_a_valid_document_imports_as_is(store: SessionStore) -> None:
    record = store.import_document(valid_document())
    assert record.session_id == "doc-1"
    assert record.created_at == "2026-11-22T02:31:50.123Z"
    assert record.modified_at == "2026-11-22T03:00:00.000Z"
    assert record.usage.input_tokens == 5
    assert record.usage.cache_read_tokens == 0


def broken(path: str, value: object) -> dict[str, Any]:
    document = valid_document()
    if value is KeyError:
        del document[path]
        return document
    target: Any = document
    *parents, last = path.split("/")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[int(last) if last.isdigit() else last] = value
    return document


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([1, 2], "document: expected an object, got list"),
        (broken("messages", KeyError), "document: missing key(s) messages"),
        (broken("version", 2), "version: unsupported version 2"),
        (broken("version", True), "version: unsupported version True"),
        (broken("total_tokens", "7"), "total_tokens: expected a non-negative integer"),
        (broken("session_total_usage", []), "session_total_usage: expected an object"),
        (broken("session_total_usage/bogus", 1), "session_total_usage.bogus: unknown usage key"),
        (broken("session_total_usage/cost", -1), "session_total_usage.cost: expected a non-negative number"),
        (broken("created_at", "yesterday"), "created_at: not an ISO 8601 time"),
        (broken("working_directory", ""), "working_directory: must not be empty"),
        (broken("current_model", None), "current_model: expected a string, got NoneType"),
        (broken("messages", {}), "messages: expected a list, got dict"),
        (broken("messages/0", "hi"), "messages[0]: expected an object, got str"),
        (broken("messages/0/role", "system"), "messages[0].role: unknown role 'system'"),
        (broken("messages/0/content", [{"type": "tool_call"}]), "messages[0].content[0].type: 'tool_call' blocks"),
        (broken("messages/0/content/0/text", 3), "messages[0].content[0].text: Input should be a valid string"),
    ],
)
def test_a_bad_document_is_refused_naming_the_field(store: SessionStore, document: object, message: str) -> None:
    with pytest.raises(DocumentError) as caught:
        store.import_document(document)
    assert str(caught.value).startswith(message)
    assert store.list_sessions() == []


def test_import_without_a_session_id_gets_one(store: SessionStore) -> None:
    document = valid_document()
    document["session_id"] = ""
    assert store.import_document(document).session_id


# ---------------------------------------------------------------- codec


def test_codec_round_trips_real_tinyagent_messages() -> None:
    messages = [
        UserMessage(content=[TextContent(text="hi")], timestamp=1),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="hmm"),
                TextContent(text="reading"),
                ToolCallContent(id="c1", name="read_file", arguments={"filepath": "a.py"}),
            ],
            stop_reason="tool_calls",
            usage={"input": 1, "output": 2, "cache_read": 0, "cache_write": 0, "total_tokens": 3},
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read_file", content=[TextContent(text="x")]),
    ]
    for message in messages:
        dumped = dump_message(message)
        assert dumped == message.model_dump(exclude_none=True)
        loaded = load_message(dumped)
        assert type(loaded) is type(message)
        assert loaded.model_dump(exclude_none=True) == dumped


def test_dump_message_copies_and_validates_dicts() -> None:
    original = tool_result("c1")
    dumped = dump_message(original)
    assert dumped == original and dumped is not original
    with pytest.raises(MessageFormatError, match="role"):
        dump_message({"role": "bot"})
    with pytest.raises(MessageFormatError, match="not a tinyagent message"):
        dump_message(object())  # type: ignore[arg-type]
    with pytest.raises(MessageFormatError, match="not JSON-serialisable"):
        dump_message({"role": "user", "content": [], "extra": {1, 2}})


def test_load_message_names_the_bad_field() -> None:
    with pytest.raises(MessageFormatError) as caught:
        load_message({"role": "assistant", "content": [{"type": "tool_call", "id": "c", "arguments": [1]}]})
    assert caught.value.where == "content[0].arguments"
    assert "dictionary" in caught.value.reason


def test_dumps_are_not_mutated_by_loading() -> None:
    original = assistant_calls("c1")
    before = copy.deepcopy(original)
    load_message(original)
    assert original == before


# ---------------------------------------------------------------- location


def test_default_store_path_order() -> None:
    assert default_store_path({"TUNACODE_HOME": "/t", "XDG_DATA_HOME": "/x", "HOME": "/h"}) == Path(
        "/t/sessions.sqlite3"
    )
    assert default_store_path({"XDG_DATA_HOME": "/x", "HOME": "/h"}) == Path("/x/tunacode-lsp/sessions.sqlite3")
    assert default_store_path({"HOME": "/h"}) == Path("/h/.local/share/tunacode-lsp/sessions.sqlite3")
    assert default_store_path({"TUNACODE_HOME": "", "XDG_DATA_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.local/share/tunacode-lsp/sessions.sqlite3"
    )


def test_project_id_is_a_stable_hash_of_the_resolved_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert project_id_for(tmp_path / "a") == project_id_for(str(tmp_path / "link"))
    assert project_id_for(tmp_path / "a") == project_id_for(tmp_path / "a" / ".." / "a")
    assert project_id_for(tmp_path / "a") != project_id_for(tmp_path)
    assert len(project_id_for(tmp_path)) == 16
    int(project_id_for(tmp_path), 16)


def test_plan_and_compaction_round_trip_through_export_and_import(store: SessionStore, tmp_path: Path) -> None:
    session_id = stored_session(store, tmp_path)
    plan = [{"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"},
            {"content": "Fix bug", "status": "pending", "activeForm": "Fixing bug"}]
    store.set_plan(session_id, plan)
    count = store.get_session(session_id).message_count  # type: ignore[union-attr]
    assert store.set_compaction(session_id, {"summary": "we did X", "firstKept": 1}, expect_count=count + 1) is False
    assert store.set_compaction(session_id, {"summary": "we did X", "firstKept": 1}, expect_count=count) is True
    document = store.export_document(session_id)
    assert document["plan"] == plan and document["compaction"] == {"summary": "we did X", "firstKept": 1}
    copy = store.import_document(document)
    assert store.get_plan(copy.session_id) == plan
    assert store.get_compaction(copy.session_id) == {"summary": "we did X", "firstKept": 1}
    bad = {**document, "plan": [{"content": "x", "status": "doing", "activeForm": "x"}]}
    with pytest.raises(DocumentError, match=r"plan\[0\]\.status"):
        store.import_document(bad)


@pytest.mark.parametrize("bad", [None, 0, "", False, {}, "x"])
def test_an_optional_plan_of_the_wrong_type_is_refused(store: SessionStore, tmp_path: Path, bad: object) -> None:
    document = store.export_document(stored_session(store, tmp_path))
    with pytest.raises(DocumentError, match="plan"):
        store.import_document({**document, "plan": bad})
    with pytest.raises(DocumentError, match="compaction"):
        store.import_document({**document, "compaction": bad if bad is not None else []})
