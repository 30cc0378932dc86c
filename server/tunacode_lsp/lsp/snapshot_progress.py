"""Work-done progress for the first snapshot of a workspace (agent/checkpoints.py, `warm`):
when it takes longer than a second (a big workspace without git reads every file), the
client's progress UI says so until it ends; never silent, never in the way of a request."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tunacode_lsp.agent.shadow_repo import CheckpointsOff
from tunacode_lsp.lsp.client_requests import ask_client
from tunacode_lsp.lsp.pygls_compat import register_progress_token

log = logging.getLogger(__name__)

QUIET_SECONDS = 1.0  # a first snapshot shorter than this shows nothing
CLIENT_WAIT_SECONDS = 5.0  # for the client's answer to window/workDoneProgress/create
TOKEN = "tunacode/checkpoints"


async def first_snapshot_progress(ls: LanguageServer, snapshot: concurrent.futures.Future[Any]) -> None:
    """Show progress for `snapshot` once it has run for QUIET_SECONDS."""

    waiting = asyncio.wrap_future(snapshot)
    waiting.add_done_callback(lambda done: _tell_if_off(ls, done))
    started = time.monotonic()
    done, _ = await asyncio.wait({waiting}, timeout=QUIET_SECONDS)
    if done:
        return
    message = "recording the workspace for checkpoints (its first snapshot reads every file once)"
    log.info("the first checkpoint of the workspace takes a while: %s", message)
    window = ls.client_capabilities.window
    if not (window and window.work_done_progress):
        await asyncio.wait({waiting})
        return
    try:  # bounded: a client that never answers gets no progress
        await ask_client(ls, types.WINDOW_WORK_DONE_PROGRESS_CREATE, types.WorkDoneProgressCreateParams(token=TOKEN),
                         timeout=CLIENT_WAIT_SECONDS, label="tunacode-progress")
    except Exception as exc:  # noqa: BLE001 - a client that refuses gets no progress
        log.debug("progress token %s refused: %s", TOKEN, exc)
        await asyncio.wait({waiting})
        return
    register_progress_token(ls, TOKEN)
    progress = ls.work_done_progress
    progress.begin(TOKEN, types.WorkDoneProgressBegin(title="TunaCode checkpoints", message=message))
    try:
        await asyncio.wait({waiting})
        failed = waiting.cancelled() or waiting.exception() is not None
        progress.end(TOKEN, types.WorkDoneProgressEnd(
            message=f"{'not recorded' if failed else 'recorded'} in {time.monotonic() - started:.1f} s"))
    finally:
        progress.tokens.pop(TOKEN, None)


def _tell_if_off(ls: LanguageServer, done: asyncio.Future[Any]) -> None:
    """Checkpoints that cannot work in this workspace (a FIFO `.gitattributes`, too many files)
    are said at once: a request that changes nothing does not wait to hear it."""

    exc = None if done.cancelled() else done.exception()
    if isinstance(exc, CheckpointsOff):
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Warning, message=f"TunaCode: checkpoints are off in this workspace: {exc}"))
