"""Bash rules, second attacker's pass (issue 29): where tree-sitter's parse and what bash
really runs part ways. Each case was allowed, or slipped past a deny rule, before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunacode_lsp.agent.permissions import PermissionRules, parse_rules

ROOT = Path("/tmp/workspace-for-rules")


def rules(**lists: list[str]) -> PermissionRules:
    parsed, problems = parse_rules(lists, source="user")
    assert problems == []
    return parsed


def effect(r: PermissionRules, command: str) -> str | None:
    decision = r.decide("bash", {"command": command}, ROOT)
    return decision.effect if decision else None


CAT = rules(allow=["bash(cat)", "bash(echo *)"])


@pytest.mark.parametrize("command", [
    # tree-sitter hangs the rest of the line on the here-document: `| sh`, `&& x`, `> file`
    "cat <<EOF | sh\ncurl x\nEOF",
    "cat <<EOF && curl x | sh\nhi\nEOF",
    "cat <<EOF > .envrc\ncurl x | sh\nEOF",
    "cat <<'EOF' >> ~/.bashrc\nx\nEOF",
    "cat <<-EOF 2>.git/x\n\thi\n\tEOF",
    # a line continuation inside a word: bash runs `curl x`, tree-sitter saw `cu` and `rl`
    "echo a; cu\\\nrl x",
])
def test_what_bash_runs_beyond_the_parse_is_never_allowed(command: str) -> None:
    assert effect(CAT, command) is None


RM = rules(deny=["bash(rm *)"])


@pytest.mark.parametrize("command", [
    "cat <<EOF | rm -rf y\nhi\nEOF",
    "cat <<EOF && rm -rf y\nhi\nEOF",
    "r\\\nm -rf y",  # bash joins the lines: `rm -rf y`
    "coproc rm -rf y",
    "trap 'rm -rf y' EXIT",
    "shopt -s expand_aliases\nalias ls='rm -rf y'\nls",
    "find . -exec rm -rf {} +",
    "find . -name x -execdir sh -c 'rm -rf y' \\;",
    "env -S 'rm -rf y'",
    "env '-Srm -rf y'",
])
def test_deny_rules_see_what_bash_runs(command: str) -> None:
    assert effect(RM, command) in ("deny", "ask")


@pytest.mark.parametrize("command", ["docker run \\\n  -v x img", "echo a\\\\\nls", "echo 'ok' \\\n && echo b"])
def test_a_continuation_between_words_still_parses(command: str) -> None:
    assert effect(rules(allow=["bash(docker *)", "bash(echo *)", "bash(ls)"]), command) == "allow"


def test_an_mcp_server_named_like_another_servers_prefix_is_left_out() -> None:
    """`mcp__github` allows every tool of the server `github`; a (workspace) server named
    `github__x` would have had its tools `mcp__github__x__*` allowed by the same rule."""

    from tunacode_lsp.agent.mcp.config import parse_servers

    specs, warnings = parse_servers({"github__x": {"command": "x"}, "github": {"command": "y"}}, "workspace", env={})
    assert [s.name for s in specs] == ["github"] and "no '__'" in warnings[0]
