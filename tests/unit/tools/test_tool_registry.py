"""build_tools, the schemas the model sees, CHANGING_TOOLS and summarize_args."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tunacode_lsp.tools import (
    CHANGING_TOOLS,
    ToolError,
    ToolSettings,
    build_tools,
    create_bash_tool,
    create_edit_file_tool,
    create_grep_tool,
    create_list_files_tool,
    create_read_file_tool,
    create_write_file_tool,
    summarize_args,
)  # fmt: skip

from .conftest import call, text_of


def object_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    if schema.get("type") == "object":
        found.append(schema)
        for child in schema.get("properties", {}).values():
            found.extend(object_schemas(child))
    if schema.get("type") == "array":
        found.extend(object_schemas(schema["items"]))
    return found


def test_build_tools_gives_the_built_in_tools(ws: Path) -> None:
    tools = build_tools(ws)
    assert [t.name for t in tools] == [
        "read_file", "write_file", "edit_file", "bash", "grep", "list_files", "todo_write", "web_fetch",
    ]
    assert CHANGING_TOOLS == frozenset({"write_file", "edit_file", "apply_patch", "bash"})
    for tool in tools:
        assert tool.label and len(tool.description) > 80 and tool.execute is not None


def test_every_schema_is_closed_and_describes_every_field(ws: Path) -> None:
    for tool in build_tools(ws):
        Draft202012Validator.check_schema(tool.parameters)
        for schema in object_schemas(tool.parameters):
            assert schema["additionalProperties"] is False, tool.name
            for name, field in schema["properties"].items():
                assert field.get("description"), f"{tool.name}.{name}"


def test_factories_take_root_and_settings(ws: Path) -> None:
    settings = ToolSettings(shell_max_timeout=30)
    for factory in (create_read_file_tool, create_write_file_tool, create_edit_file_tool,
                    create_bash_tool, create_grep_tool, create_list_files_tool):  # fmt: skip
        assert factory(ws, settings).parameters["type"] == "object"
    assert create_bash_tool(ws, settings).parameters["properties"]["timeout"]["maximum"] == 30


async def test_separately_built_tool_sets_do_not_share_line_references(ws: Path) -> None:
    (ws / "a.txt").write_text("one\n")
    first, second = build_tools(ws), build_tools(ws)
    read = text_of(await call(first[0], {"filepath": "a.txt"}))
    digest = read.splitlines()[1].split(":")[1].split("|")[0]
    with pytest.raises(ToolError, match="read_file first"):
        await call(second[2], {"filepath": "a.txt", "edits": [{"line": 1, "hash": digest, "new_text": "1"}]})
    await call(first[2], {"filepath": "a.txt", "edits": [{"line": 1, "hash": digest, "new_text": "1"}]})
    assert (ws / "a.txt").read_text() == "1\n"


async def test_arguments_that_are_not_an_object_are_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="JSON object"):
        await call(build_tools(ws)[0], ["calc.py"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "args", "summary"),
    [
        ("read_file", {"filepath": "calc.py"}, "calc.py"),
        ("read_file", {"filepath": "calc.py", "offset": 10}, "calc.py from line 11"),
        ("edit_file", {"filepath": "src/a.py", "edits": []}, "src/a.py"),
        ("write_file", {"filepath": "n.py", "content": "x" * 500}, "n.py"),
        ("bash", {"command": "python3 check.py"}, "python3 check.py"),
        ("bash", {"command": "make\n  test", "cwd": "sub"}, "make (in sub) (+1 more line)"),
        ("grep", {"pattern": "def add", "path": "src", "glob": "*.py"}, "/def add/ in src *.py"),
        ("list_files", {}, "."),
        ("list_files", {"path": "src", "glob": "*.py"}, "src *.py"),
        ("other", {"x": 1}, '{"x": 1}'),
        ("read_file", {"filepath": 7}, ""),
    ],
)
def test_summarize_args(name: str, args: dict, summary: str) -> None:
    assert summarize_args(name, args) == summary


def test_summaries_are_short_and_single_line() -> None:
    summary = summarize_args("bash", {"command": "echo " + "word " * 100})
    assert len(summary) == 80 and summary.endswith("…") and "\n" not in summary
    assert summarize_args("bash", "not a dict") == ""  # type: ignore[arg-type]
