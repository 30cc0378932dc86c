"""The system prompt: the packaged template, the workspace root, and the workspace's AGENTS.md.

AGENTS.md is the checkout's file: it is read with the confined reader (tools/confined_read.py),
so a link to `~/.aws/credentials` or `/proc/self/environ` never enters the prompt and a FIFO
never blocks; such a file is skipped with a notice. Call `load_system_prompt` from a thread.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

AGENTS_FILE = "AGENTS.md"


def load_system_prompt(workspace_root: Path) -> tuple[str, list[str]]:
    """(the system prompt, notices for the user about instruction files that were skipped).
    Blocking (reads files): run it in a thread. The instruction files: agent/instructions.py."""

    from tunacode_lsp.agent.instructions import root_instructions

    template = files("tunacode_lsp.agent").joinpath("prompts/system.md").read_text("utf-8")
    prompt = template.replace("{workspace_root}", str(workspace_root))
    sections, notices = root_instructions(workspace_root)
    for title, text in sections:
        prompt += f"\n## {title[0].upper()}{title[1:]}\n\n{text}\n"
    return prompt, notices


def build_system_prompt(workspace_root: Path) -> str:
    """The system prompt alone (notices dropped). Blocking: run it in a thread."""

    return load_system_prompt(workspace_root)[0]
