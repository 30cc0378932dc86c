"""Run `python -m tunacode_lsp ...` as a real subprocess and watch its output as it comes.

`CliProcess` reads stdout and stderr on threads into lists guarded by a condition, so a
test waits for a line (e.g. the first text_delta before sending SIGINT) instead of
sleeping. The child gets a clean environment: no API keys, no TUNACODE_* settings, its own
TUNACODE_HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

WAIT = 30.0  # seconds: generous, the machine is shared


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    env.pop("GITHUB_ACTIONS", None)  # a test run inside Actions: no workflow-command fence unless a test asks
    env.update({"TUNACODE_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    env["XDG_CONFIG_HOME"] = str(home / "config")  # never the developer's own settings files
    env.update(extra)
    return env


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[dict[str, Any]]:
        """stdout as JSON Lines (every line must parse)."""

        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


class CliProcess:
    def __init__(self, args: list[str], *, home: Path, cwd: Path | None = None, stdin: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.cond = threading.Condition()
        self.out_lines: list[str] = []
        self.err_lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tunacode_lsp", *args],
            cwd=cwd,
            env=env or cli_env(home),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out_lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err_lines), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        if stdin is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(stdin)
            self.proc.stdin.close()

    def _read(self, stream: IO[str] | None, into: list[str]) -> None:
        assert stream is not None
        for line in stream:
            with self.cond:
                into.append(line)
                self.cond.notify_all()

    def wait_for_json(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict[str, Any]:
        """The first stdout JSON line that satisfies predicate; TimeoutError (with the output) otherwise."""

        def found() -> dict[str, Any] | None:
            for line in self.out_lines:
                obj = json.loads(line)
                if predicate(obj):
                    return obj
            return None

        with self.cond:
            if not self.cond.wait_for(lambda: found() is not None or self.proc.poll() is not None, timeout):
                raise TimeoutError(f"no such line within {timeout} s; stderr: {''.join(self.err_lines)}")
            obj = found()
        if obj is None:
            raise AssertionError(f"the CLI exited first; stdout: {''.join(self.out_lines)} stderr: {''.join(self.err_lines)}")
        return obj

    def finish(self, timeout: float = WAIT) -> Finished:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        for reader in self._readers:
            reader.join(timeout)
        return Finished(code, "".join(self.out_lines), "".join(self.err_lines))


def run_cli(args: list[str], *, home: Path, cwd: Path | None = None, stdin: str | None = None,
            env: dict[str, str] | None = None, timeout: float = WAIT) -> Finished:
    return CliProcess(args, home=home, cwd=cwd, stdin=stdin, env=env).finish(timeout)


def scripted_args(chat_url: str, workspace: Path, *extra: str) -> list[str]:
    """`run` flags that point at the scripted model and the test's workspace."""

    return ["--model", "openai-compatible:scripted", "--base-url", chat_url, "--cwd", str(workspace), *extra]
