"""The headless client's start-up: `tunacode-lsp run hi` wall time, and `run --help`.

`run hi`: the whole command as CI runs it (a process that starts the server, initializes,
sends the request to the scripted model answering at once, prints the answer, shuts the
server down and exits), timed from spawn to exit. Baseline: a single Python process that
imports pygls and tinyagent and exits, the floor any run pays once. The two alternate, so
drift on a shared machine hits both alike. `run --help`: the same against a bare interpreter.
The server package's bytecode is compiled first, as an install has it (bench/bytecode.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from . import scripts
from .bytecode import ensure_server_bytecode
from .config import BenchConfig
from .model import ScriptedModelProcess
from .stats import Goal, Row, Samples, ms
from .workspace import make_project

FLOOR = "import pygls.lsp.server, tinyagent"


def _timed(argv: list[str], env: dict[str, str], cwd: Path, expect: int = 0) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    took = time.monotonic() - started
    if done.returncode != expect:
        raise RuntimeError(f"{argv[2:]} exited {done.returncode}: {done.stderr[-2000:]}")
    return took


async def run(config: BenchConfig) -> list[Row]:
    ensure_server_bytecode()  # as installed (bench/bytecode.py)
    workspace = make_project(config.folder("headless/workspace"), modules=1)
    home = config.folder("headless/home")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    env["TUNACODE_HOME"] = str(home)
    py = sys.executable
    run_hi, floor, help_, bare = Samples(), Samples(), Samples(), Samples()
    with ScriptedModelProcess(scripts.repeat(scripts.QUICK_TEXT)) as model:
        command = [py, "-m", "tunacode_lsp", "run", "--model", "openai-compatible:scripted",
                   "--base-url", model.chat_url, "--cwd", str(workspace), "hi"]
        _timed(command, env, workspace)  # warm the file cache and the store once
        for _ in range(config.reps(15)):
            floor.add(ms(_timed([py, "-c", FLOOR], env, workspace)))
            run_hi.add(ms(_timed(command, env, workspace)))
            bare.add(ms(_timed([py, "-c", "pass"], env, workspace)))
            help_.add(ms(_timed([py, "-m", "tunacode_lsp", "run", "--help"], env, workspace)))
    return [
        Row("tunacode-lsp run hi (spawn -> exit)", run_hi, floor, "one process importing pygls + tinyagent",
            Goal("ratio", 1.2)),
        Row("tunacode-lsp run --help", help_, bare, "bare interpreter (python -c pass)", Goal("p50", 150)),
    ]
