"""Tool calls written as text: each format found, and answers that only show JSON left alone."""

from __future__ import annotations

import pytest

from tunacode_lsp.agent.provider.text_tool_calls import TextToolCall, extract_text_tool_calls

TOOLS = frozenset({"read_file", "bash"})
READ = TextToolCall("read_file", {"filepath": "calc.py"})


@pytest.mark.parametrize(
    ("text", "left", "calls"),
    [
        ('Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"filepath": "calc.py"}}\n</tool_call>', "Let me look.", [READ]),
        ('<tool_call>{"name": "read_file", "arguments": "{\\"filepath\\": \\"calc.py\\"}"}</tool_call> then', "then", [READ]),
        ('I will read it. <function=read_file>{"filepath": "calc.py"}</function>', "I will read it.", [READ]),
        ('[TOOL_CALLS][{"name": "read_file", "arguments": {"filepath": "calc.py"}}]', "", [READ]),
        ('[TOOL_CALLS]read_file[ARGS]{"filepath": "calc.py"}', "", [READ]),
        ('{"name": "read_file", "parameters": {"filepath": "calc.py"}}', "", [READ]),
        ('```json\n{"name": "read_file", "arguments": {"filepath": "calc.py"}}\n```', "", [READ]),
        (
            '<tool_call>{"name": "read_file", "arguments": {"filepath": "calc.py"}}</tool_call>'
            '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>',
            "",
            [READ, TextToolCall("bash", {"command": "ls"})],
        ),
    ],
)
def test_formats_found(text, left, calls):
    assert extract_text_tool_calls(text, TOOLS) == (left, calls)


@pytest.mark.parametrize(
    "text",
    [
        # an answer that shows JSON as an example is never run
        'Here is the JSON you asked for:\n```json\n{"name": "read_file", "arguments": {"filepath": "calc.py"}}\n```',
        'A call looks like {"name": "read_file", "arguments": {"filepath": "x"}} in our API.',
        # a tool the model was not offered
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        '{"name": "delete_everything", "arguments": {}}',
        # arguments that are not an object
        '<tool_call>{"name": "read_file", "arguments": [1, 2]}</tool_call>',
        "<function=read_file>not json</function>",
        "just text",
    ],
)
def test_not_calls(text):
    assert extract_text_tool_calls(text, TOOLS) == (text, [])
