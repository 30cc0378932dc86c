"""The `background` option of bash: its schema field, its description and the start of the
process (tools/background.py keeps it). Kept apart from bash.py, which runs a command to its end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentToolResult

from tunacode_lsp.tools.background import MAX_PER_SESSION
from tunacode_lsp.tools.base import text_result
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.sandbox import bwrap_path, sandbox_argv
from tunacode_lsp.tools.sandbox_protected import Absent, remove_appeared
from tunacode_lsp.tools.settings import ToolSettings


def with_background_field(settings: ToolSettings, parameters: dict[str, Any]) -> dict[str, Any]:
    """bash's schema with `background` added, when the session can keep processes."""

    if settings.background is None:
        return parameters
    return {**parameters, "properties": {**parameters["properties"], "background": BACKGROUND_FIELD}}


def background_description(settings: ToolSettings) -> str:
    if settings.background is None:
        return ""
    return (
        " With background: true the command starts and the call returns its processId at once (for a dev "
        "server or a watcher); read its output with process_output and end it with process_kill "
        f"(at most {MAX_PER_SESSION} at once; they end with the session)."
    )


BACKGROUND_FIELD: dict[str, Any] = {
    "type": "boolean",
    "description": "Run in the background and return a processId at once (see process_output, process_kill). Default false.",
}


async def start_background(
    settings: ToolSettings, command: str, cwd: Path, env: dict[str, str], marker: str, *, shell: str,
    workspace: Path, sandboxed: bool, network: str, absent: Absent | None,
) -> AgentToolResult:
    """Start the command in the same sandbox as a foreground one. Its network: the host's where
    a foreground command has it; with pasta (a helper process per command) only its own
    loopback, as shellNetwork false. What it creates that runs code outside the sandbox is
    removed when it ends, as after a foreground command."""

    if settings.background is None:
        raise ToolError("Background commands are not available here: run the command without background.")
    no_pasta = "none" if network == "pasta" else network
    argv = (
        sandbox_argv(bwrap_path() or "bwrap", shell=shell, command=command, cwd=cwd, workspace=workspace,
                     network=no_pasta, home=env["HOME"], read_only=settings.shell_read_only_paths)
        if sandboxed
        else [shell, "-c", command]
    )
    on_exit = (lambda: remove_appeared(workspace, absent)) if absent is not None else None
    process = await settings.background.start(argv, cwd, env, marker, command, on_exit=on_exit)
    offline = " It has no network (only its own loopback) in the sandbox." if network == "pasta" else ""
    return text_result(
        f"Started in the background as {process.process_id} (pid {process.pid}).{offline} Read its output with "
        f'process_output {{"processId": "{process.process_id}", "wait": 5}}; end it with process_kill.',
        processId=process.process_id, pid=process.pid, background=True, sandboxed=sandboxed,
    )
