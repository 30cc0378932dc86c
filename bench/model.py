"""The scripted model as its own process on 127.0.0.1, so it never shares a GIL with what is timed."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

LISTENING = "scripted model listening on "


class ScriptedModelProcess:
    """`python -m tunacode_lsp.devtools.scripted_model` with a script; the script can be replaced."""

    def __init__(self, script: Any, *, decode_bodies: bool = True) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="tunacode-bench-model-")
        path = Path(self._dir.name) / "script.json"
        path.write_text(json.dumps(script))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tunacode_lsp.devtools.scripted_model", "--script", str(path)]
            + ([] if decode_bodies else ["--no-decode-bodies"]),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith(LISTENING):
            self.stop()
            raise RuntimeError(f"scripted model did not start: {line!r}")
        self.base_url = line[len(LISTENING):]
        self.chat_url = self.base_url + "/chat/completions"
        self._root = self.base_url.rsplit("/v1", 1)[0]

    def set_script(self, script: Any) -> None:
        self._post("/_scripted/script", script)

    def request_count(self) -> int:
        with urllib.request.urlopen(self._root + "/_scripted/requests", timeout=10) as answer:
            return len(json.loads(answer.read()))

    def _post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            self._root + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._dir.cleanup()

    def __enter__(self) -> ScriptedModelProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
