"""process_output and process_kill: the tools that follow `bash {background: true}`
(tools/background.py keeps the processes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.tools.background import BackgroundProcess, SessionProcesses
from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolCancelled
from tunacode_lsp.tools.textfile import cut_middle
from tunacode_lsp.tools.timeouts import tool_seconds

MAX_WAIT_SECONDS = 60.0
PROCESS_ID = {"type": "string", "maxLength": 40, "description": "The processId bash returned for a background command."}

OUTPUT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "processId": PROCESS_ID,
        "wait": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_WAIT_SECONDS,
            "description": (
                f"Seconds to wait for new output or the process's end when there is none yet (0-{MAX_WAIT_SECONDS:g}). "
                "Default 0: answer at once."
            ),
        },
    },
    "required": ["processId"],
    "additionalProperties": False,
}
KILL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"processId": PROCESS_ID},
    "required": ["processId"],
    "additionalProperties": False,
}

OUTPUT_DESCRIPTION = (
    "Read what a background command (bash with background: true) printed since the last read, and "
    "whether it still runs or its exit code. With `wait`, wait up to that many seconds for new output "
    "first (e.g. until a dev server says it is ready). A process keeps only its newest 1 MB of output."
)
KILL_DESCRIPTION = (
    "End a background command (bash with background: true) and everything it started; returns its last "
    "output. Background commands also end when the session is deleted or the server stops."
)


def _state(process: BackgroundProcess) -> str:
    if process.running:
        return f"[process {process.process_id} is running (pid {process.pid})]"
    return f"[process {process.process_id} exited with code {process.exit_code}]"


def _new_output(process: BackgroundProcess, limit: int) -> tuple[str, int]:
    data, dropped = process.output.since(process.read_to)
    process.read_to = process.output.end
    text, _ = cut_middle(data.decode("utf-8", errors="replace"), limit)
    if dropped:
        text = f"[... {dropped:,} earlier bytes were dropped (only the newest 1 MB is kept) ...]\n" + text
    return text, len(data)


def create_process_tools(
    processes: SessionProcesses, max_output_chars: int, timeouts: Mapping[str, float] | None = None
) -> list[AgentTool]:
    async def output(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        process = processes.get(args["processId"])
        wait = float(args.get("wait", 0))
        if wait > 0 and process.running and process.output.end == process.read_to:
            process.changed.clear()
            raced = await race_abort(process.changed.wait(), call.signal, timeout=wait)
            if raced.aborted:
                raise ToolCancelled()
        text, size = _new_output(process, max_output_chars)
        body = text if text else "(no new output)"
        if not body.endswith("\n"):
            body += "\n"
        return text_result(body + _state(process), processId=process.process_id, running=process.running,
                           exit_code=process.exit_code, bytes=size)

    async def kill(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        process = processes.get(args["processId"])
        was_running = process.running
        await processes.registry.kill(process)
        text, _ = _new_output(process, max_output_chars)
        head = f"Killed {process.process_id}." if was_running else f"{process.process_id} had already ended."
        return text_result(f"{head}\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}{_state(process)}",
                           processId=process.process_id, running=process.running)

    seconds = tool_seconds(timeouts or {}, "process_output")
    return [
        make_tool(name="process_output", label="Process output", description=OUTPUT_DESCRIPTION,
                  parameters=OUTPUT_PARAMETERS, run=output, seconds=lambda args: float(args.get("wait", 0)) + seconds),
        make_tool(name="process_kill", label="Stop process", description=KILL_DESCRIPTION,
                  parameters=KILL_PARAMETERS, run=kill, seconds=tool_seconds(timeouts or {}, "process_kill")),
    ]
