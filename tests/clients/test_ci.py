"""`tunacode-lsp run` tells the truth in CI: changed files, denied calls, exit codes 4 and 5,
configuration problems as exit 2 in one line, an early Ctrl-C as a quiet 130, and output a
person can read (colour on a terminal, a progress line, bash exit codes, a closing summary).
Each runs the real CLI as a subprocess, the real server under it, the scripted model here."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.clients.cli_support import WAIT, CliProcess, cli_env, run_cli, scripted_args

from tunacode_lsp.cli import changes
from tunacode_lsp.cli import headless as cli_headless
from tunacode_lsp.cli import run as cli_run

WRITE_NEW = {"turns": [
    {"tool_call": {"name": "write_file", "arguments": {"filepath": "new.txt", "content": "x\n"}}},
    {"text": "done"},
]}
HELLO = {"turns": [{"text": "Hello."}]}


def _args(model, workspace: Path, prompt: str, *extra: str) -> list[str]:
    return ["run", *scripted_args(model.chat_url, workspace, *extra), prompt]


def _bash_turns(*commands: str) -> dict:
    turns = [{"tool_call": {"name": "bash", "arguments": {"command": c}}} for c in commands]
    return {"turns": [*turns, {"text": "ran it"}]}


# ---------------------------------------------------------------- denied calls, exit 4


def test_a_denied_write_is_in_the_result_and_fail_on_denied_exits_4(model, workspace, home):
    model.set_script(WRITE_NEW)
    done = run_cli(_args(model, workspace, "write it", "--json", "--fail-on-denied"), home=home)
    assert done.code == 4, done.stderr
    result = done.lines[-1]
    assert result["type"] == "result" and result["stopReason"] == "end_turn"
    final = [e for e in done.lines if e.get("type") == "tool_call_update"][-1]
    assert final["status"] == "failed" and final["denied"] is True
    assert result["deniedToolCalls"] == [{"toolCallId": final["toolCallId"], "name": "write_file", "summary": "new.txt"}]
    assert result["changedFiles"] == []
    assert not (workspace / "new.txt").exists()


def test_without_the_flag_a_denied_call_still_exits_0_and_is_reported(model, workspace, home):
    model.set_script(WRITE_NEW)
    done = run_cli(_args(model, workspace, "write it"), home=home)
    assert done.code == 0, done.stderr
    assert "[denied] write_file new.txt" in done.stderr
    assert re.search(r"\[done\] end_turn: 2 turns, 1 tool call \(1 denied\), 0 files changed, ", done.stderr), done.stderr
    assert "[changed] nothing" in done.stderr
    assert "[tool] Write new.txt (+1) denied" in done.stderr


def test_allowed_calls_are_not_denied(model, workspace, home):
    model.set_script(WRITE_NEW)
    done = run_cli(_args(model, workspace, "write it", "--json", "--approve", "auto", "--fail-on-denied"), home=home)
    assert done.code == 0, done.stderr
    assert done.lines[-1]["deniedToolCalls"] == []
    assert all("denied" not in e for e in done.lines if e.get("type") == "tool_call_update")


# ---------------------------------------------------------------- changed files, exit 5


def test_require_changes_exits_5_when_nothing_changed(model, workspace, home):
    (workspace / "notes.txt").write_text("tuna\n")
    model.set_script(HELLO)
    done = run_cli(_args(model, workspace, "hi", "--json", "--require-changes"), home=home)
    assert done.code == 5, done.stderr
    assert done.lines[-1]["stopReason"] == "end_turn" and done.lines[-1]["changedFiles"] == []


def test_changed_files_list_what_the_tools_changed_as_git_sees_it(model, workspace, home):
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "same.txt").write_text("same\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "edit.txt").write_text("one\n")
    model.set_script(_bash_turns(
        "mkdir -p build sub && echo out > build/out.txt && echo new > sub/made.txt "
        "&& printf 'same\\n' > same.txt && rm gone.txt && echo two > edit.txt"
    ))
    done = run_cli(_args(model, workspace, "change", "--json", "--approve", "auto", "--require-changes"), home=home)
    assert done.code == 0, done.stderr
    assert (workspace / "build" / "out.txt").exists()  # the command ran
    # ignored (build/), rewritten with the same bytes (same.txt): not changes
    assert done.lines[-1]["changedFiles"] == ["edit.txt", "gone.txt", "sub/made.txt"]


def test_plain_mode_lists_the_changed_files(model, workspace, home):
    model.set_script(WRITE_NEW)
    done = run_cli(_args(model, workspace, "write it", "--approve", "auto", "--require-changes"), home=home)
    assert done.code == 0, done.stderr
    assert "[changed] new.txt\n" in done.stderr
    assert "1 file changed" in done.stderr


def test_the_servers_changed_files_win_over_the_snapshot(workspace):
    opts = cli_run.parse_args(["--cwd", str(workspace), "hi"])
    run = cli_headless.HeadlessRun(opts, cli_headless.JsonLinesOutput(io.StringIO(), io.StringIO()))
    run._before_snapshot = changes.take(workspace)
    (workspace / "local.txt").write_text("seen by the snapshot\n")
    import asyncio

    from_server = asyncio.run(run._outcome({"stopReason": "end_turn", "changedFiles": ["server.txt"]}))
    from_snapshot = asyncio.run(run._outcome({"stopReason": "end_turn"}))
    assert from_server["changedFiles"] == ["server.txt"]
    assert from_snapshot["changedFiles"] == ["local.txt"]


def test_the_snapshot_is_bounded(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"f{i:02}.txt").write_text("x" * 100)
    monkeypatch.setattr(changes, "MAX_FILES", 10)
    monkeypatch.setattr(changes, "HASH_BUDGET_BYTES", 500)
    before = changes.take(tmp_path)
    assert len(before.files) == 10 and not before.complete
    assert sum(1 for f in before.files.values() if f.digest is not None) == 5
    (tmp_path / "f00.txt").write_text("y" * 100)  # same size, new content, hashed before
    assert changes.changed_files(before, changes.take(tmp_path, before)) == ["f00.txt"]


# ---------------------------------------------------------------- bash lines with their exit code


def test_bash_lines_show_the_exit_code_even_after_long_output(model, workspace, home):
    model.set_script(_bash_turns("exit 3", "seq 1 2000; exit 2"))
    done = run_cli(_args(model, workspace, "run", "--approve", "auto"), home=home)
    assert done.code == 0, done.stderr
    assert re.search(r"\[tool\] bash completed in \d+ ms, exit code 3\n", done.stderr), done.stderr
    assert re.search(r"\[tool\] bash completed in \d+ ms, exit code 2\n", done.stderr), done.stderr

    model.set_script(_bash_turns("seq 1 2000; exit 2"))
    as_json = run_cli(_args(model, workspace, "run", "--approve", "auto", "--json"), home=home)
    final = [e for e in as_json.lines if e.get("type") == "tool_call_update"][-1]
    assert final["exitCode"] == 2 and "[exit code 2]" not in final["result"]  # cut from the preview


# ---------------------------------------------------------------- the closing summary, --verbose


def test_the_closing_summary_counts_turns_calls_tokens_cost_and_time(model, workspace, home):
    model.set_script({"turns": [
        {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}},
                   {"usage": {"prompt_tokens": 1000, "completion_tokens": 20, "cost": 0.0125}}]},
        {"steps": [{"text": "done"}, {"usage": {"prompt_tokens": 1100, "completion_tokens": 5, "cost": 0.0025}}]},
    ]})
    done = run_cli(_args(model, workspace, "look"), home=home)
    assert done.code == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("[done]"))
    assert re.fullmatch(
        r"\[done\] end_turn: 2 turns, 1 tool call, 0 files changed, 2,125 tokens, cost \$0\.0150, \d+\.\d s", line
    ), line


def test_verbose_prints_each_server_log_line_once(model, workspace, home):
    model.set_script(HELLO)
    done = run_cli(_args(model, workspace, "hi", "--verbose"), home=home)
    assert done.code == 0, done.stderr
    ended = [x for x in done.stderr.splitlines() if re.search(r"request req_\w+ in \S+ ended: end_turn", x)]
    assert len(ended) == 1, done.stderr


# ---------------------------------------------------------------- configuration problems: exit 2, one line


@pytest.mark.parametrize(
    ("flags", "env", "needle"),
    [
        (["--base-url", "127.0.0.1:9/v1"], {}, "--base-url '127.0.0.1:9/v1' is not an http(s) URL: write it with its scheme, e.g. http://127.0.0.1:9/v1"),
        ([], {"TUNACODE_BASE_URL": "localhost:11434/v1"}, "TUNACODE_BASE_URL 'localhost:11434/v1' is not an http(s) URL"),
        ([], {"TUNACODE_HOME": "/proc/no-such-folder"}, "TUNACODE_HOME /proc/no-such-folder cannot be created"),
    ],
)
def test_configuration_problems_exit_2_with_one_line(model, workspace, home, flags, env, needle):
    args = ["run", "--model", "openai-compatible:scripted", "--cwd", str(workspace), *flags, "hi"]
    if "--base-url" not in flags:
        args[1:1] = ["--base-url", model.chat_url] if "TUNACODE_BASE_URL" not in env else []
    done = run_cli(args, home=home, env=cli_env(home, **env))
    assert done.code == 2, done.stderr
    assert done.stderr.count("\n") == 1 and needle in done.stderr, done.stderr
    assert done.stdout == "" and model.requests == []


def test_a_tunacode_home_that_is_a_file_exits_2(model, workspace, tmp_path):
    not_a_folder = tmp_path / "home-file"
    not_a_folder.write_text("")
    done = run_cli(_args(model, workspace, "hi", "--json"), home=not_a_folder)
    assert done.code == 2
    assert done.stderr == f"tunacode-lsp run: TUNACODE_HOME {not_a_folder} is a file, not a folder: point TUNACODE_HOME at a writable folder\n"
    assert model.requests == []


# ---------------------------------------------------------------- an early Ctrl-C: 130, quiet


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _wait_for(condition, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.002)  # polling /proc: there is no notification for a fork
    raise TimeoutError("condition not met")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_server_starts_exits_130_quietly(model, workspace, home, sig):
    model.set_script(HELLO)
    cli = CliProcess(_args(model, workspace, "hi"), home=home)
    server_pid = _wait_for(lambda: _children(cli.proc.pid))[0]
    cli.proc.send_signal(sig)  # the client is still importing; the server too
    done = cli.finish()
    assert done.code == 130, done.stderr
    assert "Traceback" not in done.stderr and done.stderr == "" and done.stdout == ""
    assert not Path(f"/proc/{server_pid}").exists()  # stopped and reaped
    assert model.requests == []


# ---------------------------------------------------------------- a person at a terminal


def _run_on_a_pty(args: list[str], env: dict[str, str], timeout: float = WAIT) -> tuple[int, str]:
    """The CLI with stdout and stderr on one pseudo-terminal, as in a shell."""

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tunacode_lsp", *args], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: every writer exited
                break
            if not data:
                break
            chunks.append(data)
    os.close(leader)
    return proc.wait(timeout), b"".join(chunks).decode("utf-8", "replace")


def test_colour_and_a_progress_line_on_a_terminal(model, workspace, home):
    model.set_script(_bash_turns("sleep 1; echo slept"))
    code, screen = _run_on_a_pty(_args(model, workspace, "wait", "--approve", "auto"), cli_env(home))
    assert code == 0, screen
    assert "\x1b[36m[tool]\x1b[0m Run sleep 1; echo slept" in screen
    assert re.search(r"\r\x1b\[K\x1b\[2m. Run sleep 1; echo slept  0\.\d s", screen), screen  # the ticking line
    assert "\x1b[32mexit code 0\x1b[0m" in screen
    assert "\x1b[1m[done] end_turn" in screen.replace("\x1b[32m", "")


def test_no_color_turns_colour_and_the_progress_line_off(model, workspace, home):
    model.set_script(_bash_turns("sleep 1"))
    code, screen = _run_on_a_pty(_args(model, workspace, "wait", "--approve", "auto"), cli_env(home, NO_COLOR="1"))
    assert code == 0, screen
    assert "\x1b[" not in screen and "[tool] Run sleep 1" in screen


def test_not_a_terminal_means_no_escape_codes(model, workspace, home):
    model.set_script(_bash_turns("sleep 0.5"))
    done = run_cli(_args(model, workspace, "wait", "--approve", "auto"), home=home)
    assert done.code == 0 and "\x1b" not in done.stderr + done.stdout


# ---------------------------------------------------------------- start-up: the light client


def _imported(args: list[str], home: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "tunacode_lsp", *args], capture_output=True,
                          text=True, env=cli_env(home, **extra), timeout=WAIT)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, names


HEAVY = ("pygls", "lsprotocol", "tinyagent", "tunacode_lsp.agent", "tunacode_lsp.lsp", "asyncio")


@pytest.mark.parametrize("args", [["run", "--help"], ["run", "--approve", "maybe", "hi"], ["run", "--max-turns", "0", "hi"]])
def test_help_and_argument_errors_import_nothing_heavy(home, args):
    done, names = _imported(args, home)
    assert done.returncode in (0, 2)
    assert "tunacode_lsp.cli.run" in names
    assert not [n for n in names if n.startswith(HEAVY)], sorted(n for n in names if n.startswith(HEAVY))


def test_the_client_of_a_whole_run_never_imports_pygls_or_the_agent(model, workspace, home):
    model.set_script(HELLO)
    done, names = _imported(_args(model, workspace, "hi"), home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tunacode_lsp.cli.headless" in names and "orjson" in names
    # tools/ itself is light (its tool factories load with build_tools); the snapshot reads ignore
    # files with tools/confined_read.py, so only the tool modules that need tinyagent are heavy
    heavy = ("pygls", "lsprotocol", "tinyagent", "tunacode_lsp.agent", "tunacode_lsp.lsp", "tunacode_lsp.tools.bash",
             "tunacode_lsp.tools.read_file", "tunacode_lsp.tools.base")
    assert not [n for n in names if n.startswith(heavy)], sorted(n for n in names if n.startswith(heavy))


def test_json_result_line_parses_with_the_new_fields(model, workspace, home):
    model.set_script(HELLO)
    done = run_cli(_args(model, workspace, "hi", "--json"), home=home)
    result = json.loads(done.stdout.splitlines()[-1])
    assert {"changedFiles", "deniedToolCalls", "stopReason", "sessionId", "usage", "turns", "toolCalls"} <= result.keys()


# ---------------------------------------------------------------- a hostile model and a terminal


HOSTILE_TEXT = "Done.\x1b]0;pwned title\x07\rHIDDEN\x1b[2J\x9b31m"


def test_a_hostile_models_control_characters_are_shown_not_obeyed_on_a_terminal(model, workspace, home):
    model.set_script({"turns": [
        {"tool_call": {"name": "bash", "arguments": {"command": "echo hi #\x1b]52;c;cm0gLXJmIH4=\x07\rlooks harmless"}}},
        {"text": HOSTILE_TEXT},
    ]})
    code, screen = _run_on_a_pty(_args(model, workspace, "go", "--approve", "auto"), cli_env(home, NO_COLOR="1"))
    assert code == 0, screen
    assert "\x1b" not in screen and "\x07" not in screen and "\x9b" not in screen  # NO_COLOR: no escape at all is ours
    assert "Done.\\x1b]0;pwned title\\x07\\x0dHIDDEN\\x1b[2J\\x9b31m" in screen
    # the server's one-line summary ends the line at the \r and says so; the escapes are shown, not obeyed
    assert "[tool] Run echo hi #\\x1b]52;c;cm0gLXJmIH4=\\x07 (+1 more line)" in screen


def test_redirected_output_keeps_the_answer_as_it_is(model, workspace, home):
    model.set_script({"turns": [{"text": HOSTILE_TEXT}]})
    done = subprocess.run([sys.executable, "-m", "tunacode_lsp", *_args(model, workspace, "go")], env=cli_env(home),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=WAIT)
    assert done.returncode == 0 and done.stdout == (HOSTILE_TEXT + "\n").encode()  # a file gets the model's exact text


def test_a_changed_file_with_a_newline_in_its_name_stays_on_one_line(model, workspace, home):
    model.set_script(_bash_turns("printf x > \"$(printf 'evil\\n[done] end_turn')\""))
    done = run_cli(_args(model, workspace, "go", "--approve", "auto"), home=home)
    assert done.code == 0, done.stderr
    assert "[changed] evil [done] end_turn\n" in done.stderr
    assert sum(1 for line in done.stderr.splitlines() if line.startswith("[done]")) == 1


def test_a_multi_line_command_says_it_has_more_lines(model, workspace, home):
    model.set_script(_bash_turns("echo harmless\nrm -f nothing-here\ntrue"))
    done = run_cli(_args(model, workspace, "go", "--approve", "auto"), home=home)
    assert "[tool] Run echo harmless (+2 more lines)\n" in done.stderr


# ---------------------------------------------------------------- a broken or hostile server


FAKE_SERVER = r'''
import json, sys
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line.strip() == b"":
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
def send(obj, header=b"Content-Length"):
    body = json.dumps(obj).encode()
    sys.stdout.buffer.write(header + b": %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()
MODE = sys.argv[1]
init = read()
if MODE == "bad-length":
    sys.stdout.buffer.write(b"Content-Length: abc\r\n\r\n{}"); sys.stdout.buffer.flush(); read(); sys.exit(0)
if MODE == "endless-header":
    sys.stdout.buffer.write(b"X" * 200_000); sys.stdout.buffer.flush(); read(); sys.exit(0)
if MODE == "silent":
    while True:
        read()
send({"jsonrpc": "2.0", "id": init["id"], "result": {"capabilities": {"experimental": {"tunacode": {"protocolVersion": 3}}}}},
     header=b"content-length")  # any case, as the base protocol allows
read()  # initialized
request = read()
# requests of its own the client must answer, hostile shapes included
send({"jsonrpc": "2.0", "id": "s1", "method": "window/showMessageRequest", "params": "not an object"})
send({"jsonrpc": "2.0", "id": "s2", "method": "no/such/method", "params": {}})
answers = {}
while len(answers) < 2:
    message = read()
    answers[message["id"]] = message
sys.stderr.write("answers: " + json.dumps(answers, sort_keys=True) + "\n"); sys.stderr.flush()
if MODE == "dies":
    sys.stderr.write("fake server: dying mid-request\n"); sys.exit(7)
'''


def _fake_run(workspace: Path, mode: str, *flags: str) -> tuple[int, str, str]:
    import asyncio

    out, err = io.StringIO(), io.StringIO()
    opts = cli_run.parse_args(["--cwd", str(workspace), "--json", *flags, "hi"])
    command = [sys.executable, "-c", FAKE_SERVER, mode]
    code = asyncio.run(cli_headless.HeadlessRun(opts, cli_headless.JsonLinesOutput(out, err), server_command=command).run())
    return code, out.getvalue(), err.getvalue()


def test_a_server_that_dies_mid_request_exits_1_after_its_requests_were_answered(workspace):
    started = time.monotonic()
    code, out, err = _fake_run(workspace, "dies", "--verbose")
    assert code == 1 and "the language server failed" in err and time.monotonic() - started < WAIT
    answers = json.loads(next(line for line in err.splitlines() if line.startswith("answers: "))[len("answers: "):])
    assert answers["s1"]["result"] == {"title": "Deny"}  # a bad prompt is still answered, as a denial
    assert answers["s2"]["error"]["code"] == -32601
    assert json.loads(out.splitlines()[-1])["type"] == "error"


@pytest.mark.parametrize("mode", ["bad-length", "endless-header"])
def test_broken_framing_from_the_server_exits_1_at_once(workspace, mode):
    started = time.monotonic()
    code, _, err = _fake_run(workspace, mode)
    assert code == 1 and "the language server failed" in err, err
    assert time.monotonic() - started < 3  # not the 5 s shutdown wait


def test_a_server_that_never_answers_initialize_is_given_up_on(workspace, monkeypatch):
    monkeypatch.setattr(cli_headless, "START_TIMEOUT_S", 0.5)
    started = time.monotonic()
    code, _, err = _fake_run(workspace, "silent")
    assert code == 1 and "no answer from the server within the timeout (0.5 s)" in err
    assert time.monotonic() - started < 3  # the silent server was stopped, not asked to shut down


def test_ctrl_c_while_waiting_for_the_prompt_on_stdin_exits_130(home, workspace):
    proc = subprocess.Popen([sys.executable, "-m", "tunacode_lsp", "run", "--cwd", str(workspace), "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(home))
    try:
        # blocked in read(2) on its stdin (syscall 0 on x86_64), which this test never closes
        _wait_for(lambda: Path(f"/proc/{proc.pid}/syscall").read_text().split()[0] == "0")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err == b""  # no traceback, no server started
