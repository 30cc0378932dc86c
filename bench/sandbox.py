"""The shell's start cost: `bash` running `true` inside the sandbox with its network (pasta),
against the sandbox without network (shellNetwork false) and against no sandbox, in the same run."""

from __future__ import annotations

import time

from .config import BenchConfig
from .stats import Goal, Row, Samples, ms


async def run(config: BenchConfig) -> list[Row]:
    from tunacode_lsp.tools import ToolSettings, build_tools
    from tunacode_lsp.tools.sandbox import sandbox_state
    from tunacode_lsp.tools.sandbox_network import pasta_path

    root = config.folder("sandbox-ws")
    kinds = {
        "pasta": ToolSettings(),
        "no network": ToolSettings(shell_network=False),
        "unsandboxed": ToolSettings(shell_sandbox="off"),
    }
    tools = {kind: {t.name: t for t in build_tools(root, settings)}["bash"] for kind, settings in kinds.items()}
    times = {kind: Samples() for kind in kinds}
    for _ in range(config.reps(15, 1)):
        for kind, tool in tools.items():
            started = time.perf_counter()
            await tool.execute("bench", {"command": "true"}, None, None)
            times[kind].add(ms(time.perf_counter() - started))
    if not sandbox_state("auto").active:
        return [Row("bash `true`, unsandboxed (no bwrap here)", times["unsandboxed"])]
    rows = [Row("bash `true` in the sandbox, no network", times["no network"], times["unsandboxed"],
                "the same, unsandboxed", Goal("p50", 250))]
    if pasta_path():
        rows.insert(0, Row("bash `true` in the sandbox with pasta", times["pasta"], times["no network"],
                           "the sandbox without network", Goal("p50", 500)))
    return rows
