"""Session operations for the server: the SQLite store off the event loop, in wire types.

Every store call runs on a small dedicated thread pool, so database work never blocks the
event loop and never competes with pygls's own threads. Records become protocol
`SessionInfo`s here, and `StoreMessageLog` is the agent's MessageLog for one session.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import SESSION_BUSY, ParamsError, SessionInfo, Usage
from tunacode_lsp.core.history import clean_history
from tunacode_lsp.store.errors import SessionBusy
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.locations import project_id_for
from tunacode_lsp.store.records import SessionRecord

if TYPE_CHECKING:
    from tunacode_lsp.store.session_store import SessionStore

T = TypeVar("T")

MAX_TITLE_CHARS = 1_000
MAX_PATH_BYTES = 4_096  # PATH_MAX on Linux


def session_info(record: SessionRecord, *, busy: bool | None = None) -> SessionInfo:
    return SessionInfo(
        session_id=record.session_id,
        title=record.title,
        cwd=record.cwd,
        project_id=record.project_id,
        model=record.model,
        created_at=record.created_at,
        modified_at=record.modified_at,
        message_count=record.message_count,
        usage=Usage.from_store_dict(record.usage),
        busy=record.busy if busy is None else busy,
    )


def _usable_path(cwd: str) -> str:
    """A folder path the OS could open; InvalidParams naming params.cwd otherwise."""

    try:
        encoded = os.fsencode(cwd)
    except UnicodeEncodeError:
        encoded = b"\0"
    if b"\0" in encoded or len(encoded) > MAX_PATH_BYTES:
        raise ParamsError(
            f"params.cwd: not a usable folder path (a NUL byte, a lone surrogate, or over {MAX_PATH_BYTES} bytes)"
        )
    return cwd


class SessionService:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.owner = new_owner()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tunacode-db")
        self._store: SessionStore | None = None

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        if self._store is None:
            from tunacode_lsp.store.session_store import SessionStore

            self._store = await loop.run_in_executor(self._pool, SessionStore, self.path)
        return await loop.run_in_executor(self._pool, partial(getattr(self._store, method), *args, **kwargs))

    async def create(self, *, cwd: str, model: str, title: str = "") -> SessionRecord:
        if len(title) > MAX_TITLE_CHARS:
            raise ParamsError(f"params.title is longer than {MAX_TITLE_CHARS} characters")
        return await self._call("create_session", cwd=_usable_path(cwd), model=model, title=title)

    async def get(self, session_id: str) -> SessionRecord | None:
        return await self._call("get_session", session_id)

    async def list(self, *, cwd: str | None, limit: int) -> list[SessionRecord]:
        project = project_id_for(_usable_path(cwd)) if cwd else None
        return await self._call("list_sessions", project_id=project, limit=limit)

    async def delete(self, session_id: str) -> bool:
        """Delete a session no other server is running a request on (-32002 otherwise)."""

        try:
            return await self._call("delete_session", session_id, owner=self.owner)
        except SessionBusy as exc:
            raise CommandError(SESSION_BUSY, f"{exc}; stop it first") from None

    async def messages(self, session_id: str) -> builtins.list[dict[str, Any]]:
        return await self._call("load_messages", session_id)

    async def history(self, session_id: str) -> builtins.list[dict[str, Any]]:
        """The stored messages, cleaned so every invariant holds before a model sees them."""

        return clean_history(await self.messages(session_id))

    async def plan(self, session_id: str) -> builtins.list[dict[str, str]]:
        return await self._call("get_plan", session_id)

    async def set_plan(self, session_id: str, items: builtins.list[dict[str, str]]) -> None:
        await self._call("set_plan", session_id, items)

    async def export(self, session_id: str) -> dict[str, Any]:
        return await self._call("export_document", session_id)

    async def import_(self, document: Any) -> SessionRecord:
        return await self._call("import_document", document)

    async def fork(self, session_id: str, message_count: int | None) -> SessionRecord:
        return await self._call("fork_session", session_id, message_count)

    async def acquire(self, session_id: str) -> bool:
        return await self._call("acquire", session_id, self.owner)

    async def release(self, session_id: str) -> None:
        await self._call("release", session_id, self.owner)

    async def append(
        self, session_id: str, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None, model: str | None
    ) -> int:
        return await self._call(
            "append_messages",
            session_id,
            [message],
            usage_delta=usage.as_store_dict() if usage else None,
            thoughts=thoughts,
            model=model,
        )

    def close(self) -> None:
        if self._store is not None:
            self._pool.submit(self._store.close).result()
        self._pool.shutdown(wait=False)


class StoreMessageLog:
    """The agent's MessageLog: each finished message appended to one session at once."""

    def __init__(self, service: SessionService, session_id: str, model: str) -> None:
        self._service = service
        self._session_id = session_id
        self._model = model

    async def append(self, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None) -> None:
        await self._service.append(self._session_id, message, usage=usage, thoughts=thoughts, model=self._model)

    async def save_plan(self, items: list[dict[str, str]]) -> None:
        await self._service.set_plan(self._session_id, items)
