"""What the server asks of a rich client's editor, each with a bounded wait.

`tunacode/diagnostics {uris}` -> `{items: [{uri, diagnostics}]}`: the errors the editor's
other language servers report, for clients that advertise
`capabilities.experimental.tunacode.diagnostics`. A client that does not answer in time is
sent `$/cancelRequest` and the tool gets a clear error; the request goes on.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls import uris
from pygls.lsp.server import LanguageServer

from tunacode_lsp.lsp.client_requests import ClientDidNotAnswer, ask_client

if TYPE_CHECKING:
    from tunacode_lsp.tools.diagnostics import DiagnosticsSource

log = logging.getLogger(__name__)

DIAGNOSTICS_REQUEST = "tunacode/diagnostics"
EDITOR_WAIT_SECONDS = 5.0


def client_offers(ls: LanguageServer, feature: str) -> bool:
    """`capabilities.experimental.tunacode.<feature>` is true in the client's initialize."""

    experimental = getattr(ls.client_capabilities, "experimental", None)
    tunacode = experimental.get("tunacode") if isinstance(experimental, dict) else None
    return isinstance(tunacode, dict) and tunacode.get(feature) is True


def _plain(value: Any) -> Any:
    """pygls hands results of methods it has no type for as namedtuples; make them JSON again."""

    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def diagnostics_source(ls: LanguageServer) -> DiagnosticsSource | None:
    if not client_offers(ls, "diagnostics"):
        return None

    async def fetch(paths: list[Path]) -> dict[Path, list[dict[str, Any]]]:
        from tunacode_lsp.tools.errors import ToolError

        by_uri = {p.as_uri(): p for p in paths}
        try:
            answer = _plain(await ask_client(
                ls, DIAGNOSTICS_REQUEST, {"uris": list(by_uri)}, timeout=EDITOR_WAIT_SECONDS, label="tunacode-diagnostics"
            ))
        except ClientDidNotAnswer:
            raise ToolError(f"The editor did not report diagnostics within {EDITOR_WAIT_SECONDS:g} s.") from None
        except Exception as exc:  # the client refused or failed
            raise ToolError(f"The editor could not report diagnostics: {str(exc)[:200]}") from None
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list):
            raise ToolError("The editor's diagnostics answer was not understood (expected {items: [...]}).")
        found: dict[Path, list[dict[str, Any]]] = {}
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
                continue
            path = by_uri.get(item["uri"]) or _path_of(item["uri"], by_uri)
            diagnostics = item.get("diagnostics")
            if path is not None and isinstance(diagnostics, list):
                found[path] = [d for d in diagnostics if isinstance(d, dict)]
        return found

    return fetch


def _path_of(uri: str, by_uri: dict[str, Path]) -> Path | None:
    """Clients may spell a URI differently (percent-encoding, drive case): compare real paths."""

    fs_path = uris.to_fs_path(uri)
    if not fs_path:
        return None
    real = os.path.realpath(fs_path)
    return next((p for p in by_uri.values() if str(p) == real), None)
