"""The system prompt: the packaged template, the workspace root, and the workspace's AGENTS.md.

AGENTS.md is the checkout's file: it is read with the confined reader (tools/confined_read.py),
so a link to `~/.aws/credentials` or `/proc/self/environ` never enters the prompt and a FIFO
never blocks; such a file is skipped with a notice. Call `load_system_prompt` from a thread.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from tunacode_lsp.tools.confined_read import read_confined

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 20_000
MAX_AGENTS_BYTES = 4 * MAX_AGENTS_CHARS  # read at most this much (UTF-8: up to 4 bytes a character)


def load_system_prompt(workspace_root: Path) -> tuple[str, list[str]]:
    """(the system prompt, notices for the user about instruction files that were skipped).
    Blocking (reads files): run it in a thread."""

    template = files("tunacode_lsp.agent").joinpath("prompts/system.md").read_text("utf-8")
    prompt = template.replace("{workspace_root}", str(workspace_root))
    found = read_confined(workspace_root, AGENTS_FILE, limit=MAX_AGENTS_BYTES, truncate=True)
    extra = found.text()
    if extra is None:
        return prompt, [found.notice] if found.notice else []
    if len(extra) > MAX_AGENTS_CHARS or found.truncated:
        extra = extra[:MAX_AGENTS_CHARS] + "\n[AGENTS.md truncated]"
    return f"{prompt}\n## Project instructions (from {AGENTS_FILE})\n\n{extra.strip()}\n", []


def build_system_prompt(workspace_root: Path) -> str:
    """The system prompt alone (notices dropped). Blocking: run it in a thread."""

    return load_system_prompt(workspace_root)[0]
