"""Prompt commands: `.tunacode/commands/<name>.md` (project) and
`$XDG_CONFIG_HOME/tunacode/commands/<name>.md` (user); a project command hides a user command
of the same name.

A file is optional front matter between `---` lines (`description`, `argument-hint`,
`model`, `allowed-tools`) and a body. A prompt `/name args` runs the body with `$ARGUMENTS`
replaced by `args` and `$1`..`$9` by its words (split as a shell would; missing ones empty).
`model` picks the request's model; `allowed-tools` (tool names, or rules whose tool part
counts: `bash(git *)` is `bash`) limits the tools the model gets for that request. It only
ever narrows: no command approves anything.

A command is text that becomes a prompt, like AGENTS.md: files are read with the confined
reader (a link out, a FIFO, a huge file are skipped), names are plain words, counts and
sizes are bounded. Blocking functions: call them from a thread.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tunacode_lsp.contract.protocol import CommandInfo
from tunacode_lsp.tools.confined_read import read_confined

PROJECT_DIR = ".tunacode/commands"
USER_DIR = "commands"
MAX_COMMANDS = 200  # per folder
MAX_COMMAND_BYTES = 64 * 1024
MAX_FIELD_CHARS = 500
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_PROMPT = re.compile(r"\A/(?P<name>[A-Za-z0-9][A-Za-z0-9_.:-]{0,63})(?:[ \t]+(?P<args>.*))?\Z", re.DOTALL)
_POSITIONAL = re.compile(r"\$(ARGUMENTS|[1-9])")


@dataclass(frozen=True)
class PromptCommand:
    name: str
    source: str  # project | user
    body: str
    description: str = ""
    argument_hint: str = ""
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    path: str = ""

    def expand(self, arguments: str) -> str:
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()

        def one(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == "ARGUMENTS":
                return arguments
            index = int(key) - 1
            return words[index] if index < len(words) else ""

        return _POSITIONAL.sub(one, self.body)


def parse_command_file(name: str, source: str, text: str, path: str = "") -> PromptCommand:
    fields: dict[str, str] = {}
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep:
                    fields[key.strip().lower()] = value.strip().strip("\"'")[:MAX_FIELD_CHARS]
            body = "\n".join(lines[end + 1:])
    tools_field = fields.get("allowed-tools", "").strip("[]")
    tools = tuple(t.strip().strip("\"'") for t in re.split(r",(?![^(]*\))", tools_field) if t.strip())
    return PromptCommand(
        name, source, body.strip(), fields.get("description", ""), fields.get("argument-hint", ""),
        fields.get("model") or None, tools, path,
    )


def _folder_commands(base: Path, relative: str, source: str) -> tuple[list[PromptCommand], list[str]]:
    folder = base / relative
    real_base = os.path.realpath(base)
    try:
        real = os.path.realpath(folder)
        if not real.startswith(real_base.rstrip("/") + "/") or not os.path.isdir(real):
            return [], ([f"{relative} leads out of {base}; its commands were not read."] if os.path.lexists(folder) else [])
        entries = sorted(e.name for e in os.scandir(real) if e.name.endswith(".md"))
    except OSError:
        return [], []
    found: list[PromptCommand] = []
    notices: list[str] = []
    for entry in entries[:MAX_COMMANDS]:
        name = entry[:-3]
        if not _NAME.fullmatch(name):
            continue
        read = read_confined(base, f"{relative}/{entry}", limit=MAX_COMMAND_BYTES)
        text = read.text()
        if text is None:
            if read.notice:
                notices.append(read.notice)
            continue
        found.append(parse_command_file(name, source, text, read.shown if source == "project" else str(folder / entry)))
    return found, notices


def load_commands(root: Path, env: Mapping[str, str] = os.environ) -> tuple[dict[str, PromptCommand], list[str]]:
    """Every command by name (the project's over the user's), and notices."""

    from tunacode_lsp.agent.settings_files import user_config_dir

    user, user_notices = _folder_commands(user_config_dir(env), USER_DIR, "user")
    project, project_notices = _folder_commands(root, PROJECT_DIR, "project")
    commands = {c.name: c for c in user}
    commands.update({c.name: c for c in project})
    return commands, user_notices + project_notices


@dataclass(frozen=True)
class ExpandedPrompt:
    prompt: str
    command: PromptCommand


def expand_prompt(prompt: str, root: Path, env: Mapping[str, str] = os.environ) -> ExpandedPrompt | None:
    """The expanded command when `prompt` is `/name args` of a known command, else None."""

    match = _PROMPT.match(prompt.strip())
    if match is None:
        return None
    commands, _ = load_commands(root, env)
    command = commands.get(match.group("name"))
    if command is None:
        return None
    return ExpandedPrompt(command.expand((match.group("args") or "").strip()), command)


def allowed_tool_names(command: PromptCommand) -> frozenset[str] | None:
    """The tool names `allowed-tools` leaves the model (None: no limit)."""

    if not command.allowed_tools:
        return None
    return frozenset(t.split("(", 1)[0].strip() for t in command.allowed_tools)


def command_infos(root: Path, env: Mapping[str, str] = os.environ) -> list[CommandInfo]:
    """`tunacode.commands.list`: every command, by name."""

    commands, _ = load_commands(root, env)
    return [
        CommandInfo(c.name, c.description, c.argument_hint, c.source) for c in sorted(commands.values(), key=lambda c: c.name)
    ]
