"""Startup and memory: spawn -> initialize answered, idle RSS, RSS after resuming 10k messages.

Spawn: from creating the server process to the `initialize` answer; baseline: the same for
a bare pygls `LanguageServer` with no features (the floor any pygls server pays: Python,
pygls and lsprotocol's imports). Idle RSS: the server after
`initialized` and one `tunacode.status`; baseline: an interpreter that imported pygls and
lsprotocol, waiting on stdin (issue 35's baseline: the floor any pygls server holds).
Resumed: a request (answered at once by the model) in a prefilled 10k-message session,
then the server's RSS; baseline: the same server's idle RSS before it. The server package's
bytecode is compiled first, as an install has it (bench/bytecode.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tunacode_lsp.store.session_store import SessionStore

from . import scripts
from .bytecode import ensure_server_bytecode
from .client import BenchServer, rss_mb, scripted_options
from .config import BenchConfig
from .model import ScriptedModelProcess
from .stats import Goal, Row, Samples, ms
from .storage import fill
from .workspace import make_project

RESUMED_SIZE = 10_000


BARE_PYGLS_SERVER = "from pygls.lsp.server import LanguageServer; LanguageServer('bare', '1').start_io()"


async def bare_pygls_spawn(workspace: Path, home: Path) -> float:
    server = await BenchServer(workspace, home).start(command=[sys.executable, "-c", BARE_PYGLS_SERVER])
    try:
        return server.initialized_at - server.spawned_at
    finally:
        await server.stop()


def bare_interpreter_rss() -> float:
    code = ("import sys, pygls.lsp.server, lsprotocol.types; sys.stdout.write('ready\\n'); sys.stdout.flush(); "
            "sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        return rss_mb(proc.pid)
    finally:
        proc.communicate("")


async def run(config: BenchConfig) -> list[Row]:
    ensure_server_bytecode()  # as installed (bench/bytecode.py)
    workspace = make_project(config.folder("startup/workspace"), modules=1)
    home = config.folder("startup/home")
    with SessionStore(home / "sessions.sqlite3") as store:
        resumed_id = fill(store, RESUMED_SIZE)
    spawn, bare_spawn, idle_rss, bare_rss, resumed_rss = (Samples() for _ in range(5))
    for samples in (idle_rss, bare_rss, resumed_rss):
        samples.unit = "MB"
    with ScriptedModelProcess(scripts.repeat(scripts.QUICK_TEXT)) as model:
        options = scripted_options(model.chat_url)
        for _ in range(config.reps(10)):
            bare_spawn.add(ms(await bare_pygls_spawn(workspace, home)))
            server = await BenchServer(workspace, home).start(options)
            try:
                spawn.add(ms(server.initialized_at - server.spawned_at))
                await server.command("tunacode.status")
                idle_rss.add(server.rss_mb())
            finally:
                await server.stop()
            bare_rss.add(bare_interpreter_rss())
        for _ in range(config.reps(3)):
            server = await BenchServer(workspace, home).start(options)
            try:
                result = await server.command("tunacode.request", {"prompt": "go on", "sessionId": resumed_id})
                if result["stopReason"] != "end_turn":
                    raise RuntimeError(f"resumed request ended with {result['stopReason']}: {result.get('error')}")
                resumed_rss.add(server.rss_mb())
            finally:
                await server.stop()
    return [
        Row("spawn -> initialize answered", spawn, bare_spawn, "bare pygls LanguageServer, same", Goal("ratio", 1.05)),
        Row("idle server RSS", idle_rss, bare_rss, "interpreter with pygls + lsprotocol imported", Goal("ratio", 1.2)),
        Row(f"RSS after resuming a {RESUMED_SIZE // 1000}k-message session", resumed_rss, idle_rss, "idle server RSS"),
    ]
