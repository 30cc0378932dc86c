"""Every request's effect on the workspace, recorded so it can be shown and undone.

A request gets a row in the store (`request_checkpoints`: where its messages start, the
workspace tree before it and after it) and snapshots of the workspace in the shadow
repository (agent/shadow_repo.py): before the request, before each shell command (cheap;
the latest one stands in as the "after" of a request whose server died), and after the
request. Shell commands are recorded like every other change, because the snapshots look
at the files, not at the tools.

- `changes`: what a request (or the whole session) changed, as files with diffs, bounded.
- `rewind_files`: put back the files a request and every later one changed, as they were
  before it. A file someone else changed since (between requests, after the last one, or
  with unsaved changes in the editor) is a conflict: nothing is restored unless forced.

A request that ran no tool that changes files (no edit, write or shell command) never waits
for a snapshot: its answer does not wait for its 'before' snapshot (the first one of a big
workspace takes seconds), and it takes no 'after' one (its 'after' is its 'before', stored
when that lands; `changes` and `rewind` of its session wait for it, bounded).

Snapshots run on one worker thread of their own (never the event loop's default pool, which
the tools use), one at a time; callers that ask while one is queued and not yet started share
it (it starts after they asked, so it sees what they need).

A failed snapshot never fails a request: the request runs without checkpoints and says so
(a notice); its changes and a rewind of its files are then a clear error.

The shadow repository of a workspace is bounded (`checkpointMaxMegabytes`): when a request
starts and the repository may be over the bound, a job queued on the snapshots' worker after
that request's 'before' snapshot prunes it (ShadowRepo.bound): deleted sessions' checkpoints
first, then the least recently changed sessions', never those of a session whose request runs
(its lease is held, here or in another process, or its last snapshot is still being taken).
A rewind or `changes` of a pruned checkpoint is a clear error saying it was pruned.

Anything that changes the workspace while a request runs (the user, another session's
request) counts as that request's change: the snapshots see files, not authors.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import difflib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunacode_lsp.agent.sessions import SessionService, session_info
from tunacode_lsp.agent.shadow_repo import (
    MEGABYTE,
    CheckpointError,
    CheckpointsOff,
    PartialRestore,
    SessionTrees,
    ShadowRepo,
)
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import (
    CHANGED_SINCE,
    CHECKPOINTS_UNAVAILABLE,
    SESSION_BUSY,
    UNKNOWN_SESSION,
    ChangedFile,
    ChangesParams,
    ChangesResult,
    ParamsError,
    RewindParams,
    RewindResult,
)
from tunacode_lsp.core.text import shown
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.locations import data_dir, project_id_for
from tunacode_lsp.store.records import RequestCheckpointRecord

if TYPE_CHECKING:
    from tunacode_lsp.agent.runs import RequestService
    from tunacode_lsp.tools.documents import BufferEdit, DocumentOverlay  # the tools package loads tinyagent

log = logging.getLogger(__name__)

MAX_DIFF_CHARS = 50_000  # one file's diff
MAX_CHANGES_CHARS = 400_000  # all diffs of one answer
MAX_CHANGED_FILES = 1_000  # files listed in one answer
MAX_CONFLICTS_NAMED = 20
DEFAULT_MAX_MEGABYTES = 2048  # checkpointMaxMegabytes: one workspace's shadow repository at most
SESSIONS_READ_SECONDS = 30.0  # the bound's read of the store, at most
FINISH_WAIT_SECONDS = 30.0  # changes/rewind wait this long at most for a stopped request's last snapshot

OpenText = Callable[[Path], "str | None"]  # the editor's text of an open document, else None


def _wire_path(path: str) -> str:
    """A path safe for JSON (undecodable bytes become U+FFFD)."""

    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rsplit("\n", 1)[0] + f"\n[... diff cut: {len(text):,} characters in all]", True


class SnapshotQueue:
    """Snapshots on one worker thread of their own, in order; a snapshot of a workspace asked
    for while another of it waits to start is that one (it starts after both asked)."""

    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tunacode-checkpoints")
        self._lock = threading.Lock()
        self._queued: dict[str, concurrent.futures.Future[str]] = {}

    def submit(self, repo: ShadowRepo) -> concurrent.futures.Future[str]:
        key = str(repo.root)
        with self._lock:
            queued = self._queued.get(key)
            if queued is not None:
                return queued
            future = self._queued[key] = self._pool.submit(self._take, repo, key)
            return future

    def _take(self, repo: ShadowRepo, key: str) -> str:
        with self._lock:
            self._queued.pop(key, None)  # started: a later caller needs a later snapshot
        tree = repo.snapshot()
        if repo.borrowing():  # seeded from the workspace's git: make its objects ours, after this
            self._pool.submit(self._absorb, repo)
        return tree

    def submit_job(self, job: Callable[[], object]) -> concurrent.futures.Future[object]:
        """Run `job` on the worker, after the snapshots queued so far."""

        return self._pool.submit(job)

    @staticmethod
    def _absorb(repo: ShadowRepo) -> None:
        try:
            repo.absorb()
        except CheckpointError as exc:
            log.warning("copying the objects borrowed from %s/.git failed (still borrowed): %s", repo.root, exc)

    async def snapshot(self, repo: ShadowRepo) -> str:
        """Await a snapshot; cancelling the wait never cancels the (shared) snapshot."""

        shared = self.submit(repo)
        loop = asyncio.get_running_loop()
        mine: asyncio.Future[str] = loop.create_future()

        def copy(done: concurrent.futures.Future[str]) -> None:
            def settle() -> None:
                if mine.done():
                    return
                if done.cancelled():
                    mine.cancel()
                elif (exc := done.exception()) is not None:
                    mine.set_exception(exc)
                else:
                    mine.set_result(done.result())
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop closed meanwhile
                pass

        shared.add_done_callback(copy)
        return await mine


@dataclass
class RequestCheckpoints:
    """The checkpoints of one running request."""

    service: Checkpoints
    sessions: SessionService
    session_id: str
    request_id: str
    repo: ShadowRepo | None
    before: str = ""
    notices: list[str] = field(default_factory=list)
    taking: asyncio.Future[str] | None = None  # the 'before' snapshot, taken while the model starts
    _settling: asyncio.Future[list[str]] | None = None
    _told: bool = False
    _told_off: bool = False
    changing: bool = False  # a tool that changes files ran (or was about to)

    async def _settle(self) -> list[str]:
        if self.taking is None:
            return []
        try:
            self.before = await self.taking
        except CheckpointError as exc:
            assert self.repo is not None
            if isinstance(exc, CheckpointsOff):
                self.service.turn_off(str(self.repo.root), str(exc))
            log.warning("checkpoint before %s failed: %s", self.request_id, exc)
            return [f"Checkpoints are off for this request ({exc}): its changes cannot be listed or rewound."]
        await self._save(before=self.before)
        return []

    async def ready(self) -> list[str]:
        """Wait for the 'before' snapshot; the first caller gets the notices to tell the user
        when it failed. Cancelling the wait does not cancel the snapshot."""

        if self._settling is None:
            self._settling = asyncio.ensure_future(self._settle())
        notices = await asyncio.shield(self._settling)
        if self._told:
            return []
        self._told = True
        return notices

    async def step(self, snapshot: bool | None) -> list[str]:
        """Before a tool that changes files: the 'before' snapshot is taken; before a shell command
        (`snapshot`) also a new one, kept as the request's latest 'after'. At the end of the
        request (None): the notices, without waiting when nothing was changed. Returns notices."""

        if snapshot is None:
            if not self.changing and self.taking is not None and not self.taking.done():
                return []  # a request that changed nothing never waits for a snapshot
            return await self.ready()
        self.changing = True
        notices = await self.ready()
        if snapshot and self.before:
            tree = await self.service.snapshot(self.repo)
            if tree:
                await self._save(after=tree)
            elif self.repo is not None and not self._told_off and (why := self.service.off_reason(self.repo.root)):
                self._told_off = True  # turned off during this request (a FIFO .gitignore, too many files)
                notices = [*notices, f"Checkpoints are now off in this workspace ({why}): this request's "
                           "changes cannot be listed or rewound."]
        return notices

    async def finish(self, buffer_edits: list[BufferEdit] | None = None) -> list[str] | None:
        """After the request: its last snapshot; the files it changed, on disk or only in an
        editor's buffer (None: unknown)."""

        root = self.repo.root if self.repo is not None else None
        in_buffers = self.service.remember_buffer_edits(self.session_id, self.request_id, buffer_edits or [], root)
        if not self.changing:
            # no tool that changes files ran: no 'after' snapshot (it is the 'before'), and no
            # wait for the 'before' one when it is still being taken
            if self.taking is not None and not self.taking.done():
                self.service.track(self.session_id, asyncio.ensure_future(self._close_unchanged()))
                return sorted(in_buffers)
            await self._close_unchanged()
            return sorted(in_buffers) if self.before or in_buffers else None
        await self.ready()
        on_disk = await self._disk_changes()
        if on_disk is None and not in_buffers:
            return None
        return sorted({*(on_disk or []), *in_buffers})

    def finish_later(self, buffer_edits: list[BufferEdit] | None = None) -> None:
        """`finish` after the answer (a stopped request); changes and rewind of the session wait for it."""

        self.service.track(self.session_id, asyncio.ensure_future(self.finish(buffer_edits)))

    async def _close_unchanged(self) -> None:
        """A request that changed nothing: its 'after' is its 'before'."""

        await self.ready()
        if self.before:
            await self._save(after=self.before)

    async def _disk_changes(self) -> list[str] | None:
        if self.repo is None or not self.before:
            return None
        after = await self.service.snapshot(self.repo)
        if not after:
            return None
        await self._save(after=after)
        try:
            changes = await asyncio.to_thread(self.repo.changes, self.before, after)
        except CheckpointError as exc:
            log.warning("changes of %s: %s", self.request_id, exc)
            return None
        return [_wire_path(c.path) for c in changes]

    async def _save(self, **trees: str) -> None:
        try:
            await self.sessions.set_request_trees(self.session_id, self.request_id, **trees)
        except Exception:  # noqa: BLE001 - a checkpoint must never fail the request
            log.exception("storing the checkpoint of %s failed", self.request_id)


class Checkpoints:
    """The shadow repositories of this process, one per workspace, and the commands on them."""

    def __init__(self, sessions: Callable[[], SessionService], folder: Callable[[], Path] | None = None) -> None:
        self._sessions = sessions
        self._folder = folder or (lambda: data_dir() / "checkpoints")
        self._repos: dict[str, ShadowRepo] = {}
        self._off: dict[str, str] = {}  # workspace -> why checkpoints are off in this process
        # (session, request) -> its edits that live only in an editor's buffer (this process only)
        self._buffer_edits: dict[tuple[str, str], list[BufferEdit]] = {}
        self._said: set[str] = set()  # notices given once per process
        self._finishing: dict[str, set[asyncio.Future[Any]]] = {}  # session -> stopped requests' last snapshots
        self.queue = SnapshotQueue()
        self._bounding: dict[str, bool] = {}  # workspace -> its pruning is queued or running

    def repo(self, root: Path) -> ShadowRepo:
        real = os.path.realpath(root)
        repo = self._repos.get(real)
        if repo is None:
            repo = self._repos[real] = ShadowRepo(Path(real), self._folder() / project_id_for(real))
        return repo

    async def snapshot(self, repo: ShadowRepo | None) -> str:
        """A snapshot, or '' when it cannot be taken (logged; a workspace with too many files
        is not tried again by this process)."""

        if repo is None or str(repo.root) in self._off:
            return ""
        try:
            return await self.queue.snapshot(repo)
        except CheckpointsOff as exc:
            self._off[str(repo.root)] = str(exc)
            log.warning("checkpoints off for %s: %s", repo.root, exc)
        except CheckpointError as exc:
            log.warning("checkpoint of %s failed: %s", repo.root, exc)
        return ""

    # ------------------------------------------------------------ a request

    async def begin(self, session_id: str, request_id: str, root: Path, *, max_megabytes: int | None = None) -> RequestCheckpoints:
        """Note the request (where its messages start) and start its 'before' snapshot (then,
        when the repository may be over `max_megabytes`, its pruning: see the module's docstring)."""

        sessions = self._sessions()
        real = os.path.realpath(root)
        try:
            await sessions.record_request(session_id, request_id, workspace=real)
        except Exception:  # noqa: BLE001 - without its row the request cannot be rewound; it still runs
            log.exception("recording request %s failed", request_id)
            return RequestCheckpoints(self, sessions, session_id, request_id, None,
                                      notices=["Checkpoints are off for this request: the session store did not take its record."])
        repo = self.repo(root)
        checkpoint = RequestCheckpoints(self, sessions, session_id, request_id, repo)
        if real in self._off:
            if "checkpoints_off" not in self._said:
                self._said.add("checkpoints_off")
                checkpoint.notices.append(f"Checkpoints are off in this workspace ({self._off[real]}): changes cannot be listed or rewound.")
            return checkpoint
        # not awaited here: the request starts (and the model is called) meanwhile; every tool that
        # changes files waits for it (RequestCheckpoints.step)
        checkpoint.taking = asyncio.ensure_future(self.queue.snapshot(repo))
        checkpoint.taking.add_done_callback(lambda f: f.cancelled() or f.exception())  # a request that fails never asks
        self.keep_bound(repo, (max_megabytes or DEFAULT_MAX_MEGABYTES) * MEGABYTE)
        return checkpoint

    def keep_bound(self, repo: ShadowRepo, max_bytes: int) -> concurrent.futures.Future[object] | None:
        """Queue the pruning of `repo` down to `max_bytes` when it may be over (see the module's
        docstring); None when it surely is not (nothing queued)."""

        if not repo.may_exceed(max_bytes) or self._bounding.get(str(repo.root)):
            return None
        loop = asyncio.get_running_loop()
        self._bounding[str(repo.root)] = True

        def job() -> object:
            try:
                if not repo.may_exceed(max_bytes) or repo.size() <= max_bytes:
                    return []
                read = asyncio.run_coroutine_threadsafe(self._session_trees(repo), loop)
                with repo.locked():  # the sessions read under the lock: no snapshot meanwhile
                    sessions = read.result(SESSIONS_READ_SECONDS)
                    pruned = repo.bound(max_bytes, sessions)
                if pruned:
                    log.info("checkpoints of %d sessions pruned in %s (over %d MB)", len(pruned), repo.root, max_bytes // MEGABYTE)
                return pruned
            except (CheckpointError, concurrent.futures.TimeoutError, RuntimeError, OSError) as exc:
                log.warning("bounding the checkpoints of %s failed: %s", repo.root, exc)
                return []
            finally:
                self._bounding[str(repo.root)] = False

        return self.queue.submit_job(job)

    async def _session_trees(self, repo: ShadowRepo) -> list[SessionTrees]:
        """The sessions with checkpoints in `repo`'s workspace, least recently changed first."""

        rows = await self._sessions().workspace_checkpoints(str(repo.root))
        found: dict[str, SessionTrees] = {}
        mine = f":{os.getpid()}:"
        for row, _, owner in rows:
            finishing = row.session_id in self._finishing
            busy = owner is not None or finishing
            here = finishing or (owner is not None and mine in owner)
            had = found.get(row.session_id)
            trees = {row.before_tree, row.after_tree} - {""}
            if had is None:
                found[row.session_id] = SessionTrees(row.session_id, frozenset(trees), busy, row.started_us / 1e6, here)
            else:
                found[row.session_id] = SessionTrees(row.session_id, had.trees | trees, busy,
                                                     max(had.since, row.started_us / 1e6), here)
        return list(found.values())  # the rows come least recently changed session first

    def remember_buffer_edits(
        self, session_id: str, request_id: str, edits: list[BufferEdit], root: Path | None
    ) -> list[str]:
        """Keep a request's buffer-only edits for changes and rewind; their paths for the result."""

        if not edits:
            return []
        self._buffer_edits[(session_id, request_id)] = list(edits)
        return sorted({_relative(edit.real_path, root) for edit in edits})

    def _buffer_edits_of(self, session_id: str, request_ids: list[str]) -> dict[Path, tuple[str, str]]:
        """Per file: its text before the first of these requests' buffer edits and after the last."""

        spans: dict[Path, tuple[str, str]] = {}
        for request_id in request_ids:
            for edit in self._buffer_edits.get((session_id, request_id), []):
                first = spans.get(edit.real_path, (edit.old_text, edit.new_text))[0]
                spans[edit.real_path] = (first, edit.new_text)
        return spans

    def track(self, session_id: str, finishing: asyncio.Future[Any]) -> None:
        tasks = self._finishing.setdefault(session_id, set())
        tasks.add(finishing)

        def done(task: asyncio.Future[Any]) -> None:
            tasks.discard(task)
            if not tasks and self._finishing.get(session_id) is tasks:
                del self._finishing[session_id]
            if not task.cancelled() and task.exception() is not None:
                log.warning("the last checkpoint of a stopped request failed: %s", task.exception())

        finishing.add_done_callback(done)

    async def settled(self, session_id: str | None, timeout: float = FINISH_WAIT_SECONDS) -> bool:
        """Wait (bounded) for the last snapshots of stopped requests (of one session, or all)."""

        tasks = set(self._finishing.get(session_id, ())) if session_id is not None else {
            task for tasks in self._finishing.values() for task in tasks}
        if not tasks:
            return True
        _, late = await asyncio.wait(tasks, timeout=timeout)
        return not late

    def off_reason(self, root: Path) -> str | None:
        return self._off.get(str(root))

    def turn_off(self, real: str, why: str) -> None:
        self._off[real] = why
        self._said.add("checkpoints_off")

    def warm(self, root: Path) -> concurrent.futures.Future[str]:
        """Start a snapshot now (on the checkpoints' worker, at start-up): the first one of a
        workspace reads every file, and the first request need not wait for it. Returns it."""

        repo = self.repo(root)

        def said(done: concurrent.futures.Future[str]) -> None:
            exc = None if done.cancelled() else done.exception()
            if isinstance(exc, CheckpointsOff):  # the next request says so at its start
                self._off.setdefault(str(repo.root), str(exc))
            if exc is not None:
                log.info("no start-up checkpoint of %s: %s", root, exc)

        snapshot = self.queue.submit(repo)  # a request's 'before' queued meanwhile shares it
        snapshot.add_done_callback(said)
        return snapshot

    # ------------------------------------------------------------ commands

    async def changes_command(self, runs: RequestService, params: ChangesParams, root: Path) -> ChangesResult:
        """`tunacode.changes`: a request's changes, or the session's."""

        if await self._sessions().get(params.session_id) is None:
            raise CommandError(UNKNOWN_SESSION, f"unknown session {shown(params.session_id)}")
        await self.settled(params.session_id)
        running = {p.request_id for p in runs.pending() if p.session_id == params.session_id}
        result = await self.changes(params.session_id, params.request_id, root, running=running)
        # the session's requests with buffer edits, in the order they ended (no second read of the store)
        ids = [params.request_id] if params.request_id is not None else [
            request_id for session_id, request_id in self._buffer_edits if session_id == params.session_id]
        return _with_buffer_edits(result, self._buffer_edits_of(params.session_id, ids), Path(os.path.realpath(root)))

    async def rewind_command(
        self, runs: RequestService, params: RewindParams, root: Path, *, open_text: OpenText | None = None,
        documents: DocumentOverlay | None = None,
    ) -> RewindResult:
        """`tunacode.session.rewind`: files first (nothing is cut when they cannot be restored),
        then the history; the session is held (here and in the store) throughout."""

        sessions = self._sessions()
        session_id = params.session_id
        if await sessions.get(session_id) is None:
            raise CommandError(UNKNOWN_SESSION, f"unknown session {shown(session_id)}")
        if not await self.settled(session_id):  # a stopped request's last snapshot, else files could be missed
            raise CommandError(CHECKPOINTS_UNAVAILABLE, "the last checkpoint of a stopped request of this session is "
                               "still being taken (the checkpoints are locked by another process?); try again")
        with runs.holding(session_id):  # -32002 while a request of this server runs on it
            owner = new_owner()
            if not await sessions.acquire(session_id, owner):
                raise CommandError(SESSION_BUSY, f"session {session_id} is busy with a request; stop it first")
            try:
                rows = await sessions.request_checkpoints(session_id)
                index = self._find(rows, params.request_id, session_id)
                later = [row.request_id for row in rows[index:]]
                restored: list[str] = []
                if params.files:
                    buffers = self._buffer_edits_of(session_id, later)
                    unsafe = _buffer_conflicts(buffers, root, documents)
                    if unsafe and not params.force:
                        raise _conflict(unsafe)
                    restored = await self.rewind_files(session_id, params.request_id, root, force=params.force, open_text=open_text)
                    restored = sorted({*restored, *await _undo_buffer_edits(buffers, root, documents)})
                for request_id in later:
                    self._buffer_edits.pop((session_id, request_id), None)
                record = await sessions.rewind(session_id, params.request_id)
            finally:
                await sessions.release(session_id, owner)
        from tunacode_lsp.tools import LineRefLedger  # loaded with the first request, not at start-up

        runs.session_state(session_id).line_refs = LineRefLedger()  # the reads went with their messages
        return RewindResult(session_info(record), restored)


    @staticmethod
    def _find(rows: list[RequestCheckpointRecord], request_id: str, session_id: str) -> int:
        index = next((i for i, row in enumerate(rows) if row.request_id == request_id), None)
        if index is None:
            raise ParamsError(f"params.requestId: unknown request {shown(request_id)} in session {shown(session_id)}")
        return index

    async def changes(
        self, session_id: str, request_id: str | None, root: Path, *, running: set[str] | frozenset[str] = frozenset()
    ) -> ChangesResult:
        """What one request (or every request of the session) changed; `running` requests
        are compared with the workspace now."""

        rows = await self._sessions().request_checkpoints(session_id)
        real = os.path.realpath(root)
        if request_id is not None:
            rows = [rows[self._find(rows, request_id, session_id)]]
            if rows[0].workspace != real:
                raise ParamsError(f"params.requestId: request {shown(request_id)} ran in another workspace ({shown(rows[0].workspace)})")
            if not rows[0].before_tree and request_id in running:
                return ChangesResult([], False)  # it is taking its first snapshot
            if not rows[0].before_tree:
                raise CommandError(CHECKPOINTS_UNAVAILABLE, f"request {request_id} has no checkpoint (they were off for it)")
        rows = [row for row in rows if row.workspace == real and row.before_tree]
        if not rows:
            return ChangesResult([], False)
        repo = self.repo(root)
        return await asyncio.to_thread(self._changes, repo, rows, running)

    def _changes(self, repo: ShadowRepo, rows: list[RequestCheckpointRecord], running: set[str] | frozenset[str]) -> ChangesResult:
        try:
            with repo.locked():
                now: str | None = None
                first_before: dict[str, str] = {}
                last_after: dict[str, str] = {}
                for row in rows:
                    after = row.after_tree
                    if row.request_id in running or not after:
                        now = now or repo.snapshot()
                        after = now
                    _require(repo, row.session_id, row.before_tree, after)
                    for change in repo.changes(row.before_tree, after):
                        first_before.setdefault(change.path, row.before_tree)
                        last_after[change.path] = after
                groups: dict[tuple[str, str], list[str]] = {}
                for path, before in first_before.items():
                    groups.setdefault((before, last_after[path]), []).append(path)
                found = []
                for (before, after), paths in groups.items():
                    wanted = set(paths)
                    found += [(c, before, after) for c in repo.changes(before, after) if c.path in wanted]
                found.sort(key=lambda item: item[0].path)
                files: list[ChangedFile] = []
                budget = MAX_CHANGES_CHARS
                truncated = len(found) > MAX_CHANGED_FILES
                for change, before, after in found[:MAX_CHANGED_FILES]:
                    diff = ""
                    if budget > 0:
                        diff, cut = _cut(repo.diff(before, after, change.path), min(MAX_DIFF_CHARS, budget))
                        truncated |= cut
                        budget -= len(diff)
                    else:
                        truncated = True
                    files.append(ChangedFile(_wire_path(change.path), change.status, diff))
                return ChangesResult(files, truncated)
        except CheckpointError as exc:
            raise CommandError(CHECKPOINTS_UNAVAILABLE, f"the checkpoints cannot be read: {exc}") from None

    async def rewind_files(
        self, session_id: str, request_id: str, root: Path, *, force: bool, open_text: OpenText | None = None
    ) -> list[str]:
        """Restore the files the request and every later one changed to their state before it.

        Raises CommandError CHANGED_SINCE naming the files someone else changed since (nothing
        restored) unless `force`."""

        rows = await self._sessions().request_checkpoints(session_id)
        index = self._find(rows, request_id, session_id)
        later = rows[index:]
        real = os.path.realpath(root)
        elsewhere = next((row for row in later if row.workspace != real), None)
        if elsewhere is not None:
            raise ParamsError(
                f"params.requestId: request {shown(elsewhere.request_id)} ran in another workspace "
                f"({shown(elsewhere.workspace)}); rewind it there, or with files: false"
            )
        missing = next((row for row in later if not row.before_tree), None)
        if missing is not None:
            raise CommandError(
                CHECKPOINTS_UNAVAILABLE,
                f"request {missing.request_id} has no checkpoint (they were off for it): its files cannot be "
                "restored; rewind with files: false to cut the history only",
            )
        repo = self.repo(root)
        return await asyncio.to_thread(self._rewind_files, repo, later, force, open_text)

    def _rewind_files(
        self, repo: ShadowRepo, rows: list[RequestCheckpointRecord], force: bool, open_text: OpenText | None
    ) -> list[str]:
        try:
            with repo.locked():
                now = repo.snapshot()
                afters = [row.after_tree or now for row in rows]  # a request without an 'after' died: now stands in
                _require(repo, rows[0].session_id, *(row.before_tree for row in rows), *afters)
                touched: set[str] = set()
                for row, after in zip(rows, afters):
                    touched.update(c.path for c in repo.changes(row.before_tree, after))
                conflicts: set[str] = set()
                for after, row in zip(afters, rows[1:]):  # between two requests
                    conflicts.update(c.path for c in repo.changes(after, row.before_tree) if c.path in touched)
                conflicts.update(c.path for c in repo.changes(afters[-1], now) if c.path in touched)  # since the last
                if open_text is not None:
                    conflicts.update(path for path in touched if _unsaved(repo.root / path, open_text))
                # a file that already has its earlier content (undone by hand) loses nothing: not a
                # conflict, and nothing to restore
                differ = {c.path for c in repo.changes(rows[0].before_tree, now)}
                conflicts &= differ
                touched &= differ
                # a file on disk whose bytes are not recorded (grown over the size limit, or
                # ignored since): nothing proves nobody changed it since; overwriting needs force
                recorded = repo.paths_in(now, sorted(touched))
                unrecorded = {p for p in touched - recorded if repo.file_on_disk(p)}
                conflicts |= unrecorded
                # a file to restore where a folder is now: git removes the whole folder, with
                # whatever else is in it (the user's files, ignored ones); where a file is now in
                # place of one of its folders: git removes that file
                swept: set[str] = set()
                for path in sorted(repo.paths_in(rows[0].before_tree, sorted(touched))):
                    swept.update(f for f in repo.files_under(path) or [] if f not in touched)
                    parts = path.split("/")[:-1]
                    swept.update(folder for folder in ("/".join(parts[:i]) for i in range(1, len(parts) + 1))
                                 if folder not in touched and repo.file_on_disk(folder))
                conflicts |= swept
                if conflicts and not force:
                    raise _conflict(sorted(_wire_path(p) for p in conflicts),
                                    unrecorded=sorted(_wire_path(p) for p in unrecorded),
                                    swept=sorted(_wire_path(p) for p in swept))
                if not touched:
                    return []
                return [_wire_path(p) for p in repo.restore(rows[0].before_tree, sorted(touched))]
        except PartialRestore as exc:
            restored = [_wire_path(p) for p in exc.restored]
            failed = [_wire_path(p) for p in exc.failed]
            raise CommandError(
                CHECKPOINTS_UNAVAILABLE,
                f"the rewind stopped half way: {exc.reason}. Not restored: {_listed(failed) or 'none'}; already "
                f"restored: {_listed(restored) or 'none'}. The history was not cut; fix the cause and rewind again "
                "(the files already restored are not touched again).",
                {"restored": restored, "failed": failed},
            ) from None
        except CheckpointError as exc:
            raise CommandError(CHECKPOINTS_UNAVAILABLE, f"the files cannot be restored: {exc}") from None


def _require(repo: ShadowRepo, session_id: str, *trees: str) -> None:
    """ShadowRepo.require, naming the bound when the session's checkpoints were pruned."""

    try:
        repo.require(*trees)
    except CheckpointError:
        note = repo.pruned_note(session_id)
        if note is None:
            raise
        raise CheckpointError(f"{note}; rewind with files: false to cut the history only") from None


def _unsaved(path: Path, open_text: OpenText) -> bool:
    """The editor has the file open with text that differs from the disk."""

    text = open_text(Path(os.path.realpath(path)))
    if text is None:
        return False
    try:
        return path.read_bytes() != text.encode("utf-8", "surrogateescape")
    except OSError:
        return True


def _listed(names: list[str]) -> str:
    return ", ".join(names[:MAX_CONFLICTS_NAMED]) + (
        f" and {len(names) - MAX_CONFLICTS_NAMED} more" if len(names) > MAX_CONFLICTS_NAMED else "")


def _conflict(names: list[str], unrecorded: list[str] | None = None, swept: list[str] | None = None) -> CommandError:
    listed = _listed(names)
    note = (f" ({_listed(unrecorded)}: not recorded now, over the size limit or ignored, so a change since "
            "cannot be ruled out)") if unrecorded else ""
    if swept:
        note += (f" ({_listed(swept)}: would be removed to make room for a file the rewind restores, "
                 "in its place or in place of its folder)")
    return CommandError(
        CHANGED_SINCE,
        f"{listed} changed since the agent edited {'it' if len(names) == 1 else 'them'} (by someone "
        f"else, or unsaved in the editor){note}; nothing was restored. Rewind with force to overwrite.",
        {"files": names},
    )


def _relative(path: Path, root: Path | None) -> str:
    if root is not None and path.is_relative_to(root):
        return _wire_path(path.relative_to(root).as_posix())
    return _wire_path(str(path))


def _buffer_conflicts(buffers: dict[Path, tuple[str, str]], root: Path, documents: DocumentOverlay | None) -> list[str]:
    """Buffer-only edits whose document no longer shows the agent's text (the user typed since)."""

    real_root = Path(os.path.realpath(root))
    found = []
    for path, (_, agents) in buffers.items():
        now = documents.text(path) if documents is not None else None
        if now is not None and now != agents:
            found.append(_relative(path, real_root))
    return sorted(found)


async def _undo_buffer_edits(buffers: dict[Path, tuple[str, str]], root: Path, documents: DocumentOverlay | None) -> list[str]:
    """Give each edited buffer its text from before the agent's edits, through the editor (the
    user's unsaved changes stay). A document closed since is left alone: its buffer, and the
    edit in it, are gone, unless it was saved, which the disk checkpoints then hold."""

    real_root = Path(os.path.realpath(root))
    undone = []
    for path, (before, _) in buffers.items():
        now = documents.text(path) if documents is not None else None
        if now is None or now == before or documents is None:
            continue
        try:
            await documents.apply(path, now, before)
        except Exception as exc:  # noqa: BLE001 - StaleDocument, a refusal: say which file
            raise CommandError(CHECKPOINTS_UNAVAILABLE, f"the editor did not take back the edit of {_relative(path, real_root)}: "
                               f"{exc or type(exc).__name__}; the files on disk were restored") from None
        undone.append(_relative(path, real_root))
    return undone


def _marked_last_lines(lines: Iterable[str]) -> Iterator[str]:
    """difflib's lines with git's "\\ No newline at end of file" after a last line that has none,
    so the diff applies to the text it was made from."""

    for line in lines:
        if line.endswith("\n"):
            yield line
        else:
            yield line + "\n\\ No newline at end of file\n"


def _with_buffer_edits(result: ChangesResult, buffers: dict[Path, tuple[str, str]], real_root: Path) -> ChangesResult:
    """Add the edits that live only in editors' buffers (the disk never saw them)."""

    listed = {f.path for f in result.files}
    added = []
    for path, (before, after) in buffers.items():
        shown_path = _relative(path, real_root)
        if shown_path in listed or before == after:
            continue
        diff = "".join(_marked_last_lines(difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{shown_path}", f"b/{shown_path}", n=3,
        )))
        cut, truncated = _cut(diff.rstrip("\n"), MAX_DIFF_CHARS)
        added.append(ChangedFile(shown_path, "modified", cut + "\n(in the editor's buffer, not saved)"))
        result.truncated |= truncated
    if added:
        result.files = sorted([*result.files, *added], key=lambda f: f.path)
    return result
