"""Where the server keeps its data (the session database, the log file), and the stable id of a project folder."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

DB_FILENAME = "sessions.sqlite3"
APP_DIRNAME = "tunacode-lsp"


def data_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The server's data folder: `$TUNACODE_HOME`, else `$XDG_DATA_HOME/tunacode-lsp`, else
    `~/.local/share/tunacode-lsp`. The one place these rules live (store, log file, checkpoints)."""
    home = env.get("TUNACODE_HOME")
    if home:
        return Path(home).expanduser()
    data_home = env.get("XDG_DATA_HOME")
    if data_home and Path(data_home).is_absolute():  # the XDG spec ignores relative values
        return Path(data_home).expanduser() / APP_DIRNAME
    user_home = env.get("HOME")
    base = Path(user_home) if user_home else Path.home()
    return base / ".local" / "share" / APP_DIRNAME


def default_store_path(env: Mapping[str, str] = os.environ) -> Path:
    """`sessions.sqlite3` in the data folder."""
    return data_dir(env) / DB_FILENAME


def store_path(session_store: str | None) -> Path:
    """The database file: in the `sessionStore` folder when one is set, else in the data folder."""
    return Path(session_store).expanduser() / DB_FILENAME if session_store else default_store_path()


def project_id_for(cwd: str | Path) -> str:
    """First 16 hex digits of sha256 of the resolved folder path."""
    resolved = str(Path(cwd).expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:16]
