"""Record consent for every server of a workspace's `.mcp.json`, as if the user had answered
Allow to each prompt (agent/workspace_consent.py): for tests and demos that open a workspace
in a real editor and cannot click the prompt. Prints each server and its fingerprint.

Run: TUNACODE_HOME=... python -m tunacode_lsp.devtools.consent WORKSPACE
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tunacode_lsp.agent.mcp.config import parse_servers, read_workspace_file
from tunacode_lsp.agent.mcp.consent import KIND, consent_request_for
from tunacode_lsp.store.consent_store import ConsentStore, consent_store_path
from tunacode_lsp.store.locations import project_id_for


def consent_all(root: Path) -> list[tuple[str, str]]:
    raw, warnings = read_workspace_file(root)
    specs, more = parse_servers(raw, "workspace")
    for warning in warnings + more:
        print(f"warning: {warning}", file=sys.stderr)
    store = ConsentStore(consent_store_path())
    recorded = []
    for spec in specs:
        request = asyncio.run(consent_request_for(spec, root))
        store.record(project_id_for(root), KIND, spec.name, request.fingerprint, True)
        recorded.append((spec.name, request.fingerprint))
    return recorded


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for name, fingerprint in consent_all(Path(argv[0])):
        print(f"{name} {fingerprint[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
