"""The VS Code extension's copy of the wire contract (client-vscode/src/protocol.ts) cannot
drift from the server's (contract/protocol.py): every event type, every field of every event,
every tool status and stop reason the server sends is declared on the TypeScript side."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import attrs
import pytest

from tunacode_lsp.contract import protocol

TS = (Path(__file__).parents[2] / "client-vscode" / "src" / "protocol.ts").read_text()
EVENTS = typing.get_args(protocol.Event)


def _union(name: str) -> set[str]:
    match = re.search(rf"export type {name} =([^;]+);", TS)
    assert match, f"{name} is not declared in protocol.ts"
    return set(re.findall(r'"([^"]+)"', match.group(1)))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _event_block(type_name: str) -> str:
    """The TypeScript object type of the event whose `type` is `type_name`."""

    events = TS[TS.index("export type TunaEvent"):]
    start = events.find(f'type: "{type_name}"')
    assert start >= 0, f"event {type_name!r} is not declared in protocol.ts"
    open_at = events.rfind("{", 0, start)
    depth, end = 0, open_at
    for end in range(open_at, len(events)):
        depth += {"{": 1, "}": -1}.get(events[end], 0)
        if depth == 0:
            break
    return events[open_at:end + 1]


def test_tool_statuses_and_stop_reasons():
    assert _union("ToolStatus") == set(protocol.TOOL_STATUSES)
    assert _union("StopReason") == set(protocol.STOP_REASONS)


@pytest.mark.parametrize("event", EVENTS, ids=lambda cls: cls.__name__)
def test_every_event_and_its_fields_are_declared(event):
    type_name = attrs.fields_dict(event)["type"].default
    block = _event_block(type_name)
    for field in attrs.fields(event):
        if field.name != "type":
            assert re.search(rf"\b{_camel(field.name)}\??:", block), f"{type_name}.{_camel(field.name)} missing in protocol.ts"


def test_tool_kinds_and_end_reasons():
    assert _union("ToolKind") == set(protocol.TOOL_KINDS)
    assert _union("ToolEndReason") == set(protocol.TOOL_END_REASONS)


def _interface(name: str) -> str:
    """The body of `export interface <name> { ... }` in protocol.ts."""

    match = re.search(rf"export interface {name}\b[^{{]*\{{", TS)
    assert match, f"interface {name} is not declared in protocol.ts"
    depth, end = 0, match.end() - 1
    for end in range(match.end() - 1, len(TS)):
        depth += {"{": 1, "}": -1}.get(TS[end], 0)
        if depth == 0:
            break
    return TS[match.end() - 1:end + 1]


# every command result (and what it holds), and the server's tunacode/approve params: Python class -> TS name
RESULTS = {
    protocol.RequestResult: "RequestResult",
    protocol.ToolCallSummary: "ToolCallSummary",
    protocol.SessionInfo: "Session",
    protocol.SessionGetResult: "SessionGetResult",
    protocol.RequestMark: "RequestMark",
    protocol.SessionListResult: "SessionListResult",
    protocol.StatusResult: "StatusResult",
    protocol.ActiveRequest: "ActiveRequest",
    protocol.McpServerInfo: "McpServerInfo",
    protocol.SandboxInfo: "SandboxInfo",
    protocol.BackgroundProcessInfo: "BackgroundProcessInfo",
    protocol.ModelsListResult: "ModelsListResult",
    protocol.ModelInfo: "ModelInfo",
    protocol.ModelCostInfo: "ModelCostInfo",
    protocol.SteerResult: "SteerResult",
    protocol.DetachedRequest: "DetachedRequest",
    protocol.AbortResult: "AbortResult",
    protocol.DeleteResult: "DeleteResult",
    protocol.ChangesResult: "ChangesResult",
    protocol.ChangedFile: "ChangedFile",
    protocol.RewindResult: "RewindResult",
    protocol.Usage: "Usage",
    protocol.ApproveParams: "ApproveParams",
}


@pytest.mark.parametrize("cls", RESULTS, ids=lambda cls: cls.__name__)
def test_every_result_and_the_approve_params_are_declared(cls):
    block = _interface(RESULTS[cls])
    for field in attrs.fields(cls):
        assert re.search(rf"\b{_camel(field.name)}\??:", block), f"{RESULTS[cls]}.{_camel(field.name)} missing in protocol.ts"
