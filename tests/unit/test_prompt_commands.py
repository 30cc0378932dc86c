"""Prompt commands (agent/commands.py): front matter, arguments, precedence, hostile files."""

from __future__ import annotations

import os
from pathlib import Path

from tunacode_lsp.agent.commands import allowed_tool_names, command_infos, expand_prompt, parse_command_file


def test_front_matter_and_arguments() -> None:
    command = parse_command_file(
        "fix", "project",
        "---\ndescription: Fix an issue\nargument-hint: <issue> [area]\nmodel: openai:gpt-4o\n"
        "allowed-tools: read_file, bash(git diff:*), edit_file\n---\nFix issue $1 in $2 ($ARGUMENTS). $3$9.\n",
    )
    assert (command.description, command.argument_hint, command.model) == ("Fix an issue", "<issue> [area]", "openai:gpt-4o")
    assert command.allowed_tools == ("read_file", "bash(git diff:*)", "edit_file")
    assert allowed_tool_names(command) == frozenset({"read_file", "bash", "edit_file"})
    assert command.expand("42 'the parser'") == "Fix issue 42 in the parser (42 'the parser'). ."
    assert command.expand("unterminated 'quote") == "Fix issue unterminated in 'quote (unterminated 'quote). ."
    plain = parse_command_file("x", "user", "no front matter $ARGUMENTS")
    assert plain.description == "" and plain.expand("") == "no front matter " and allowed_tool_names(plain) is None


def test_project_commands_hide_user_commands_and_unknown_names_pass_through(tmp_path: Path) -> None:
    root, config = tmp_path / "repo", tmp_path / "config"
    (root / ".tunacode" / "commands").mkdir(parents=True)
    (config / "tunacode" / "commands").mkdir(parents=True)
    (root / ".tunacode" / "commands" / "deploy.md").write_text("project deploy")
    (config / "tunacode" / "commands" / "deploy.md").write_text("user deploy")
    (config / "tunacode" / "commands" / "mine.md").write_text("---\ndescription: mine\n---\nmy $1")
    (root / ".tunacode" / "commands" / "bad name.md").write_text("skipped")
    env = {"XDG_CONFIG_HOME": str(config)}
    infos = command_infos(root, env)
    assert [(i.name, i.source) for i in infos] == [("deploy", "project"), ("mine", "user")]
    assert expand_prompt("/deploy", root, env).prompt == "project deploy"  # type: ignore[union-attr]
    assert expand_prompt("/mine  a b", root, env).prompt == "my a"  # type: ignore[union-attr]
    assert expand_prompt("/usr/bin/env", root, env) is None
    assert expand_prompt("/nope x", root, env) is None
    assert expand_prompt("please /deploy", root, env) is None


def test_hostile_command_files_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    folder = root / ".tunacode" / "commands"
    folder.mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    (folder / "leak.md").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(folder / "hang.md")
    (folder / "huge.md").write_text("x" * 200_000)
    (folder / "ok.md").write_text("fine")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "none")}
    assert [i.name for i in command_infos(root, env)] == ["ok"]
    assert expand_prompt("/leak", root, env) is None


def test_a_commands_folder_linked_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".tunacode").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("outside")
    (root / ".tunacode" / "commands").symlink_to(elsewhere)
    assert command_infos(root, {"XDG_CONFIG_HOME": str(tmp_path / "none")}) == []
