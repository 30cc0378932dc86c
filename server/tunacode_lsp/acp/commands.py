"""Slash commands an ACP client offers in its prompt box (`available_commands_update`): the
checkpoints LSP clients reach with tunacode.changes and tunacode.session.rewind.

- `/changes`: the files the session's last request changed, with their diffs.
- `/rewind` (`/rewind force`): restore the files the last request changed and cut it from
  the conversation; a file changed since by someone else refuses it unless `force`.
- `/rewind list`: the session's requests, numbered (1 the oldest), each with its prompt's
  first line: the picker. `/rewind N` (`/rewind N force`) goes back to before request N,
  undoing it and every later one; a request id works as well as its number.

Neither calls the model nor is stored in the conversation. The client keeps showing the
rewound turn in its own transcript; the answer says what was cut.
"""

from __future__ import annotations

from pathlib import Path

from acp import schema, update_agent_message

from tunacode_lsp.agent.runs import RequestService
from tunacode_lsp.agent.sessions import SessionService
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import CHANGED_SINCE, ChangesParams, RewindParams
from tunacode_lsp.core.text import clip
from tunacode_lsp.store.records import RequestCheckpointRecord

COMMANDS = (
    schema.AvailableCommand(name="changes", description="Show the files the last request changed, with their diffs"),
    schema.AvailableCommand(
        name="rewind",
        description="Undo the last request: restore the files it changed and cut it from the conversation",
        input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(
            hint="list | N (to before request N) | force (overwrite files changed since)"
        )),
    ),
)


def available_commands(root: Path | None = None) -> schema.AvailableCommandsUpdate:
    """The built-in commands, then the workspace's and the user's prompt commands
    (agent/commands.py; one named like a built-in is left out). Blocking when `root` is given
    (reads the command files): call it from a thread."""

    offered = list(COMMANDS)
    if root is not None:
        from tunacode_lsp.agent.commands import command_infos

        builtin = {c.name for c in COMMANDS}
        offered += [
            schema.AvailableCommand(
                name=info.name,
                description=info.description or f"/{info.name} ({info.source} command)",
                input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(hint=info.argument_hint))
                if info.argument_hint else None,
            )
            for info in command_infos(root)
            if info.name not in builtin
        ]
    return schema.AvailableCommandsUpdate(session_update="available_commands_update", available_commands=offered)


def command_of(text: str) -> tuple[str, str] | None:
    """(`changes` | `rewind`, its argument) when the prompt is one of the commands, else None."""

    words = text.strip().split(maxsplit=1)
    if not words or words[0] not in ("/changes", "/rewind"):
        return None
    return words[0][1:], words[1].strip() if len(words) > 1 else ""


async def run_command(
    name: str, argument: str, session_id: str, root: Path, runs: RequestService, sessions: SessionService
) -> str:
    """The answer to show (Markdown); errors are answers too, the session goes on."""

    rows = await sessions.request_checkpoints(session_id)
    if not rows:
        return "Nothing to show: no request of this session has checkpoints yet."
    last = rows[-1].request_id
    words = argument.split()
    force = "force" in (w.lower() for w in words)
    picks = [w for w in words if w.lower() != "force"]
    if name == "rewind" and picks:
        if picks[0].lower() == "list":
            return await _request_list(rows, session_id, sessions)
        target = _pick(picks[0], rows)
        if target is None:
            return f"Not done: no request {picks[0][:80]!r} in this session; `/rewind list` shows them."
        return await _rewind(runs, session_id, target, root, force=force, label=f"request {picks[0][:80]}")
    try:
        if name == "changes":
            result = await runs.checkpoints.changes_command(runs, ChangesParams(session_id, last), root)
            if not result.files:
                return "The last request changed no file."
            parts = [f"The last request changed {len(result.files)} file{'s' if len(result.files) != 1 else ''}:"]
            for changed in result.files:
                parts.append(f"\n**{changed.path}** ({changed.status})\n\n{_fenced(changed.diff)}")
            if result.truncated:
                parts.append("\n(Some diffs were cut.)")
            return "\n".join(parts)
    except CommandError as exc:
        return f"Not done: {exc.message}"
    return await _rewind(runs, session_id, last, root, force=force, label="the last request")


async def _rewind(runs: RequestService, session_id: str, request_id: str, root: Path, *, force: bool, label: str) -> str:
    try:
        rewound = await runs.checkpoints.rewind_command(runs, RewindParams(session_id, request_id, force=force), root)
    except CommandError as exc:
        if exc.code == CHANGED_SINCE:
            return f"Not rewound: {exc.message.replace('Rewind with force', 'Send `/rewind force`')}"
        return f"Not done: {exc.message}"
    restored = ", ".join(rewound.restored) if rewound.restored else "no file needed it"
    return (f"Rewound {label}: files restored: {restored}. The conversation is back to before it "
            f"({rewound.session.message_count} messages); the agent no longer sees that turn or any later one.")


def _pick(word: str, rows: list[RequestCheckpointRecord]) -> str | None:
    """A request by its number in `/rewind list` (1 the oldest) or by its id."""

    if word.isdigit() and 1 <= int(word) <= len(rows):
        return rows[int(word) - 1].request_id
    return next((r.request_id for r in rows if r.request_id == word), None)


async def _request_list(rows: list[RequestCheckpointRecord], session_id: str, sessions: SessionService) -> str:
    messages = await sessions.messages(session_id)
    lines = ["The requests of this session (send `/rewind N` to go back to before request N):", ""]
    for number, row in enumerate(rows, 1):
        prompt = messages[row.first_seq] if row.first_seq < len(messages) else {}
        text = next((b.get("text", "") for b in prompt.get("content", []) if isinstance(b, dict) and b.get("type") == "text"), "")
        line = text.strip().splitlines()[-1] if text.strip() else "(no text)"  # the prompt follows any editor context
        lines.append(f"{number}. {clip(line, 80)} (`{row.request_id}`)")
    return "\n".join(lines)


def _fenced(diff: str) -> str:
    ticks = "```"
    while ticks in diff:
        ticks += "`"
    return f"{ticks}diff\n{diff}\n{ticks}"


def answer_update(text: str) -> schema.AgentMessageChunk:
    return update_agent_message(schema.TextContentBlock(type="text", text=text))
