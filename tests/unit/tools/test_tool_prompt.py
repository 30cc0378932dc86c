"""The system prompt and the tool descriptions tell the truth about the tools (issue 34): every
tool the prompt names exists, every tool is named in it, every tool and field is described,
and the claims the issue found wrong stay fixed (grep's regex syntax, the diagnostics tool,
the LINE:HASH format)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.system_prompt import build_system_prompt
from tunacode_lsp.tools import ToolSettings, build_tools
from tunacode_lsp.tools.background import BackgroundProcesses

NAMED = re.compile(r"^- `([a-z_]+) \{", re.MULTILINE)


async def _source(paths: list[Path]) -> dict[Path, list[dict[str, Any]]]:
    return {}


def _fields(schema: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, field in schema.get("properties", {}).items():
        found.append((f"{where}.{name}", field))
        if field.get("type") == "object":
            found += _fields(field, f"{where}.{name}")
        if isinstance(field.get("items"), dict) and field["items"].get("type") == "object":
            found += _fields(field["items"], f"{where}.{name}[]")
    return found


def test_every_tool_named_exists_and_every_tool_is_named_and_described(tmp_path: Path) -> None:
    prompt = build_system_prompt(tmp_path)
    named = set(NAMED.findall(prompt))
    settings = ToolSettings(background=BackgroundProcesses().for_session("s"))  # as the server builds them
    tools = {tool.name: tool for tool in build_tools(tmp_path, settings, diagnostics=_source)}
    assert named == set(tools), (named ^ set(tools))
    for name, tool in tools.items():
        assert len(tool.description) > 40, name
        for where, field in _fields(tool.parameters, name):
            assert field.get("description"), f"{where} has no description"


def test_the_claims_the_issue_found_wrong(tmp_path: Path) -> None:
    prompt = " ".join(build_system_prompt(tmp_path).split())
    assert "Python regular expression" not in prompt
    assert "Rust regular expression" in prompt
    assert "`diagnostics {filepaths}`" in prompt
    assert "`LINE:HASH|content`, e.g. `12:a3f0| return a + b`" in prompt  # what read_file prints
    tools = {tool.name: tool for tool in build_tools(tmp_path)}
    assert "LINE:HASH|content" in tools["read_file"].description
    assert "Rust regular expression" in tools["grep"].description
