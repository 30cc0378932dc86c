"""`python -m bench [--quick] [--only GROUP ...] [--markdown FILE]`: run the figures, print the table."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from . import (
    abort,
    anthropic_cache,
    big_workspace,
    checkpoint_bound,
    checkpoints,
    concurrency,
    crowd,
    headless,
    overhead,
    prefix_reuse,
    provider_abort,
    resume,
    sandbox,
    search,
    startup,
    storage,
    turn_stall,
)
from .config import BenchConfig
from .report import load_average, render_markdown, render_text
from .stats import Row

GROUPS: dict[str, Callable[[BenchConfig], Awaitable[list[Row]]]] = {
    "abort": abort.run,
    "overhead": overhead.run,
    "storage": storage.run,
    "concurrency": concurrency.run,
    "startup": startup.run,
    "headless": headless.run,
    "search": search.run,
    "prefix_reuse": prefix_reuse.run,
    "anthropic_cache": anthropic_cache.run,
    "provider_abort": provider_abort.run,
    "resume": resume.run,
    "checkpoints": checkpoints.run,
    "checkpoint_bound": checkpoint_bound.run,
    "turn_stall": turn_stall.run,
    "big_workspace": big_workspace.run,
    "crowd": crowd.run,
    "sandbox": sandbox.run,
}


async def run_groups(names: list[str], config: BenchConfig) -> list[Row]:
    rows: list[Row] = []
    for name in names:
        started = time.monotonic()
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        rows += await GROUPS[name](config)
        print(f"[bench] {name} done in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one sample of each figure (CI: checks it runs)")
    parser.add_argument("--only", nargs="+", choices=list(GROUPS), help="run only these groups")
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (sessions, workspaces)")
    args = parser.parse_args(argv)
    config = BenchConfig(quick=args.quick)
    load_before = load_average()
    try:
        rows = asyncio.run(run_groups(args.only or list(GROUPS), config))
    finally:
        if args.keep:
            print(f"[bench] scratch folder kept: {config.scratch}", file=sys.stderr)
        else:
            shutil.rmtree(config.scratch, ignore_errors=True)
    print(render_text(rows, quick=args.quick, load_before=load_before))
    if args.markdown:
        args.markdown.write_text(render_markdown(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
