"""Code actions that ask the agent about code: `TunaCode: Fix` and `TunaCode: Explain`.

Each is a plain LSP `Command` running `tunacode.request` with a prompt and the context (the
selection, with its text, and the diagnostics the client sent), so every LSP client reaches
the agent from its own code-action menu with no plugin. Executing one starts the request
at once: plain clients cannot edit a prompt, and rich clients (the VS Code panel, the Neovim
plugin) may intercept the command and let the user edit it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types

from tunacode_lsp.contract.names import COMMAND_REQUEST

FIX_TITLE = "TunaCode: Fix"
EXPLAIN_TITLE = "TunaCode: Explain"
MAX_DIAGNOSTICS = 20
MAX_SELECTION_CHARS = 200_000  # the contract's bound on a selection's text


def _range(r: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


def _is_empty(r: types.Range) -> bool:
    return (r.start.line, r.start.character) == (r.end.line, r.end.character)


def _diagnostic_item(uri: str, d: types.Diagnostic) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "diagnostic", "uri": uri, "range": _range(d.range), "message": d.message[:4_000]}
    if d.severity is not None:
        item["severity"] = int(d.severity)
    if d.source:
        item["source"] = d.source
    if d.code is not None:
        item["code"] = d.code
    return item


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    """`context.only` filters by kind prefix; an empty kind is offered only when nothing is asked."""

    if not only:
        return True
    return any(kind == want or kind.startswith(want + ".") for want in only if want)


def code_actions(params: types.CodeActionParams, selected: str | None, file_name: str) -> list[types.CodeAction]:
    """The TunaCode actions for a range; `selected` is the range's text when the document is open."""

    uri = params.text_document.uri
    diagnostics = list(params.context.diagnostics or [])[:MAX_DIAGNOSTICS]
    selection: dict[str, Any] | None = None
    if not _is_empty(params.range):
        selection = {"type": "selection", "uri": uri, "range": _range(params.range)}
        if selected is not None and len(selected) <= MAX_SELECTION_CHARS:
            selection["text"] = selected
    if selection is None and not diagnostics:
        return []
    context = ([selection] if selection else []) + [_diagnostic_item(uri, d) for d in diagnostics]
    line = (diagnostics[0].range.start.line if diagnostics else params.range.start.line) + 1
    only = params.context.only

    actions: list[types.CodeAction] = []
    if diagnostics and _wanted(only, types.CodeActionKind.QuickFix):
        problems = "the problem" if len(diagnostics) == 1 else f"the {len(diagnostics)} problems"
        prompt = f"Fix {problems} reported in {file_name} at line {line} (see the diagnostics in the context)."
        actions.append(_action(FIX_TITLE, types.CodeActionKind.QuickFix, prompt, context, diagnostics))
    if _wanted(only, types.CodeActionKind.Empty):
        what = "this code" if selection else f"the problem reported in {file_name} at line {line}"
        prompt = f"Explain {what}. Do not change any file."
        actions.append(_action(EXPLAIN_TITLE, types.CodeActionKind.Empty, prompt, context, None))
    return actions


def _action(
    title: str, kind: str, prompt: str, context: list[dict[str, Any]], diagnostics: list[types.Diagnostic] | None
) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=kind,
        diagnostics=diagnostics,
        command=types.Command(title=title, command=COMMAND_REQUEST, arguments=[{"prompt": prompt, "context": context}]),
    )

