"""`python -m tunacode_lsp.cli.github_action EVENTS EXIT_CODE`: the GitHub action's outputs.

action.yml runs `tunacode-lsp run --json | tee EVENTS | python -m ... --render` (the log
shows the plain view as it happens: answer, tool lines, summary), then this: it reads the last line (the
result, or the error of a request that never started) and writes the step outputs `text`,
`changed-files` (a JSON array), `exit-code` and `session-id` to `$GITHUB_OUTPUT`, and the
answer with what changed to `$GITHUB_STEP_SUMMARY`; it prints the session id. Multi-line values use the runner's
`name<<DELIMITER` form with a random delimiter no value can contain.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any, TextIO

MEANINGS = {
    0: "the model finished its answer",
    1: "an error (see the step's log)",
    2: "a usage or configuration problem",
    3: "stopped at the turn limit (max-turns)",
    4: "a tool call was denied (fail-on-denied)",
    5: "no file changed (require-changes)",
    6: "stopped at the cost cap (max-cost)",
    7: "the answer does not match output-schema",
    124: "the timeout ran out",
    130: "cancelled",
}
SUMMARY_TEXT_CHARS = 60_000  # the job summary holds 1 MiB per step; the answer gets most of it


def last_object(path: Path) -> dict[str, Any] | None:
    """The last JSON object line of the events file (None when there is none)."""

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def output_block(name: str, value: str) -> str:
    delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    while delimiter in value:  # as good as impossible; still never ambiguous
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def outputs(last: dict[str, Any] | None, exit_code: int) -> dict[str, str]:
    result = last if last and last.get("type") == "result" else {}
    return {
        "text": str(result.get("text") or ""),
        "changed-files": json.dumps(result.get("changedFiles") or [], ensure_ascii=False),
        "exit-code": str(exit_code),
        "session-id": str(result.get("sessionId") or ""),
    }


def summary(last: dict[str, Any] | None, exit_code: int) -> str:
    meaning = MEANINGS.get(exit_code, "unexpected")
    lines = ["## TunaCode", ""]
    if last is None or last.get("type") != "result":
        message = (last or {}).get("message") or "no result (see the step's log)"
        lines += [f"**exit code {exit_code}** ({meaning}): {message}", ""]
        return "\n".join(lines) + "\n"
    text = str(last.get("text") or "").strip() or "_(no text)_"
    if len(text) > SUMMARY_TEXT_CHARS:
        text = text[:SUMMARY_TEXT_CHARS] + "\n\n… (cut; the whole answer is the `text` output)"
    usage = last.get("usage") or {}
    changed = last.get("changedFiles") or []
    denied = last.get("deniedToolCalls") or []
    lines += [
        text,
        "",
        f"**exit code {exit_code}** ({meaning}) · stop reason `{last.get('stopReason')}` · "
        f"{last.get('turns', 0)} turns · {len(last.get('toolCalls') or [])} tool calls · "
        f"{int(usage.get('totalTokens') or 0):,} tokens · cost ${float(usage.get('cost') or 0.0):.4f}",
        "",
    ]
    if changed:
        lines += ["**Changed files**", "", *[f"- `{path}`" for path in changed], ""]
    else:
        lines += ["No file changed.", ""]
    if denied:
        lines += ["**Denied tool calls**", "", *[f"- `{d.get('name')}` {d.get('summary') or ''}".rstrip() for d in denied], ""]
    lines += [f"Session `{last.get('sessionId')}`", ""]
    return "\n".join(lines) + "\n"


def render(lines: TextIO, out: TextIO) -> None:
    """The plain view of a JSON Lines event stream, as it arrives (for the job's log)."""

    from tunacode_lsp.cli.output import PlainOutput, workflow_command_fence

    view = PlainOutput(out, out, session_hint=False, colour=False)
    with workflow_command_fence([out]):  # action.yml fences its whole step (TUNACODE_CI_FENCED=1)
        _render_lines(lines, view)


def _render_lines(lines: TextIO, view: Any) -> None:
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if obj.get("type") == "result":
            view.result(obj, obj)
        elif obj.get("type") == "error":
            continue  # the CLI printed it on stderr, which the step's log already shows
        else:
            view.event(obj)


def merged_settings(settings: str, permissions: str) -> dict[str, Any]:
    """The `settings` and `permissions` inputs as one settings object (ValueError: one line)."""

    merged: dict[str, Any] = {}
    for name, text in (("settings", settings), ("permissions", permissions)):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the {name} input is not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"the {name} input must be a JSON object, got {type(value).__name__}")
        if name == "permissions":
            if "permissions" in merged:
                raise ValueError("permissions are given both in the settings input and the permissions input: give one")
            merged["permissions"] = value
        else:
            merged.update(value)
    return merged


def main(argv: list[str]) -> int:
    if argv == ["--render"]:
        render(sys.stdin, sys.stdout)
        return 0
    if len(argv) == 2 and argv[0] == "--settings":  # IN_SETTINGS + IN_PERMISSIONS -> one file
        try:
            merged = merged_settings(os.environ.get("IN_SETTINGS", ""), os.environ.get("IN_PERMISSIONS", ""))
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        Path(argv[1]).write_text(json.dumps(merged), encoding="utf-8")
        return 0
    if len(argv) != 2 or not argv[1].lstrip("-").isdigit():
        print("usage: python -m tunacode_lsp.cli.github_action EVENTS_FILE EXIT_CODE", file=sys.stderr)
        return 2
    events, exit_code = Path(argv[0]), int(argv[1])
    last = last_object(events)
    values = outputs(last, exit_code)
    out_path, summary_path = os.environ.get("GITHUB_OUTPUT"), os.environ.get("GITHUB_STEP_SUMMARY")
    if out_path:
        with open(out_path, "a", encoding="utf-8") as out:
            for name, value in values.items():
                out.write(output_block(name, value))
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as out:
            out.write(summary(last, exit_code))
    print(values["session-id"])  # for the action's next command
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
