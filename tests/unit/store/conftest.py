"""Shared fixtures for the session store tests: a real store in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tunacode_lsp.store.session_store import SessionStore


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "sessions.sqlite3"


@pytest.fixture
def store(store_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore(store_path)
    yield opened
    opened.close()
