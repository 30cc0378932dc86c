"""Consent to a project settings file's exact content (`.tunacode/settings.json`).

A checked-in settings file may hold what loosens the agent (allow rules, hooks, approval
`auto`, ...: agent/settings_files.py `NEEDS_CONSENT`). Those parts apply only after the
user consented to the file's fingerprint: the sha256 of its exact bytes, with the workspace
it belongs to. Any change of one byte is another fingerprint, asked again.

The two functions below are the whole interface (`is_consented`, `record_consent`), so
the project's general consent mechanism for repository-defined definitions can take their
place without touching the callers. Remembered consents live in the data folder
(`settings-consent.json`, one list of fingerprints per workspace); a consent given with
`persist: false` (`run --trust-workspace`) lasts for this server process only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

from tunacode_lsp.store.locations import data_dir, project_id_for

CONSENT_FILE = "settings-consent.json"
MAX_REMEMBERED = 200  # fingerprints per workspace

_lock = threading.Lock()
_this_process: set[tuple[str, str]] = set()


def settings_fingerprint(shown_path: str, content: bytes) -> str:
    return hashlib.sha256(b"project-settings\0" + shown_path.encode() + b"\0" + content).hexdigest()


def _consent_path() -> Path:
    return data_dir() / CONSENT_FILE


def _read() -> dict[str, list[str]]:
    try:
        with open(_consent_path(), "rb") as handle:
            data = json.loads(handle.read(4 * 1024 * 1024))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_consented(root: Path, fingerprint: str) -> bool:
    """Blocking (a small file read): call from a thread."""

    project = project_id_for(root)
    if (project, fingerprint) in _this_process:
        return True
    with _lock:
        remembered = _read().get(project)
    return isinstance(remembered, list) and fingerprint in remembered


def record_consent(root: Path, fingerprint: str, *, persist: bool = True) -> None:
    """Blocking: call from a thread. Writes the file atomically (0600)."""

    project = project_id_for(root)
    _this_process.add((project, fingerprint))
    if not persist:
        return
    path = _consent_path()
    with _lock:
        data = _read()
        kept = [f for f in data.get(project, []) if isinstance(f, str) and f != fingerprint]
        data[project] = [*kept[-(MAX_REMEMBERED - 1):], fingerprint]
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".consent-", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(data, handle)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
