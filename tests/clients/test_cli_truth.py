"""The command line says the truth in one line and exits with the documented code: bad prompts,
bad files and bad stores are exit 2 with one line (never a traceback), a run's own output files
are not the agent's changes, and a document is not imported twice by accident. Each runs the
real CLI as a subprocess (the real server under it where a request runs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.clients.cli_support import WAIT, cli_env, run_cli, scripted_args

HELLO = {"turns": [{"text": "Hello."}]}


def _one_line_error(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _run_bytes(argv: list[bytes], home: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable.encode(), b"-m", b"tunacode_lsp", *argv], input=stdin, capture_output=True,
                          env=cli_env(home), timeout=WAIT)


# ---------------------------------------------------------------- prompts that are not UTF-8


def test_a_non_utf8_prompt_argument_is_exit_2_in_one_line(workspace, home):
    done = _run_bytes([b"run", b"--cwd", str(workspace).encode(), b"fix \xff\xfe this"], home)
    assert done.returncode == 2
    assert "not valid UTF-8" in _one_line_error(done.stderr.decode())


def test_a_non_utf8_prompt_on_stdin_is_exit_2_in_one_line(workspace, home):
    done = _run_bytes([b"run", b"--cwd", str(workspace).encode(), b"-"], home, stdin=b"fix \xff\xfe this\n")
    assert done.returncode == 2
    assert "not valid UTF-8" in _one_line_error(done.stderr.decode())


# ---------------------------------------------------------------- flags checked the same way as settings


def test_max_turns_above_the_settings_bound_is_exit_2_like_zero(workspace, home):
    for value in ("0", "10001"):
        done = run_cli(["run", "--cwd", str(workspace), "--max-turns", value, "hi"], home=home)
        assert done.code == 2, (value, done.stderr)
        assert "--max-turns must be from 1 to 10000" in _one_line_error(done.stderr)


def test_a_context_file_that_is_a_folder_says_so(workspace, home):
    (workspace / "src").mkdir()
    done = run_cli(["run", "--cwd", str(workspace), "--context-file", str(workspace / "src"), "hi"], home=home)
    assert done.code == 2
    assert "a folder, not a file" in _one_line_error(done.stderr)


# ---------------------------------------------------------------- sessions: files and stores


def _stored_session(model, workspace: Path, home: Path) -> str:
    model.set_script(HELLO)
    done = run_cli(["run", *scripted_args(model.chat_url, workspace, "--json"), "hi"], home=home)
    assert done.code == 0, done.stderr
    return done.lines[-1]["sessionId"]


def test_export_to_a_missing_folder_is_exit_2_in_one_line(model, workspace, home, tmp_path):
    session_id = _stored_session(model, workspace, home)
    done = run_cli(["sessions", "export", session_id, "-o", str(tmp_path / "missing" / "x.json")], home=home)
    assert done.code == 2
    assert "cannot write" in _one_line_error(done.stderr)


def test_import_of_a_binary_file_is_exit_2_in_one_line(home):
    done = run_cli(["sessions", "import", "/bin/ls"], home=home)
    assert done.code == 2
    assert "not a UTF-8 text file" in _one_line_error(done.stderr)


def test_importing_the_same_document_twice_is_refused_unless_copy(model, workspace, home, tmp_path):
    session_id = _stored_session(model, workspace, home)
    exported = tmp_path / "doc.json"
    assert run_cli(["sessions", "export", session_id, "-o", str(exported)], home=home).code == 0
    again = run_cli(["sessions", "import", str(exported)], home=home)
    assert again.code == 1
    assert f"session {session_id} is already in the store" in _one_line_error(again.stderr)
    listed = json.loads(run_cli(["sessions", "list", "--json"], home=home).stdout)["sessions"]
    assert [s["sessionId"] for s in listed] == [session_id]
    copy = run_cli(["sessions", "import", str(exported), "--copy", "--json"], home=home)
    assert copy.code == 0, copy.stderr
    assert json.loads(copy.stdout)["sessionId"] != session_id


def test_a_data_folder_that_is_a_file_is_exit_2_not_no_sessions(tmp_path):
    not_a_folder = tmp_path / "home-file"
    not_a_folder.write_text("x")
    for action in (["list"], ["show", "abc"]):
        done = run_cli(["sessions", *action], home=not_a_folder)
        assert done.code == 2, done.stdout
        assert "is not a folder" in _one_line_error(done.stderr)
        assert done.stdout == ""


# ---------------------------------------------------------------- the run's own output is not a change


def test_output_redirected_into_the_checkout_is_not_a_change(model, workspace, home):
    (workspace / "notes.txt").write_text("tuna\n")
    model.set_script(HELLO)
    events = workspace / "tunacode-events.jsonl"
    log = workspace / "run.log"
    with events.open("wb") as out, log.open("wb") as err:
        proc = subprocess.run(
            [sys.executable, "-m", "tunacode_lsp", "run", *scripted_args(model.chat_url, workspace, "--json", "--require-changes"), "hi"],
            stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=cli_env(home), timeout=WAIT, cwd=workspace,
        )
    assert proc.returncode == 5, log.read_text()
    result = [json.loads(line) for line in events.read_text().splitlines() if line.strip()][-1]
    assert result["type"] == "result" and result["changedFiles"] == []


def test_plain_answer_redirected_into_the_checkout_is_not_listed_as_changed(model, workspace, home):
    model.set_script(HELLO)
    answer = workspace / "answer.md"
    with answer.open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "tunacode_lsp", "run", *scripted_args(model.chat_url, workspace), "hi"],
            stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=cli_env(home), timeout=WAIT,
        )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "[changed] nothing" in stderr and "answer.md" not in stderr
    assert answer.read_text().strip() == "Hello."
    assert os.path.getsize(answer) > 0


# ---------------------------------------------------------------- a person at a terminal


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    import select
    import time

    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_bare_server_on_a_terminal_says_what_it_is_and_one_ctrl_c_stops_it(home):
    import pty
    import signal

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tunacode_lsp"], stdin=follower, stdout=follower, stderr=follower,
                            env=cli_env(home), start_new_session=True)
    os.close(follower)
    try:
        screen = _read_until(leader, b"Ctrl-C stops", WAIT)
        assert b"a language server, speaking LSP on stdin/stdout" in screen, screen
        proc.send_signal(signal.SIGINT)
        code = proc.wait(WAIT)
        screen += _read_until(leader, b"stopped", 2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    assert code == 130, screen
    assert b"Fatal Python error" not in screen and b"Traceback" not in screen


def test_serve_tcp_says_where_it_listens(home):
    import signal
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "tunacode_lsp", "serve", "--tcp", f"127.0.0.1:{port}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cli_env(home))
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        assert line.strip() == f"tunacode-lsp: serving LSP on tcp://127.0.0.1:{port} (Ctrl-C stops)"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(WAIT) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- never silent, never a torn line


def test_a_slow_model_is_never_silence_in_a_ci_log(model, workspace, home):
    model.set_script({"turns": [{"steps": [{"stall": 11.5}, {"text": "late answer"}]}]})
    done = run_cli(["run", *scripted_args(model.chat_url, workspace), "hi"], home=home, timeout=WAIT + 15)
    assert done.code == 0, done.stderr
    assert "[note] still waiting for the model (10 s)" in done.stderr or \
        "[note] still waiting for the model (11 s)" in done.stderr, done.stderr
    assert done.stdout.strip() == "late answer"


def test_a_slow_model_shows_a_ticking_wait_on_a_terminal(model, workspace, home):
    import pty
    import select
    import time

    model.set_script({"turns": [{"steps": [{"stall": 1.5}, {"text": "there"}]}]})
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tunacode_lsp", "run", *scripted_args(model.chat_url, workspace), "hi"],
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=cli_env(home))
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    os.close(leader)
    assert proc.wait(WAIT) == 0
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "waiting for the model  1." in screen, screen


def test_a_server_that_dies_mid_answer_ends_the_line_and_names_the_session(model, workspace, home):
    import select
    import signal
    import time

    model.set_script({"turns": [{"steps": [{"text": "partial"}, {"stall": 60}]}]})
    proc = subprocess.Popen([sys.executable, "-m", "tunacode_lsp", "run", *scripted_args(model.chat_url, workspace), "hi"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(home))
    assert proc.stdout is not None and proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + WAIT
    while b"partial" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            seen += os.read(proc.stdout.fileno(), 4096)
    assert b"partial" in seen
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert children, "the CLI's server process"
    for child in children:
        os.kill(int(child), signal.SIGKILL)
    out, err = proc.communicate(timeout=WAIT)
    stdout, stderr = (seen + out).decode(), err.decode()
    assert proc.returncode == 1, stderr
    assert stdout == "partial\n", stdout  # the torn answer ends its own line
    assert "tunacode-lsp: error: the language server failed" in stderr
    assert re.search(r"^\[session\] [0-9a-f-]{36}  \(continue with", stderr, re.M), stderr


def test_denied_calls_are_one_line_each(model, workspace, home):
    model.set_script({"turns": [
        {"tool_call": {"name": "bash", "arguments": {"command": "echo a; echo b"}}},
        {"tool_call": {"name": "bash", "arguments": {"command": "echo c"}}},
        {"text": "done"},
    ]})
    done = run_cli(["run", *scripted_args(model.chat_url, workspace), "hi"], home=home)
    assert done.code == 0, done.stderr
    denied = [line for line in done.stderr.splitlines() if line.startswith("[denied]")]
    assert denied == ["[denied] bash echo a; echo b", "[denied] bash echo c"], done.stderr
