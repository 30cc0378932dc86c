"""One description per tool: what it is, for every layer that shows or gates it.

A `ToolSpec` says a tool's ACP kind, whether it changes files (it then needs approval and a
checkpoint), the argument naming the file it works on, which approval view shows it, and
how its call reads for a person: `summary` (the arguments on one line) and `title` (plain
words: "Read calc.py", "Edit calc.py (+1 -1)", "Run python3 check.py"). The registry's
events, approvals, ACP updates, the runner and the LSP sink all read it from `spec_of`.

Adding a tool: one `ToolSpec` in SPECS below. A tool without one (an MCP tool, a tool
added at run time) gets `default_spec`: kind `other`, changes nothing known, the name and
its JSON arguments as the title.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tunacode_lsp.core.text import clip

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "think", "other"]
ApprovalKind = Literal["command", "write", "edit", "patch", "arguments"]

SUMMARY_CHARS = 80
TITLE_CHARS = 120

Args = dict[str, Any]


def _text(args: Args, key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _short(text: str, limit: int = SUMMARY_CHARS) -> str:
    return clip(" ".join(text.split()), limit)


def _lines(text: object) -> int:
    return len(text.splitlines()) if isinstance(text, str) and text else 0


def _json_summary(args: Args) -> str:
    try:
        return _short(json.dumps(args, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ""


# ---------------------------------------------------------------- summaries (one line of arguments)


def _file_summary(args: Args) -> str:
    return _short(_text(args, "filepath"))


def _read_summary(args: Args) -> str:
    summary = _text(args, "filepath")
    offset = args.get("offset")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0:
        summary += f" from line {offset + 1}"
    return _short(summary)


def _bash_summary(args: Args) -> str:
    cwd = _text(args, "cwd")
    lines = _text(args, "command").strip().splitlines() or [""]
    more = f" (+{len(lines) - 1} more line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
    return _short(lines[0] + (f" (in {cwd})" if cwd and cwd != "." else "")) + more


def _grep_summary(args: Args) -> str:
    where = " ".join(part for part in (_text(args, "path"), _text(args, "glob")) if part)
    return _short(f"/{_text(args, 'pattern')}/" + (f" in {where}" if where else ""))


def _list_summary(args: Args) -> str:
    return _short(" ".join(part for part in (_text(args, "path") or ".", _text(args, "glob")) if part))


def _todo_summary(args: Args) -> str:
    raw = args.get("todos")
    if not isinstance(raw, list):
        return _json_summary(args)
    todos = [t for t in raw if isinstance(t, dict)]
    done = sum(t.get("status") == "completed" for t in todos)
    return f"{len(todos)} items, {done} done"


def _url_summary(args: Args) -> str:
    return _short(_text(args, "url"))


def _process_summary(args: Args) -> str:
    return _short(_text(args, "processId"))


def _diagnostics_summary(args: Args) -> str:
    paths = args.get("filepaths")
    if not isinstance(paths, list):
        return _json_summary(args)
    return _short(", ".join(str(p) for p in paths))


# ---------------------------------------------------------------- titles (plain words)


def _edit_counts(args: Args) -> tuple[int, int]:
    """Lines added and removed as the arguments say (the file itself may differ later)."""

    edits: Any = args.get("edits")
    if isinstance(edits, str):
        try:
            edits = json.loads(edits)
        except ValueError:
            edits = None
    if isinstance(edits, dict):
        edits = [edits]
    if not isinstance(edits, list):
        edits = [{"old_text": args.get("old_text"), "new_text": args.get("new_text")}]
    added = removed = 0
    for edit in edits:
        if not isinstance(edit, dict):
            continue
        added += _lines(edit.get("new_text"))
        line, end = edit.get("line"), edit.get("end_line")
        if isinstance(line, int) and not isinstance(line, bool):
            removed += (end - line + 1) if isinstance(end, int) and not isinstance(end, bool) and end >= line else 1
        else:
            removed += _lines(edit.get("old_text"))
    return added, removed


def _titled(verb: str) -> Callable[[Args, str], str]:
    return lambda _args, summary: f"{verb} {summary}".strip()


def _write_title(args: Args, summary: str) -> str:
    return f"Write {summary} (+{_lines(args.get('content'))})"


def _edit_title(args: Args, summary: str) -> str:
    added, removed = _edit_counts(args)
    return f"Edit {summary} (+{added} -{removed})"


def _patch_files(args: Args) -> list[str]:
    patch = _text(args, "patch")
    return [
        line.split(":", 1)[1].strip()
        for line in patch.splitlines()
        if line.startswith(("*** Add File:", "*** Update File:", "*** Delete File:"))
    ]


def _patch_summary(args: Args) -> str:
    files = _patch_files(args)
    return _short(", ".join(files)) if files else _json_summary(args)


def _patch_title(args: Args, summary: str) -> str:
    added = removed = 0
    for line in _text(args, "patch").splitlines():
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return f"Patch {summary} (+{added} -{removed})"


def _todo_title(_args: Args, summary: str) -> str:
    return f"Update the plan ({summary})"


# ---------------------------------------------------------------- the specs


@dataclass(frozen=True)
class ToolSpec:
    name: str
    kind: ToolKind = "other"
    changes_files: bool = False  # needs approval (unless auto) and a checkpoint before it runs
    path_arg: str | None = None  # the argument naming the file or folder it works on
    approval: ApprovalKind = "arguments"  # the view an approval shows (agent/approvals.py)
    summarize: Callable[[Args], str] = field(default=_json_summary, repr=False)
    entitle: Callable[[Args, str], str] | None = field(default=None, repr=False)
    asks: bool = False  # asked before it runs though it changes no file (it reaches the network)

    @property
    def needs_approval(self) -> bool:
        """Asked before it runs under approval "ask", refused under "read-only"."""
        return self.changes_files or self.asks

    @property
    def runs_commands(self) -> bool:
        """A shell: anything in the workspace may change (checkpoints snapshot it all)."""
        return self.kind == "execute"

    def summary(self, args: Any) -> str:
        """A short one-line summary of a call's arguments (progress messages, tool cards)."""
        return self.summarize(args) if isinstance(args, dict) else ""

    def title(self, args: Any) -> str:
        summary = self.summary(args)
        if self.entitle is not None:
            return clip(self.entitle(args if isinstance(args, dict) else {}, summary), TITLE_CHARS)
        if self.name.startswith("mcp__"):
            _, server, tool = (self.name.split("__", 2) + ["", ""])[:3]
            return clip(f"{server}: {tool} {summary}".strip(), TITLE_CHARS)
        return clip(f"{self.name} {summary}".strip(), TITLE_CHARS)


SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("read_file", "read", path_arg="filepath", summarize=_read_summary, entitle=_titled("Read")),
        ToolSpec("write_file", "edit", True, "filepath", "write", _file_summary, _write_title),
        ToolSpec("edit_file", "edit", True, "filepath", "edit", _file_summary, _edit_title),
        ToolSpec("apply_patch", "edit", True, None, "patch", _patch_summary, _patch_title),
        ToolSpec("bash", "execute", True, approval="command", summarize=_bash_summary, entitle=_titled("Run")),
        ToolSpec("grep", "search", path_arg="path", summarize=_grep_summary, entitle=_titled("Search")),
        ToolSpec("list_files", "search", path_arg="path", summarize=_list_summary, entitle=_titled("List")),
        ToolSpec("todo_write", "think", summarize=_todo_summary, entitle=_todo_title),
        ToolSpec("diagnostics", "read", summarize=_diagnostics_summary, entitle=_titled("Diagnostics of")),
        ToolSpec("web_fetch", "fetch", summarize=_url_summary, entitle=_titled("Fetch"), asks=True),
        ToolSpec("process_output", "read", summarize=_process_summary, entitle=_titled("Output of process")),
        ToolSpec("process_kill", "other", summarize=_process_summary, entitle=_titled("Stop process")),
    )
}


def default_spec(name: str, *, changes_files: bool = False) -> ToolSpec:
    """The spec of a tool the table does not know (MCP tools): kind other, JSON arguments."""
    return ToolSpec(name, "other", changes_files)


def spec_of(name: str, *, changes_files: bool = False) -> ToolSpec:
    """The tool's spec; `changes_files` marks a tool without one as changing files (an MCP
    tool that is not read-only)."""
    spec = SPECS.get(name)
    return spec if spec is not None else default_spec(name, changes_files=changes_files)


CHANGING_TOOLS: frozenset[str] = frozenset(name for name, spec in SPECS.items() if spec.changes_files)
ASKED_TOOLS: frozenset[str] = frozenset(name for name, spec in SPECS.items() if spec.needs_approval)


def summarize_args(name: str, args: Any) -> str:
    return spec_of(name).summary(args)
