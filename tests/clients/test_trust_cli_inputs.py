"""Files named on `run`'s command line are read as regular files only, bounded, never waited
on: a FIFO (or a link to one) given to --context-file, --image or --mcp-config is exit 2 at
once; a --context-file range through a link out of the workspace never reaches the model
(the real CLI, the real server, the scripted model)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.clients.cli_support import run_cli, scripted_args

DONE = {"turns": [{"steps": [{"text": "Done."}]}]}
BOUND = 30.0


def _args(model, workspace: Path, prompt: str, *extra: str) -> list[str]:
    return ["run", *scripted_args(model.chat_url, workspace, *extra), prompt]


@pytest.mark.parametrize("flag", ["--context-file={p}", "--context-file={p}:1-2", "--image={p}", "--mcp-config={p}"])
@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo"])
def test_a_fifo_on_the_command_line_is_refused_at_once(model, workspace, home, flag, kind):
    os.mkfifo(workspace / "pipe")
    target = workspace / "pipe"
    if kind == "link-to-fifo":
        (workspace / "shot.png").symlink_to("pipe")
        target = workspace / "shot.png"
    model.set_script(DONE)
    done = run_cli(_args(model, workspace, "hi", flag.format(p=target)), home=home, timeout=BOUND)
    assert done.code == 2, done.stderr
    assert flag.split("=")[0] in done.stderr and "regular file" in done.stderr, done.stderr
    assert model.requests == []


def test_a_range_through_a_link_out_never_reaches_the_model(model, workspace, home, tmp_path):
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret_access_key = wJalrXUtnFEMI\nsecond\n")
    (workspace / "notes.md").symlink_to(secret)
    model.set_script(DONE)
    done = run_cli(_args(model, workspace, "hi", "--context-file", f"{workspace / 'notes.md'}:1-2"), home=home, timeout=BOUND)
    assert done.code == 2 and "params.context[0]" in done.stderr, done.stderr
    assert model.requests == [] and "wJalrXUtnFEMI" not in done.stderr + done.stdout
