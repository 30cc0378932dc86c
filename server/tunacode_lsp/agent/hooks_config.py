"""The `hooks` setting: `{preToolUse, postToolUse, userPromptSubmit, stop}`, each a list of
`{matcher?, command, timeout?}`, checked once (agent/hooks.py runs them).

`matcher` names the tools a tool hook runs for: a tool name, or a glob over tool names
(`mcp__github__*`, `edit_file`); none (or `*`) is every tool. Prompt and stop hooks ignore it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HOOK_EVENTS = ("preToolUse", "postToolUse", "userPromptSubmit", "stop")
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
MAX_HOOKS = 50  # per event and source
MAX_COMMAND_CHARS = 10_000


@dataclass(frozen=True)
class HookDef:
    event: str
    command: str
    matcher: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    source: str = "user"  # user | project | editor

    def matches(self, tool: str | None) -> bool:
        if self.matcher in (None, "", "*") or tool is None:
            return True
        return fnmatch.fnmatchcase(tool, self.matcher)

    def describe(self) -> str:
        where = f" for {self.matcher}" if self.matcher not in (None, "", "*") else ""
        return f"the {self.event} hook `{self.command[:80]}`{where} ({self.source} settings)"


def parse_hooks(raw: Any, source: str) -> tuple[tuple[HookDef, ...], list[str]]:
    """The hooks of one settings source; a bad entry is reported and dropped."""

    if raw is None:
        return (), []
    if not isinstance(raw, Mapping):
        return (), [f"hooks: expected an object with {', '.join(HOOK_EVENTS)}"]
    found: list[HookDef] = []
    problems: list[str] = []
    for event, entries in raw.items():
        if event not in HOOK_EVENTS:
            problems.append(f"hooks.{event}: unknown (expected one of {', '.join(HOOK_EVENTS)})")
            continue
        if not isinstance(entries, list):
            problems.append(f"hooks.{event}: expected a list of {{matcher?, command, timeout?}}")
            continue
        for i, entry in enumerate(entries[:MAX_HOOKS]):
            hook, problem = _one(event, entry, source)
            if problem:
                problems.append(f"hooks.{event}[{i}]: {problem}")
            elif hook is not None:
                found.append(hook)
        if len(entries) > MAX_HOOKS:
            problems.append(f"hooks.{event}: more than {MAX_HOOKS} hooks; the rest are ignored")
    return tuple(found), problems


def _one(event: str, entry: Any, source: str) -> tuple[HookDef | None, str | None]:
    if not isinstance(entry, Mapping):
        return None, "expected an object {matcher?, command, timeout?}"
    unknown = set(entry) - {"matcher", "command", "timeout"}
    if unknown:
        return None, f"unknown field {sorted(unknown)[0]!r}"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return None, "command: expected a non-empty string"
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        return None, f"command: at most {MAX_COMMAND_CHARS:,} characters, no NUL"
    matcher = entry.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        return None, "matcher: expected a tool name or a glob"
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        return None, f"timeout: expected seconds, more than 0 and at most {MAX_TIMEOUT:g}"
    return HookDef(event, command, matcher or None, float(timeout), source), None
