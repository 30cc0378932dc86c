"""A request's answer shown to a plain LSP client (issue 32, item 7).

A plain client (eglot, ALE, Neovim's built-in client) runs `tunacode.request` from a code
action and throws its result away: `TunaCode: Explain` answered into the void. A client is
rich when it declares `capabilities.experimental.tunacode` (the VS Code extension, the
Neovim plugin) or is the project's own CLI (`clientInfo.name` "tunacode-lsp ..."): those
render `tunacode/event` and keep today's path. A plain client gets the answer's text through
`window/logMessage` (whole) and `window/showMessage` (its first MAX_SHOWN characters), and a
failed request's error through `window/showMessage` (type Error).
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tunacode_lsp.contract.protocol import RequestResult

MAX_SHOWN = 2_000  # characters of the answer in window/showMessage (an echo area, a popup)
OWN_CLIENT_PREFIX = "tunacode"  # the CLI's clientInfo.name is "tunacode-lsp run"


def is_rich_client(ls: LanguageServer, client_name: str) -> bool:
    experimental = getattr(ls.client_capabilities, "experimental", None)
    declared = isinstance(experimental, dict) and isinstance(experimental.get("tunacode"), dict)
    return declared or client_name.startswith(OWN_CLIENT_PREFIX)


def shown_text(text: str) -> str:
    if len(text) <= MAX_SHOWN:
        return f"TunaCode: {text}"
    return f"TunaCode: {text[:MAX_SHOWN]}… (cut; the whole answer is in the server log)"


def announce_answer(ls: LanguageServer, client_name: str, result: RequestResult) -> None:
    """Show a plain client what the request answered (nothing for a rich client)."""

    if is_rich_client(ls, client_name):
        return
    text = result.text.strip()
    if text:
        ls.window_log_message(types.LogMessageParams(
            type=types.MessageType.Info, message=f"TunaCode answer ({result.request_id}):\n{text}"
        ))
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=shown_text(text)))
    if result.stop_reason == "error":
        why = result.error.message if result.error is not None else "unknown error"
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"TunaCode: the request failed: {why}"))
