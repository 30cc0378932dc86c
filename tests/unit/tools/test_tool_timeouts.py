"""Every tool call is bounded in time (issue 34): the defaults, the `toolTimeouts` setting,
and a call still running at its bound stopped with an error naming the setting."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.unit.tools.conftest import call
from tunacode_lsp.agent.config import parse_options
from tunacode_lsp.tools import ToolError, ToolSettings, build_tools
from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.timeouts import DEFAULT_TOOL_SECONDS, tool_seconds


async def test_a_call_past_its_bound_is_stopped_with_an_error_naming_the_setting() -> None:
    stopped = asyncio.Event()

    async def run(args: dict[str, Any], call_: ToolCall) -> Any:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return text_result("never")

    tool = make_tool(name="slow", label="Slow", description="d", parameters={"type": "object"}, run=run, seconds=0.2)
    with pytest.raises(ToolError, match=r"slow did not finish within 0.2 s .*tunacode.toolTimeouts.slow"):
        await asyncio.wait_for(call(tool, {}), 5)
    assert stopped.is_set()  # the tool's own cleanup ran


async def test_a_tools_own_timeout_error_is_not_taken_for_the_bound() -> None:
    async def run(args: dict[str, Any], call_: ToolCall) -> Any:
        raise TimeoutError("inner")

    tool = make_tool(name="t", label="T", description="d", parameters={"type": "object"}, run=run, seconds=30)
    with pytest.raises(TimeoutError, match="inner"):
        await call(tool, {})


def test_every_built_in_tool_has_a_default_bound(tmp_path: Path) -> None:
    async def source(paths: list[Path]) -> dict[Path, list[dict[str, Any]]]:
        return {}

    names = {tool.name for tool in build_tools(tmp_path, diagnostics=source)} - {"bash"}
    assert names <= set(DEFAULT_TOOL_SECONDS)
    assert tool_seconds({"grep": 5}, "grep") == 5 and tool_seconds({}, "grep") == DEFAULT_TOOL_SECONDS["grep"]
    assert tool_seconds({"grep": 0}, "grep") == DEFAULT_TOOL_SECONDS["grep"]  # out of range: the default


def test_the_setting_is_checked() -> None:
    options, warnings = parse_options({"toolTimeouts": {"grep": 5, "bash": 30}}, env={})
    assert options.tool_timeouts == {"grep": 5, "bash": 30} and not warnings
    options, warnings = parse_options({"toolTimeouts": {"grep": "soon"}}, env={})
    assert options.tool_timeouts is None and "toolTimeouts" in warnings[0]


async def test_tool_timeouts_bash_is_the_default_command_timeout(tmp_path: Path) -> None:
    tools = {t.name: t for t in build_tools(tmp_path, ToolSettings(tool_timeouts={"bash": 1}))}
    assert "Default 1," in tools["bash"].parameters["properties"]["timeout"]["description"]
    with pytest.raises(ToolError, match="timed out after 1 s"):
        await asyncio.wait_for(call(tools["bash"], {"command": "sleep 20"}), 15)
