"""Consent to a project settings file's exact content (`.tunacode/settings.json`).

A checked-in settings file may hold what loosens the agent (allow rules, hooks, approval
`auto`, ...: agent/settings_files.py `NEEDS_CONSENT`). Those parts apply only after the
user consented to the file's fingerprint: the sha256 of its exact bytes, with the workspace
it belongs to. Any change of one byte is another fingerprint, asked again.

The two functions below are the whole interface (`is_consented`, `record_consent`). Answers
are kept in the one consent store of repository-defined definitions (store/consent_store.py,
kind `project-settings`), next to the MCP servers' of `.mcp.json`; a consent given with
`persist: false` (`run --trust-workspace`) lasts for this server process only.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from tunacode_lsp.store.locations import project_id_for

KIND = "project-settings"
NAME = ".tunacode/settings.json"

_lock = threading.Lock()
_this_process: set[tuple[str, str]] = set()


def settings_fingerprint(shown_path: str, content: bytes) -> str:
    return hashlib.sha256(b"project-settings\0" + shown_path.encode() + b"\0" + content).hexdigest()


def is_consented(root: Path, fingerprint: str) -> bool:
    """Blocking (a small SQLite read): call from a thread."""

    from tunacode_lsp.store.consent_store import ConsentStore, consent_store_path  # sqlite3: not at start-up

    project = project_id_for(root)
    if (project, fingerprint) in _this_process:
        return True
    path = consent_store_path()
    if not path.exists():  # nothing was ever consented: do not create the store to say so
        return False
    return ConsentStore(path).decision(project, KIND, NAME, fingerprint) is True


def record_consent(root: Path, fingerprint: str, *, persist: bool = True) -> None:
    """Blocking: call from a thread."""

    from tunacode_lsp.store.consent_store import ConsentStore, consent_store_path

    project = project_id_for(root)
    with _lock:
        _this_process.add((project, fingerprint))
    if persist:
        ConsentStore(consent_store_path()).record(project, KIND, NAME, fingerprint, True)
