"""The grep tool (ripgrep under it) over a generated 30,000-file tree, against `rg` run
directly on the same tree with the same search, in the same run."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from .config import BenchConfig
from .stats import Goal, Row, Samples, ms

FILES = 30_000
PER_FOLDER = 100


def _tree(root: Path, files: int) -> None:
    for index in range(files):
        folder = root / f"pkg{index // PER_FOLDER:04}"
        if index % PER_FOLDER == 0:
            folder.mkdir(parents=True, exist_ok=True)
        body = f"def function_{index}(x):\n    return x + {index}\n" * 5
        if index % 997 == 0:
            body += "NEEDLE = 'here'\n"
        (folder / f"mod{index:05}.py").write_text(body)


async def run(config: BenchConfig) -> list[Row]:
    from tunacode_lsp.tools import build_tools
    from tunacode_lsp.tools.ripgrep import COMMON_FLAGS, rg_binary

    files = config.reps(FILES, 3_000)
    root = config.folder("search-tree")
    await asyncio.to_thread(_tree, root, files)
    grep = {tool.name: tool for tool in build_tools(root)}["grep"]
    direct = [rg_binary(), *COMMON_FLAGS, "--no-heading", "--with-filename", "--line-number", "-e", "NEEDLE", "--", "."]
    tool_times, rg_times = Samples(), Samples()
    for _ in range(config.reps(7, 1)):
        started = time.perf_counter()
        await asyncio.to_thread(subprocess.run, direct, cwd=root, capture_output=True, check=False)
        rg_times.add(ms(time.perf_counter() - started))
        started = time.perf_counter()
        await grep.execute("bench", {"pattern": "NEEDLE"}, None, None)
        tool_times.add(ms(time.perf_counter() - started))
    return [
        Row(f"grep tool over {files:,} files", tool_times, rg_times, "rg run directly, same search", Goal("ratio", 1.5)),
    ]
