"""`tunacode-lsp demo [--keep]`: the offline demo, no API key needed.

It copies the demo workspace (a tiny project whose `add` subtracts) to a temp folder,
serves `scripts/demo.json` from the scripted model on 127.0.0.1, and runs the very code
path of `tunacode-lsp run` against it: a real server process, real tools, a real session
store in its own temp TUNACODE_HOME. It ends by running the project's check, which now
passes. The exit code is `run`'s (1 if the check still fails).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from tunacode_lsp.cli.headless import run_request
from tunacode_lsp.cli.run import EXIT_ERROR, EXIT_OK, RunOptions
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

HERE = Path(__file__).resolve().parent
DEMO_WORKSPACE = HERE / "demo_workspace"
DEMO_SCRIPT = HERE / "scripts" / "demo.json"
DEMO_MODEL = "openai-compatible:scripted"
DEMO_PROMPT = "The checks in check.py fail. Find the bug and fix it, then run the checks."
BANNER = "SCRIPTED DEMO: no real model is called; the answers come from a script"
CHECK_TIMEOUT_S = 30.0


def _rule(out: TextIO, text: str) -> None:
    out.write(f"\n== {text}\n")
    out.flush()


def run_check(workspace: Path) -> tuple[bool, str]:
    """Run the demo project's own check: (passed, its output)."""

    done = subprocess.run(
        [sys.executable, "check.py"], cwd=workspace, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S
    )
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def server_env(home: Path) -> dict[str, str]:
    """The user's environment without keys or TunaCode settings, with the demo's own home."""

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    env["TUNACODE_HOME"] = str(home)
    return env


def run_demo(keep: bool, out: TextIO, err: TextIO) -> int:
    border = "=" * len(BANNER)
    out.write(f"{border}\n{BANNER}\n{border}\n")
    root = Path(tempfile.mkdtemp(prefix="tunacode-demo-"))
    workspace, home = root / "workspace", root / "home"
    try:
        shutil.copytree(DEMO_WORKSPACE, workspace)
        before_source = (workspace / "calc.py").read_text(encoding="utf-8")
        passed, output = run_check(workspace)
        _rule(out, f"before: python3 check.py ({'passes' if passed else 'fails'})")
        out.write(output + "\n")
        _rule(out, f"tunacode-lsp run --approve auto {DEMO_PROMPT!r}")
        out.flush()
        with ScriptedModelServer(DEMO_SCRIPT) as model:
            opts = RunOptions(
                prompt=DEMO_PROMPT, model=DEMO_MODEL, base_url=model.chat_url, cwd=workspace, approve="auto"
            )
            code = asyncio.run(run_request(opts, out=out, err=err, env=server_env(home), session_hint=keep))
        after_source = (workspace / "calc.py").read_text(encoding="utf-8")
        diff = "".join(difflib.unified_diff(
            before_source.splitlines(keepends=True), after_source.splitlines(keepends=True),
            "a/calc.py", "b/calc.py",
        ))
        _rule(out, "what changed on disk")
        out.write(diff or "(nothing)\n")
        passed, output = run_check(workspace)
        _rule(out, f"after: python3 check.py ({'passes' if passed else 'still fails'})")
        out.write(output + "\n")
        if code == EXIT_OK and not passed:
            code = EXIT_ERROR
        _rule(out, "next")
        out.write(
            "That was a script. With a real model, the same command works on your own project:\n"
            "  export OPENAI_API_KEY=...   (or ANTHROPIC_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, ...: README)\n"
            '  tunacode-lsp run --approve auto "Fix the failing tests"   (the model follows the key; --model picks one)\n'
            "See docs/ci.md for the flags and exit codes, docs/neovim.md for the editor.\n"
        )
        if keep:
            out.write(f"kept: {workspace}\n  its session store: TUNACODE_HOME={home}\n")
        out.flush()
        return code
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tunacode-lsp demo",
        description="Offline demo: a scripted model fixes a bug in a sample project (no API key needed).",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp workspace and session store")
    parser.add_argument("prompt", nargs="?", help="ignored: the script plays a fixed session")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if args.prompt:
        print("(the scripted demo plays a fixed session; your prompt is used once a real model is set up)")
    try:
        return run_demo(args.keep, sys.stdout, sys.stderr)
    except BrokenPipeError:  # `| head` stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
