"""Session operations for the server: the SQLite store off the event loop, in wire types.

Store calls run on a small dedicated thread pool, so database work never blocks the event
loop and never competes with pygls's own threads; but the small ones (`QUICK_CALLS`: a
message appended, a lease taken, a version read; a request makes ~17 of them) run on the
event loop itself through the store's quick connection (`SessionStore.run_now`), which
never waits for a lock: a thread hop cost 0.3-2 ms each, the statements ~0.1 ms. A call
whose arguments are large (a big tool result), or that meets a locked database, goes to
the pool as before, and the WAL is checkpointed there (`WAL_CHECKPOINT_EVERY`). Nothing
changes for the crash contract: each call returns once it is committed.
Records become protocol `SessionInfo`s here, and `StoreMessageLog` is the agent's
MessageLog for one session.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import SESSION_BUSY, ParamsError, SessionInfo, Usage
from tunacode_lsp.core.history import HistoryCleaner
from tunacode_lsp.core.redact import process_redactor
from tunacode_lsp.store.errors import SessionBusy, SessionNotFound, WouldWait
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.locations import data_dir, project_id_for
from tunacode_lsp.store.records import RequestCheckpointRecord
from tunacode_lsp.store.session_state import compacted_view

if TYPE_CHECKING:
    from tunacode_lsp.store.session_store import SessionStore

T = TypeVar("T")
log = logging.getLogger(__name__)

WRITE_RETRY_SECONDS = 60.0  # on top of the store's busy timeout

# Run on the event loop when small (see the module docstring): bounded statements, one row each.
QUICK_CALLS = frozenset({
    "get_session", "version_of", "get_plan", "create_session", "acquire", "release", "record_request",
    "set_request_trees", "set_request_end", "append_messages_versioned", "set_plan_versioned",
})
QUICK_READS = frozenset({"get_session", "version_of", "get_plan"})
QUICK_MAX_CHARS = 64_000  # the arguments' text at most (a larger message goes to the pool)
WAL_CHECKPOINT_EVERY = 64  # quick writes between two checkpoints of the WAL (on the pool)
QUICK_VIEW_MESSAGES = 256  # a cached history this short is cleaned on the event loop (well under 1 ms)

MAX_TITLE_CHARS = 1_000
MAX_PATH_BYTES = 4_096  # PATH_MAX on Linux


def session_info(record: SessionInfo, *, busy: bool | None = None) -> SessionInfo:
    """The session as the store read it, with `busy` as this server knows it when given."""
    return record if busy is None else attrs.evolve(record, busy=busy)


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


class CachedHistory:
    """One session's stored messages as this server last saw them, and the cleaned view.

    `version` is the store's (modified_us, message_count): every write to the session, from
    any process, changes it, so the entry is current exactly while the store reports the
    same version. This server's own appends extend the entry (no reload), and the view is
    cleaned on from where it ended (`HistoryCleaner`), not again whole: the same view as
    cleaning everything, in O(appended) (tests/unit/test_cached_history.py).
    """

    def __init__(self, version: tuple[int, int], stored: list[dict[str, Any]], compaction: dict[str, Any] | None) -> None:
        self.version = version
        self.stored = stored
        self.compaction = compaction
        self.view: list[dict[str, Any]] | None = None  # cleaned; None until needed again
        self._cleaner: HistoryCleaner | None = None
        self._cleaned_count = 0  # how many of `stored` the cleaner has seen
        self._building = threading.Lock()  # one build at a time (the store's pool has 2 threads)
        self._changing = threading.Lock()  # held a moment: an append against a view being set

    def append(self, message: dict[str, Any], version: tuple[int, int]) -> None:
        """This server stored `message`, and the session is now at `version`."""
        with self._changing:
            self.stored.append(message)
            self.version = version
            self.view = None

    def restamp(self, before: tuple[int, int], after: tuple[int, int]) -> None:
        """This server wrote something that is not a message (the plan): the stored
        messages, the compaction and the view stay; only the version moves."""
        with self._changing:
            if self.version == before:
                self.version = after

    def build_view(self) -> list[dict[str, Any]]:
        """The cleaned view of `stored` (on a store thread: O(appended) after appends)."""
        with self._building:
            view = self.view
            if view is not None:
                return view
            count = len(self.stored)
            cleaner = self._cleaner
            first_kept = self.compaction["firstKept"] if self.compaction is not None else 0
            if cleaner is None or first_kept > self._cleaned_count or not cleaner.extend(self.stored[self._cleaned_count:count]):
                cleaner = self._cleaner = HistoryCleaner()
                cleaner.feed(compacted_view(self.stored[:count], self.compaction))
            self._cleaned_count = count
            view = cleaner.view()
            with self._changing:
                if len(self.stored) == count:  # else an append came meanwhile: the next call extends
                    self.view = view
            return view

    def stored_index_of(self, message: object) -> int | None:
        """Index in `stored` of a message of the view (by identity), None if it was rebuilt."""
        return next((i for i in range(len(self.stored) - 1, -1, -1) if self.stored[i] is message), None)


MAX_CACHED_SESSIONS = 8


class SessionService:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.owner = new_owner()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tunacode-db")
        self._store: SessionStore | None = None
        self._histories: dict[str, CachedHistory] = {}  # most recently used last
        self._compacting: dict[str, asyncio.Event] = {}  # session id -> the running compaction's abort signal
        self._quick_writes = 0  # since the WAL was last checkpointed
        self._checkpointing = False

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        if self._store is None:
            from tunacode_lsp.store.session_store import SessionStore

            self._store = await loop.run_in_executor(self._pool, SessionStore, self.path)
        if method in QUICK_CALLS and _text_size((args, kwargs), QUICK_MAX_CHARS) <= QUICK_MAX_CHARS:
            try:
                result = self._store.run_now(method, *args, **kwargs)
            except WouldWait:  # another connection writes now: wait for it on the pool
                pass
            else:
                if method not in QUICK_READS:
                    self._wrote_quickly()
                return result
        return await loop.run_in_executor(self._pool, partial(getattr(self._store, method), *args, **kwargs))

    def _wrote_quickly(self) -> None:
        """Every WAL_CHECKPOINT_EVERY quick writes, a checkpoint of the WAL on the pool (the
        quick connection never checkpoints at commit, which may fsync): not awaited."""

        self._quick_writes += 1
        if self._quick_writes < WAL_CHECKPOINT_EVERY or self._checkpointing or self._store is None:
            return
        self._quick_writes = 0
        self._checkpointing = True

        def done(future: Any) -> None:
            self._checkpointing = False
            if not future.cancelled() and future.exception() is not None:
                log.warning("checkpointing the session database's WAL failed: %s", future.exception())

        try:
            self._pool.submit(self._store.checkpoint_wal).add_done_callback(done)
        except RuntimeError:  # the pool is shut down: the server is closing
            self._checkpointing = False

    async def create(self, *, cwd: str, model: str, title: str = "") -> SessionInfo:
        if len(title) > MAX_TITLE_CHARS:
            raise ParamsError(f"params.title is longer than {MAX_TITLE_CHARS} characters")
        record = await self._call("create_session", cwd=_usable_path(cwd), model=model, title=title)
        version = await self._call("version_of", record.session_id)
        if version is not None:  # its history is known: empty (the first request loads nothing)
            entry = self._histories[record.session_id] = CachedHistory(version, [], None)
            entry.view = []
            while len(self._histories) > MAX_CACHED_SESSIONS:
                self._histories.pop(next(iter(self._histories)))
        return record

    async def get(self, session_id: str) -> SessionInfo | None:
        return await self._call("get_session", session_id)

    async def list(self, *, cwd: str | None, limit: int) -> list[SessionInfo]:
        project = project_id_for(_usable_path(cwd)) if cwd else None
        return await self._call("list_sessions", project_id=project, limit=limit)

    async def delete(self, session_id: str) -> bool:
        """Delete a session no other server is running a request on (-32002 otherwise)."""

        try:
            deleted = await self._call("delete_session", session_id, owner=self.owner)
        except SessionBusy as exc:
            raise CommandError(SESSION_BUSY, f"{exc}; stop it first") from None
        from tunacode_lsp.tools.kept_outputs import remove_session_outputs  # the tools load lazily

        # the whole outputs its cut tool results named go with it
        await asyncio.to_thread(remove_session_outputs, data_dir(), session_id)
        return deleted

    async def messages(self, session_id: str) -> builtins.list[dict[str, Any]]:
        return await self._call("load_messages", session_id)

    async def history(self, session_id: str) -> builtins.list[dict[str, Any]]:
        """What the model is sent of the session: the stored messages (from the compaction's
        first kept one, after its summary), cleaned so every invariant holds.

        Kept in memory between requests (CachedHistory): a request pays a version check,
        and a re-clean only after appends. Loading, checking and cleaning run on the store's
        threads, never on the event loop.
        """

        entry = self._histories.pop(session_id, None)
        if entry is None or entry.version != await self._call("version_of", session_id):
            version, stored, compaction = await self._call("load_state", session_id)
            entry = CachedHistory(version, stored, compaction)
        self._histories[session_id] = entry
        while len(self._histories) > MAX_CACHED_SESSIONS:
            self._histories.pop(next(iter(self._histories)))
        view = entry.view
        if view is None and len(entry.stored) <= QUICK_VIEW_MESSAGES:  # no thread hop for a short one
            view = entry.build_view()
        elif view is None:
            view = await asyncio.get_running_loop().run_in_executor(self._pool, entry.build_view)
        return list(view)

    def start_compaction(self, session_id: str) -> asyncio.Event:
        """The abort signal of a `tunacode.session.compact` running on the session."""
        signal = asyncio.Event()
        self._compacting[session_id] = signal
        return signal

    def end_compaction(self, session_id: str) -> None:
        self._compacting.pop(session_id, None)

    def abort_compaction(self, *, session_id: str) -> int:
        """Stop the session's running compaction; how many were stopped (0 or 1)."""
        signal = self._compacting.get(session_id)
        if signal is None:
            return 0
        signal.set()
        return 1

    async def save_compaction(
        self, session_id: str, history: builtins.list[dict[str, Any]], cut: int, summary: str, usage: Usage | None
    ) -> bool:
        """Store that `summary` stands for `history[:cut]`, `history` being what `history()`
        returned (its messages are the cached ones, found again by identity). False when
        the session changed meanwhile or the cut is not a stored message."""

        entry = self._histories.get(session_id)
        if entry is None:
            return False
        first = len(entry.stored) if cut >= len(history) else entry.stored_index_of(history[cut])
        if first is None:
            return False
        return await self.set_compaction(
            session_id, {"summary": summary, "firstKept": first}, expect_count=entry.version[1], usage=usage
        )

    async def plan(self, session_id: str) -> builtins.list[dict[str, str]]:
        return await self._call("get_plan", session_id)

    async def set_plan(self, session_id: str, items: builtins.list[dict[str, str]]) -> None:
        before, after = await self._call("set_plan_versioned", session_id, items)
        entry = self._histories.get(session_id)
        if entry is not None:
            if entry.version == before:  # nobody else wrote in between: the messages are the same
                entry.restamp(before, after)
            else:
                del self._histories[session_id]

    async def export(self, session_id: str) -> dict[str, Any]:
        return await self._call("export_document", session_id)

    async def import_(self, document: Any) -> SessionInfo:
        return await self._call("import_document", document)

    async def fork(self, session_id: str, message_count: int | None, *, request_id: str | None = None) -> SessionInfo:
        """A copy of the session's messages (all, the first `message_count`, or those before
        `request_id`'s prompt). Only the store changes: a fork never touches the files."""

        if request_id is not None:
            if await self.get(session_id) is None:
                raise SessionNotFound(session_id)
            rows = await self.request_checkpoints(session_id)
            row = next((r for r in rows if r.request_id == request_id), None)
            if row is None:
                raise ParamsError(f"params.requestId: session {session_id} has no request {request_id[:80]!r}")
            message_count = row.first_seq
        return await self._call("fork_session", session_id, message_count)

    async def acquire(self, session_id: str, owner: str) -> bool:
        """Take the session's busy lease for `owner` (one owner per request)."""
        return await self._call("acquire", session_id, owner)

    async def release(self, session_id: str, owner: str) -> None:
        await self._call("release", session_id, owner)

    async def append(
        self, session_id: str, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None, model: str | None
    ) -> int:
        """Store one finished message. A database another process keeps locked past the busy
        timeout is tried again with backoff for up to WRITE_RETRY_SECONDS: a finished message
        is never dropped because of a lock (it fails loudly after that)."""

        loop = asyncio.get_running_loop()
        deadline = loop.time() + WRITE_RETRY_SECONDS
        delay = 0.1
        while True:
            try:
                before, after = await self._call(
                    "append_messages_versioned",
                    session_id,
                    [message],
                    usage_delta=usage.as_store_dict() if usage else None,
                    thoughts=thoughts,
                    model=model,
                )
                break
            except Exception as exc:
                import sqlite3  # loaded with the store already (not at start-up)

                if not isinstance(exc, sqlite3.OperationalError) or ("locked" not in str(exc) and "busy" not in str(exc)):
                    raise
                if loop.time() + delay > deadline:
                    raise
                log.warning("session database locked; writing again in %.1f s", delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        entry = self._histories.get(session_id)
        if entry is not None:
            if entry.version == before:  # nobody else wrote in between: extend the entry
                entry.append(message, after)
            else:
                del self._histories[session_id]
        return int(after[1])

    async def set_compaction(
        self, session_id: str, compaction: dict[str, Any], *, expect_count: int, usage: Usage | None
    ) -> bool:
        done = await self._call("set_compaction", session_id, compaction, expect_count=expect_count, usage_delta=usage.as_store_dict() if usage else None)
        self._histories.pop(session_id, None)
        return bool(done)

    async def record_request(self, session_id: str, request_id: str, *, workspace: str) -> int:
        """A request starts: where its messages start (see SessionStore.record_request)."""
        return await self._call("record_request", session_id, request_id, workspace=workspace)

    async def set_request_trees(self, session_id: str, request_id: str, *, before: str | None = None, after: str | None = None) -> None:
        await self._call("set_request_trees", session_id, request_id, before_tree=before, after_tree=after)

    async def request_checkpoints(self, session_id: str) -> builtins.list[RequestCheckpointRecord]:
        return await self._call("request_checkpoints", session_id)

    async def workspace_checkpoints(self, workspace: str) -> builtins.list[tuple[RequestCheckpointRecord, int, str | None]]:
        """Every session's request checkpoints in a workspace (SessionStore.workspace_checkpoints)."""
        return await self._call("workspace_checkpoints", workspace)

    async def set_request_end(self, session_id: str, request_id: str, events: builtins.list[dict[str, Any]]) -> None:
        await self._call("set_request_end", session_id, request_id, events)

    async def events(self, session_id: str, messages: builtins.list[dict[str, Any]], model: str) -> builtins.list[dict[str, Any]]:
        """The stored requests of the session as the events they emitted (agent/projection.py)."""
        from tunacode_lsp.agent.projection import project_session  # the agent stack: not at the server's start

        trailers = await self._call("request_ends", session_id)
        marks = {r.first_seq: r.request_id for r in await self.request_checkpoints(session_id)}
        return await asyncio.to_thread(
            project_session, messages, session_id=session_id, model=model, trailers=trailers, marks=marks
        )

    async def rewind(self, session_id: str, request_id: str) -> SessionInfo:
        """Cut the history back to before the request (KeyError: no such request)."""
        try:
            return await self._call("rewind_session", session_id, request_id)
        finally:
            self._histories.pop(session_id, None)

    def close(self) -> None:
        if self._store is not None:
            self._pool.submit(self._store.close).result()
        self._pool.shutdown(wait=False)


def _text_size(value: Any, limit: int) -> int:
    """The characters of the strings in `value` (dicts, lists, tuples), counted up to just
    past `limit`: enough to say whether a call is small. With orjson loaded (the store loads
    it), the length of the value's JSON, an upper bound (every string is there, as UTF-8
    bytes, with its quotes), in C: a stored message's strings counted in Python cost more
    than the rest of its append on the loop (issue 35)."""

    orjson = sys.modules.get("orjson")
    if orjson is not None:
        try:
            return len(orjson.dumps(value))
        except TypeError:  # not JSON data (a key that is not a string, an int past 64 bits): counted below
            pass
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(k for k in item if isinstance(k, str))
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return total


class StoreMessageLog:
    """The agent's MessageLog: each finished message appended to one session at once."""

    def __init__(self, service: SessionService, session_id: str, model: str) -> None:
        self._service = service
        self._session_id = session_id
        self._model = model

    async def append(self, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None) -> None:
        redactor = process_redactor()  # no key is ever stored (nor exported, nor sent back)
        await self._service.append(
            self._session_id, redactor.value(message), usage=usage,
            thoughts=redactor.text(thoughts) if thoughts else thoughts, model=self._model,
        )

    async def save_plan(self, items: list[dict[str, str]]) -> None:
        await self._service.set_plan(self._session_id, items)

    async def save_request_end(self, request_id: str, events: list[dict[str, Any]]) -> None:
        await self._service.set_request_end(self._session_id, request_id, process_redactor().value(events))

    async def save_compaction(self, history: list[dict[str, Any]], cut: int, summary: str, usage: Usage) -> bool:
        return await self._service.save_compaction(self._session_id, history, cut, summary, usage)
