"""Bad command input, generated with hypothesis and sent to one real server for the module.

Every command gets params with a field of the wrong type, a required field missing, a value
out of range, unknown ids and huge strings. Each is answered with InvalidParams (-32602)
naming the field, or the contract's own code (-32001 unknown session); the store's rows are
the same before and after, and the server still answers `tunacode.status`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from tests.conftest import scripted_options
from tests.lsp.fault_checks import refusal, store_rows
from tests.lsp.harness import LspHarness
from tunacode_lsp.contract.protocol import MAX_PROMPT_CHARS
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.asyncio(loop_scope="module")

INVALID_PARAMS = -32602
UNKNOWN_SESSION = -32001
UNANSWERED_WAIT = 2.0  # seconds a request that should be refused at once may take
EXAMPLES = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# command -> {field: (kind, required)}; kind is "str", "int" (> 0), "count" (>= 0) or "object"
FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "tunacode.request": {"prompt": ("str", True), "sessionId": ("str", False), "model": ("str", False), "maxTurns": ("int", False)},
    "tunacode.abort": {"sessionId": ("str", False), "requestId": ("str", False)},
    "tunacode.session.new": {"cwd": ("str", False), "model": ("str", False), "title": ("str", False)},
    "tunacode.session.list": {"cwd": ("str", False), "limit": ("int", False)},
    "tunacode.session.get": {"sessionId": ("str", True)},
    "tunacode.session.delete": {"sessionId": ("str", True)},
    "tunacode.session.export": {"sessionId": ("str", True)},
    "tunacode.session.import": {"document": ("object", True)},
    "tunacode.session.fork": {"sessionId": ("str", True), "messageCount": ("count", False)},
    "tunacode.models.list": {},
    "tunacode.status": {},
}
# fields whose value must not be blank text
NON_BLANK = {("tunacode.request", "prompt"), ("tunacode.request", "sessionId"), ("tunacode.request", "model"),
             ("tunacode.session.new", "model"), ("tunacode.session.get", "sessionId"),
             ("tunacode.session.delete", "sessionId"), ("tunacode.session.export", "sessionId"),
             ("tunacode.session.fork", "sessionId")}

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6
)
EXTRA_KEYS = st.dictionaries(
    st.text(min_size=1, max_size=10).filter(lambda k: k not in {f for fs in FIELDS.values() for f in fs}),
    JSON_VALUES,
    max_size=3,
)
SOME_TEXT = st.text(min_size=1, max_size=60).filter(str.strip)


def _fits(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind in ("int", "count"):
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, dict)


def wrong_values(kind: str, required: bool) -> st.SearchStrategy[Any]:
    """JSON values that are not of `kind` (None too when the field is required)."""

    return JSON_VALUES.filter(lambda v: not _fits(kind, v) and (required or v is not None))


def send_untyped(client: Any, method: str, params: dict[str, Any]) -> asyncio.Future:
    """Send a request whose params lsprotocol's types cannot hold (pygls's client would refuse)."""

    msg_id = f"untyped-{uuid.uuid4()}"
    future: concurrent.futures.Future = concurrent.futures.Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return asyncio.wrap_future(future)


class Server:
    """The module's one server, with a session that has messages and one exported document."""

    def __init__(self, harness: LspHarness, session_id: str, document: dict[str, Any]) -> None:
        self.harness = harness
        self.session_id = session_id
        self.document = document

    def valid_params(self, command: str) -> dict[str, Any]:
        return {
            "tunacode.request": {"prompt": "hi", "sessionId": self.session_id},
            "tunacode.abort": {"sessionId": self.session_id},
            "tunacode.session.get": {"sessionId": self.session_id},
            "tunacode.session.delete": {"sessionId": self.session_id},
            "tunacode.session.export": {"sessionId": self.session_id},
            "tunacode.session.import": {"document": self.document},
            "tunacode.session.fork": {"sessionId": self.session_id, "messageCount": 1},
        }.get(command, {})

    async def refused(self, command: str, arguments: Any) -> tuple[int | None, str]:
        """Send a command the server must refuse; check nothing changed and status still works."""

        home = self.harness.home
        before = store_rows(home)
        answer = self.harness.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=arguments)
        )
        code, message = await refusal(answer)
        assert store_rows(home) == before, f"{command} {arguments!r:.200} changed the store"
        await self.status_works()
        return code, message

    async def status_works(self) -> None:
        status = await self.harness.command("tunacode.status")
        assert status["activeRequests"] == [] and status["protocolVersion"] == 3


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tmp_path_factory) -> AsyncIterator[Server]:
    root = tmp_path_factory.mktemp("bad_input")
    (root / "workspace").mkdir()
    (root / "home").mkdir()
    model = ScriptedModelServer({"turns": [{"text": "Hello."}], "on_exhausted": "repeat_last"}).start()
    harness = LspHarness(root / "workspace", root / "home")
    try:
        await harness.start(init_options=scripted_options(model))
        result = await harness.command("tunacode.request", {"prompt": "hello"})
        document = await harness.command("tunacode.session.export", {"sessionId": result["sessionId"]})
        yield Server(harness, result["sessionId"], document)
    finally:
        await harness.stop()
        model.stop()


# ---------------------------------------------------------------- generated params


@st.composite
def mistyped(draw, command: str) -> tuple[str, Any]:
    """(field, value): one field of `command` with a value of the wrong type or range."""

    field = draw(st.sampled_from(sorted(FIELDS[command])))
    kind, required = FIELDS[command][field]
    candidates = [wrong_values(kind, required)]
    if kind == "int":
        candidates.append(st.integers(max_value=0))
    if kind == "count":
        candidates.append(st.integers(max_value=-1))
    if (command, field) in NON_BLANK:
        candidates.append(st.text(alphabet=" \t\n", max_size=5))
    return field, draw(st.one_of(candidates))


COMMANDS_WITH_FIELDS = sorted(c for c, fields in FIELDS.items() if fields)


@pytest.mark.parametrize("command", COMMANDS_WITH_FIELDS)
@EXAMPLES
@given(data=st.data())
async def test_a_mistyped_field_is_invalid_params_naming_it(server, command, data):
    field, value = data.draw(mistyped(command))
    params = {**server.valid_params(command), **data.draw(EXTRA_KEYS), field: value}
    code, message = await server.refused(command, [params])
    assert code == INVALID_PARAMS, message
    assert f"params.{field}" in message, message


@pytest.mark.parametrize(
    "command", sorted(c for c, fields in FIELDS.items() if any(req for _, req in fields.values()))
)
@settings(max_examples=10, deadline=None)
@given(extra=EXTRA_KEYS)
async def test_a_missing_required_field_is_invalid_params_naming_it(server, command, extra):
    required = [f for f, (_, req) in FIELDS[command].items() if req]
    params = {k: v for k, v in server.valid_params(command).items() if k not in required}
    code, message = await server.refused(command, [{**extra, **params}])
    assert code == INVALID_PARAMS and all(f"params.{f}" in message for f in required), message


async def test_abort_needs_a_session_or_a_request_id(server):
    code, message = await server.refused("tunacode.abort", [{"sessionid": "x", "request_id": "y"}])
    assert code == INVALID_PARAMS and "params.sessionId or params.requestId" in message


@EXAMPLES
@given(session_id=SOME_TEXT, command=st.sampled_from(
    ["tunacode.request", "tunacode.session.get", "tunacode.session.export", "tunacode.session.fork"]))
async def test_an_unknown_session_id_is_unknown_session(server, session_id, command):
    params = {"sessionId": session_id, **({"prompt": "hi"} if command == "tunacode.request" else {})}
    code, message = await server.refused(command, [params])
    assert code == UNKNOWN_SESSION and "session" in message, message


@settings(max_examples=25, deadline=None)
@given(some_id=SOME_TEXT)
async def test_unknown_ids_delete_and_abort_nothing(server, some_id):
    before = store_rows(server.harness.home)
    assert await server.harness.command("tunacode.session.delete", {"sessionId": some_id}) == {"deleted": False}
    assert await server.harness.command("tunacode.abort", {"sessionId": some_id}) == {"aborted": 0}
    assert await server.harness.command("tunacode.abort", {"requestId": some_id}) == {"aborted": 0}
    assert store_rows(server.harness.home) == before


@st.composite
def broken_documents(draw, document: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(key, document): an exported document with one key missing or of the wrong type."""

    key = draw(st.sampled_from(sorted(document)))
    broken = dict(document)
    if draw(st.booleans()) and key not in ("plan", "compaction", "request_ends"):  # those are optional
        del broken[key]
    else:
        original = document[key]
        broken[key] = draw(JSON_VALUES.filter(lambda v: type(v) is not type(original)))
    return key, broken


@EXAMPLES
@given(data=st.data())
async def test_a_broken_document_is_invalid_params_naming_the_key(server, data):
    key, document = data.draw(broken_documents(server.document))
    code, message = await server.refused("tunacode.session.import", [{"document": document}])
    assert code == INVALID_PARAMS and "params.document" in message and key in message, message


# ---------------------------------------------------------------- huge strings

HUGE = 2 * MAX_PROMPT_CHARS


async def test_a_prompt_over_the_limit_is_invalid_params(server):
    code, message = await server.refused("tunacode.request", [{"prompt": "x" * (MAX_PROMPT_CHARS + 1), "sessionId": server.session_id}])
    assert code == INVALID_PARAMS and "params.prompt" in message and len(message) < 1_000


@pytest.mark.parametrize("command", ["tunacode.request", "tunacode.session.get", "tunacode.session.export", "tunacode.session.fork"])
async def test_a_huge_session_id_is_unknown_session_with_a_short_message(server, command):
    params = {"sessionId": "s" * HUGE, **({"prompt": "hi"} if command == "tunacode.request" else {})}
    code, message = await server.refused(command, [params])
    assert code == UNKNOWN_SESSION and len(message) < 1_000, (code, message[:300])


async def test_huge_strings_in_other_fields_are_refused_or_harmless(server):
    code, message = await server.refused("tunacode.request", [{"prompt": "hi", "model": "m" * HUGE}])
    assert code in (INVALID_PARAMS, -32003) and "m" * 2_000 not in message, message[:300]
    code, message = await server.refused("tunacode.session.import", [{"document": {**server.document, "version": "v" * HUGE}}])
    assert code == INVALID_PARAMS and "params.document" in message and len(message) < 1_000
    assert await server.harness.command("tunacode.abort", {"requestId": "r" * HUGE}) == {"aborted": 0}
    await server.status_works()


NUL_TEXT = st.tuples(st.text(max_size=20), st.text(max_size=20)).map(lambda parts: parts[0] + "\0" + parts[1])
LONG_PATH = st.integers(4_097, 20_000).map(lambda n: "/" + "d" * n)


@EXAMPLES
@given(cwd=NUL_TEXT | LONG_PATH, command=st.sampled_from(["tunacode.session.new", "tunacode.session.list"]))
async def test_a_path_no_os_could_open_is_invalid_params(server, cwd, command):
    code, message = await server.refused(command, [{"cwd": cwd}])
    assert code == INVALID_PARAMS and "params.cwd" in message and len(message) < 1_000, message


async def test_a_title_over_the_limit_is_invalid_params(server):
    code, message = await server.refused("tunacode.session.new", [{"title": "t" * 1_001}])
    assert code == INVALID_PARAMS and "params.title" in message


@settings(max_examples=20, deadline=None)
@given(limit=st.integers(min_value=2**31, max_value=2**200))
async def test_a_huge_limit_lists_everything(server, limit):
    listed = await server.harness.command("tunacode.session.list", {"limit": limit})
    every = await server.harness.command("tunacode.session.list", {})
    assert listed == every and server.session_id in [s["sessionId"] for s in listed["sessions"]]


@pytest.mark.parametrize(
    ("command", "params", "field"),
    [
        ("tunacode.session.new", {"cwd": "/tmp/a\ud800"}, "cwd"),
        ("tunacode.session.get", {"sessionId": "\ud800"}, "sessionId"),
        ("tunacode.session.new", {"title": "a\udc80"}, "title"),
        ("tunacode.request", {"prompt": "x", "model": "openai-compatible:\ud800"}, "model"),
    ],
    ids=["new-cwd", "get-sessionId", "new-title", "request-model"],
)
async def test_a_lone_surrogate_is_invalid_params(server, command, params, field):
    code, message = await server.refused(command, [params])
    assert code == INVALID_PARAMS and f"params.{field}" in message, message


# ---------------------------------------------------------------- the argument list itself


@pytest.mark.parametrize("command", sorted(FIELDS))
@pytest.mark.parametrize("arguments", [[5], ["text"], [None], [[{}]], [{}, {}], [True]], ids=repr)
async def test_an_argument_that_is_not_one_object_is_invalid_params(server, command, arguments):
    code, message = await server.refused(command, arguments)
    assert code == INVALID_PARAMS, message
    assert "one argument" in message or "JSON object" in message, message


@pytest.mark.parametrize("arguments", [None, []], ids=repr)
async def test_no_arguments_is_invalid_params_for_a_command_that_needs_some(server, arguments):
    code, message = await server.refused("tunacode.request", arguments)
    assert code == INVALID_PARAMS and ("params.prompt" in message or "one argument" in message), message


async def test_a_missing_argument_list_means_empty_params(server):
    status = await server.harness.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="tunacode.status", arguments=None)
    )
    assert status["protocolVersion"] == 3


@pytest.mark.parametrize(
    "arguments",
    ["text", {"prompt": "hi"}, 5, True],
    ids=repr,
)
async def test_arguments_that_are_not_a_list_are_refused(server, arguments):
    answer = send_untyped(server.harness.client, types.WORKSPACE_EXECUTE_COMMAND, {"command": "tunacode.request", "arguments": arguments})
    try:
        code, message = await refusal(asyncio.wait_for(asyncio.shield(answer), UNANSWERED_WAIT))
    finally:
        answer.cancel()
    await server.status_works()
    assert code == INVALID_PARAMS, message


@settings(max_examples=20, deadline=None)
@given(name=st.text(max_size=40).filter(lambda n: n not in FIELDS))
async def test_an_unknown_command_is_refused_naming_it(server, name):
    code, message = await server.refused(name, [{}])
    assert code == INVALID_PARAMS and "unknown command" in message, message
