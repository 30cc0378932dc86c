"""The system prompt: the packaged template, the workspace root, and the workspace's AGENTS.md."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 20_000


def build_system_prompt(workspace_root: Path) -> str:
    template = files("tunacode_lsp.agent").joinpath("prompts/system.md").read_text("utf-8")
    prompt = template.replace("{workspace_root}", str(workspace_root))
    agents = workspace_root / AGENTS_FILE
    try:
        extra = agents.read_text("utf-8", errors="replace")
    except OSError:
        return prompt
    if len(extra) > MAX_AGENTS_CHARS:
        extra = extra[:MAX_AGENTS_CHARS] + "\n[AGENTS.md truncated]"
    return f"{prompt}\n## Project instructions (from {AGENTS_FILE})\n\n{extra.strip()}\n"
