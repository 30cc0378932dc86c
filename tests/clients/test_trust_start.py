"""No code from the workspace runs in the server: a checkout holding Python modules named like
the server's own imports (`tunacode_lsp/`, `pygls/`, `orjson.py`, stdlib names ...) is never
imported, by the real `run` (console script, its server process) and the `python -m` entry.

Every hostile module writes a marker file when imported; no marker may appear."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.clients.cli_support import WAIT, cli_env, scripted_args

from tunacode_lsp.cli.spawn import server_command, server_env

HELLO = {"turns": [{"steps": [{"text": "Hello from the scripted model.", "chunks": 2}]}]}

# packages and modules the server and the CLI import, as a folder package or a single file
HOSTILE = [
    "tunacode_lsp/__init__.py", "pygls/__init__.py", "lsprotocol/__init__.py", "cattrs/__init__.py",
    "attrs/__init__.py", "httpx/__init__.py", "orjson.py", "tinyagent/__init__.py", "pathspec/__init__.py",
    "pydantic/__init__.py", "typing_extensions.py", "idna/__init__.py",
    "argparse.py", "json/__init__.py", "asyncio/__init__.py", "subprocess.py", "sqlite3/__init__.py",
    "sitecustomize.py", "usercustomize.py",
]
CONSOLE_SCRIPT = Path(sys.executable).parent / "tunacode-lsp"


def plant(folder: Path, markers: Path) -> None:
    """A checkout whose every module writes `markers/<name>` (and an env dump) when imported."""

    markers.mkdir(exist_ok=True)
    for rel in HOSTILE:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        name = rel.split("/")[0].removesuffix(".py")
        target.write_text(
            "import os\n"
            f"with open({str(markers / name)!r}, 'w') as f:\n"
            "    f.write(repr(sorted(os.environ)))\n"
        )


def imported(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def test_the_server_command_runs_python_without_the_working_directory() -> None:
    command = server_command()
    assert command[:3] == [sys.executable, "-P", "-m"] and command[3] == "tunacode_lsp"


@pytest.mark.parametrize(("value", "kept"), [
    (":/abs/one", "/abs/one"), ("/abs/one::rel:.", "/abs/one"), ("", None), (":", None), ("/a:/b", "/a:/b"),
])
def test_the_servers_pythonpath_keeps_only_absolute_entries(value: str, kept: str | None) -> None:
    env = server_env({"PYTHONPATH": value, "HOME": "/h"})
    assert env.get("PYTHONPATH") == kept and env["HOME"] == "/h"


def test_run_in_a_hostile_checkout_imports_none_of_it(model, workspace: Path, home: Path, tmp_path: Path) -> None:
    """The console script started in the checkout, its server started there too; `--approve
    deny` does not matter: nothing of the checkout is imported."""

    markers = tmp_path / "markers"
    plant(workspace, markers)
    model.set_script(HELLO)
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "run", *scripted_args(model.chat_url, workspace, "--approve", "deny"), "Say hello"],
        cwd=workspace, env=cli_env(home, SECRET_TOKEN="s3cr3t"), capture_output=True, text=True, timeout=WAIT * 2,
    )
    assert imported(markers) == []
    assert done.returncode == 0, done.stderr
    assert "Hello from the scripted model." in done.stdout


def test_an_empty_pythonpath_entry_does_not_bring_the_checkout_back(model, workspace: Path, home: Path, tmp_path: Path) -> None:
    """`PYTHONPATH=":/x"` (a common slip: `$PYTHONPATH:/x` with nothing before) means the
    working directory to Python; the server `run` starts in the checkout does not get it."""

    markers = tmp_path / "markers"
    plant(workspace, markers)
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    model.set_script(HELLO)
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "run", *scripted_args(model.chat_url, workspace), "Say hello"],
        cwd=neutral, env=cli_env(home, PYTHONPATH=":/nonexistent"), capture_output=True, text=True, timeout=WAIT * 2,
    )
    assert imported(markers) == []
    assert done.returncode == 0, done.stderr


def test_python_m_without_dash_p_still_drops_the_working_directory(workspace: Path, home: Path, tmp_path: Path) -> None:
    """A start command someone else wrote (`python3 -m tunacode_lsp`, no -P): the entry point
    drops the working directory before importing anything but the package itself. (A
    checkout's own `tunacode_lsp/` cannot be kept out that way: the start commands use -P.)"""

    markers = tmp_path / "markers"
    plant(workspace, markers)
    (workspace / "tunacode_lsp" / "__init__.py").unlink()
    (workspace / "tunacode_lsp").rmdir()
    done = subprocess.run(
        [sys.executable, "-m", "tunacode_lsp"], input=b"", cwd=workspace, env=cli_env(home),
        capture_output=True, timeout=WAIT * 2,
    )
    assert imported(markers) == []
    assert done.returncode == 0, done.stderr.decode(errors="replace")
