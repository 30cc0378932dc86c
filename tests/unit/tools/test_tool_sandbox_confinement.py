"""The sandbox denies by default (issue 26): nothing of the user's home, other folders, host
sockets (path or abstract) or host loopback services; secrets stay out of the environment; the
VCS files that make code run later are read-only inside. Real bwrap, real pasta, real sockets."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolSettings
from tunacode_lsp.tools.sandbox import sandbox_state
from tunacode_lsp.tools.sandbox_network import pasta_path

from .conftest import call, text_of, tools_for

HAVE_SANDBOX = sandbox_state("auto").active
needs_bwrap = pytest.mark.skipif(not HAVE_SANDBOX, reason="bwrap cannot run here (the test set-up installs it)")
needs_pasta = pytest.mark.skipif(not (HAVE_SANDBOX and pasta_path()), reason="pasta (passt) is not installed")
PYTHON = "/usr/bin/python3"  # the system's, visible inside (a venv's may live in the hidden home)
needs_python = pytest.mark.skipif(not os.path.exists(PYTHON), reason="no /usr/bin/python3")
SECRETS = {"GITHUB_TOKEN": "ghp_" + "a" * 36, "AWS_SECRET_ACCESS_KEY": "aws-secret-value-1234", "NPM_TOKEN": "npm_" + "b" * 36}


def test_the_test_machine_has_pasta():
    """CI installs passt with bubblewrap; the network tests below must not silently skip there."""
    if os.environ.get("CI"):
        assert pasta_path(), "scripts/setup installs passt"


async def run(ws: Path, command: str, **settings) -> str:
    result = await call(tools_for(ws, ToolSettings(**settings))["bash"], {"command": command})
    return text_of(result)


@needs_bwrap
async def test_home_and_other_folders_are_not_visible(ws: Path, tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = HOMESECRET\n")
    other = tmp_path / "other-project"
    other.mkdir()
    (other / ".env").write_text("DB_PASSWORD=OTHERSECRET\n")
    monkeypatch.setenv("HOME", str(home))
    text = await run(ws, f'cat ~/.ssh/id_ed25519 ~/.aws/credentials {other}/.env 2>&1; ls -A ~ | wc -l; echo "home=$HOME"')
    assert "PRIVATE KEY" not in text and "HOMESECRET" not in text and "OTHERSECRET" not in text
    assert text.count("No such file") == 3 and f"home={home}" in text
    assert text.splitlines()[3].strip() == "0"  # an empty private home at the same path


@needs_bwrap
async def test_host_only_folders_and_etc_secrets_are_hidden(ws: Path) -> None:
    text = await run(ws, "ls /run /var/run /home /root /srv /mnt 2>&1 | grep -v '^/' | grep -v '^$' | head; "
                         "cat /etc/shadow /etc/gshadow 2>/dev/null | wc -c; echo end")
    lines = [line for line in text.splitlines() if line and not line.startswith("[exit")]
    assert all("No such file" in line for line in lines[:-2]), text  # /run is empty, the rest absent
    assert lines[-2].strip() == "0", text  # /etc/shadow masked (root could read it otherwise)


@needs_bwrap
@needs_python
async def test_host_unix_sockets_are_out_of_reach(ws: Path, tmp_path: Path) -> None:
    """A path socket outside the workspace (ssh-agent, docker.sock) and an abstract one (D-Bus,
    X11) that the host listens on: a sandboxed command reaches neither."""

    path_sock = tmp_path / "agent.sock"
    abstract = f"\0tunacode-test-{os.getpid()}"
    listeners = []
    for address in (str(path_sock), abstract):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen()
        listener.setblocking(False)
        listeners.append(listener)
    probe = (
        "import socket, sys\n"
        "for a in sys.argv[1:]:\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    try:\n"
        "        s.connect(a.replace('@', '\\0', 1)); print('CONNECTED', a)\n"
        "    except OSError as e:\n"
        "        print('refused', a, e)\n"
    )
    (ws / "probe.py").write_text(probe)
    try:
        for network in (True, False):
            text = await run(ws, f"{PYTHON} probe.py {path_sock} @{abstract[1:]}", shell_network=network)
            assert "CONNECTED" not in text and text.count("\nrefused ") + text.startswith("refused ") == 2, text
        for listener in listeners:
            with pytest.raises(BlockingIOError):
                listener.accept()
        # the same probe unsandboxed connects to both: the test can see a reachable socket
        text = await run(ws, f"{PYTHON} probe.py {path_sock} @{abstract[1:]}", shell_sandbox="off")
        assert text.count("CONNECTED") == 2, text
    finally:
        for listener in listeners:
            listener.close()


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_secrets_are_not_in_the_environment_and_passthrough_works(ws: Path, sandbox: str, monkeypatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_SETTING", "plain")
    text = await run(ws, "env", shell_sandbox=sandbox)
    assert not any(value in text for value in SECRETS.values()) and "PLAIN_SETTING" not in text
    assert "PATH=" in text and "HOME=" in text
    text = await run(ws, 'echo "[$GITHUB_TOKEN][$PLAIN_SETTING][${NPM_TOKEN-unset}]"', shell_sandbox=sandbox,
                     shell_env_passthrough=("GITHUB_TOKEN", "PLAIN_SETTING"))
    assert text.splitlines()[0] == f"[{SECRETS['GITHUB_TOKEN']}][plain][unset]"


def _default_route(text: str) -> bool:
    return any(line.split()[1:2] == ["00000000"] for line in text.splitlines()[1:] if len(line.split()) > 2)


@needs_pasta
async def test_network_through_pasta_but_not_host_loopback(ws: Path) -> None:
    """Network is on by default through pasta (an interface and a default route of its own), but
    the host's loopback services (a dev database, a docker API on TCP) are not reachable: pasta's
    port forwarding and gateway mapping are off. shellNetwork false leaves only loopback."""

    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    gateway = next((line.split()[2] for line in Path("/proc/net/route").read_text().splitlines()[1:]
                    if line.split()[1] == "00000000"), None)
    gateway_ip = socket.inet_ntoa(bytes.fromhex(gateway)[::-1]) if gateway else "192.0.2.1"
    probe = (f"for h in 127.0.0.1 {gateway_ip}; do timeout 2 bash -c \"exec 3<>/dev/tcp/$h/{port}\" "
             "2>/dev/null && echo REACHED $h || echo closed $h; done; cat /proc/net/route")
    try:
        async with server:
            on = await run(ws, probe)
            off = await run(ws, probe, shell_network=False)
    finally:
        server.close()
    assert "REACHED" not in on and "REACHED" not in off, on + off
    assert _default_route(on) and not _default_route(off), on + off


@needs_pasta
async def test_the_outside_network_is_reachable_when_the_host_reaches_it(ws: Path) -> None:
    """The claim 'network on by default': when this machine reaches the package index, so does a
    sandboxed command (skipped on a machine without outside network)."""

    try:
        with socket.create_connection(("pypi.org", 443), timeout=3):
            pass
    except OSError:
        pytest.skip("this machine does not reach pypi.org")
    text = await run(ws, "timeout 5 bash -c 'exec 3<>/dev/tcp/pypi.org/443' && echo REACHED")
    assert "REACHED" in text, text


@pytest.fixture
def repo(ws: Path) -> Path:
    if not shutil.which("git"):
        pytest.skip("no git")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"}
    for argv in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *argv], cwd=ws, check=True, env=env)
    return ws


@needs_bwrap
async def test_git_config_and_hooks_are_read_only_but_commits_work(repo: Path) -> None:
    before = (repo / ".git" / "config").read_text()
    text = await run(repo, "git config core.fsmonitor 'touch PWNED'; echo rc=$?; "
                           "echo 'touch PWNED' > .git/hooks/post-commit; echo hook=$?; "
                           "mv .git .git-old; echo mv=$?; echo x > file.txt && git add file.txt && "
                           "git -c user.email=t@example.com -c user.name=T commit -qm one && git log --oneline | wc -l")
    assert (repo / ".git" / "config").read_text() == before and not (repo / ".git" / "hooks" / "post-commit").exists()
    assert "rc=0" not in text and "hook=0" not in text and "mv=0" not in text, text
    assert (repo / ".git").is_dir() and not (repo / ".git-old").exists()
    assert "1\n" in text and not (repo / "PWNED").exists(), text
    head = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True)
    assert head.stdout.strip() == "one"


@needs_bwrap
async def test_read_only_paths_show_a_toolchain_in_home(ws: Path, tmp_path: Path, monkeypatch) -> None:
    """The escape hatch for toolchains in the hidden home (pyenv, nvm, rustup): shellReadOnlyPaths
    shows exactly those folders, read-only; the rest of home stays hidden."""

    home = tmp_path / "home"
    tool = home / ".pyenv" / "bin"
    tool.mkdir(parents=True)
    (tool / "tool").write_text("#!/bin/sh\necho tool-ran\n")
    (tool / "tool").chmod(0o755)
    (home / ".netrc").write_text("machine x password HOMESECRET\n")
    monkeypatch.setenv("HOME", str(home))
    command = f"{tool}/tool; touch {tool}/new 2>&1; cat ~/.netrc 2>&1"
    text = await run(ws, command, shell_read_only_paths=(str(home / ".pyenv"),))
    assert "tool-ran" in text and "Read-only file system" in text and "HOMESECRET" not in text, text
    assert "tool-ran" not in await run(ws, command)


@needs_bwrap
async def test_git_commits_with_the_users_identity_and_nothing_else_of_their_config(
    ws: Path, tmp_path: Path, monkeypatch
) -> None:
    from tunacode_lsp.tools.sandbox import git_identity

    if not shutil.which("git"):
        pytest.skip("no git")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@example.com\n"
                                     "[http]\n\textraheader = AUTHORIZATION: basic SECRETHEADER\n")
    monkeypatch.setenv("HOME", str(home))
    git_identity.cache_clear()
    try:
        text = await run(ws, "git init -q && echo x > f && git add f && git commit -qm one && git log --format='%an <%ae>'; "
                             "git config --get http.extraheader; echo end")
    finally:
        git_identity.cache_clear()
    assert "Ada <ada@example.com>" in text and "SECRETHEADER" not in text, text


@needs_bwrap
async def test_host_shared_memory_is_not_visible(ws: Path) -> None:
    if not (shutil.which("ipcmk") and shutil.which("ipcrm")):
        pytest.skip("no util-linux ipc tools")
    made = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True, check=True).stdout
    shmid = made.split()[-1]
    try:
        assert shmid in subprocess.run(["ipcs", "-m"], capture_output=True, text=True).stdout
        text = await run(ws, "ipcs -m")
        assert shmid not in text.split(), text
    finally:
        subprocess.run(["ipcrm", "-m", shmid], check=False)


@needs_bwrap
@pytest.mark.parametrize(
    "path", [".hg/hgrc", ".git/modules/sub/config", ".vscode/tasks.json", ".github/workflows/ci.yml", ".envrc", "x.code-workspace"]
)
async def test_files_that_run_code_outside_are_read_only_inside(ws: Path, path: str) -> None:
    target = ws / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("original\n")
    top = path.split("/")[0]
    text = await run(ws, f"echo evil >> {path}; echo rc=$?; mv {path} moved; echo mv=$?; mv {top} top-moved; echo top=$?; "
                         "echo ok > other.txt")
    assert target.read_text() == "original\n" and "rc=0" not in text and "mv=0" not in text, text
    assert "top=0" not in text and target.exists(), text
    assert (ws / "other.txt").read_text() == "ok\n"


@needs_bwrap
async def test_a_home_inside_the_workspace_does_not_hide_it(ws: Path, monkeypatch) -> None:
    (ws / "home").mkdir()
    (ws / "home" / "kept.txt").write_text("kept\n")
    monkeypatch.setenv("HOME", str(ws / "home"))
    assert "kept" in await run(ws, "cat home/kept.txt")


@needs_bwrap
async def test_a_linked_vscode_folder_is_read_only_at_its_target(ws: Path) -> None:
    (ws / "cfg").mkdir()
    (ws / "cfg" / "tasks.json").write_text("{}\n")
    (ws / ".vscode").symlink_to(ws / "cfg", target_is_directory=True)
    text = await run(ws, "echo evil >> cfg/tasks.json; echo rc=$?")
    assert (ws / "cfg" / "tasks.json").read_text() == "{}\n" and "rc=0" not in text, text


@needs_bwrap
async def test_a_network_stack_that_fails_runs_nothing(ws: Path, tmp_path: Path, monkeypatch) -> None:
    from tunacode_lsp.tools import ToolError

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pasta").write_text("#!/bin/sh\necho 'cannot open tun' >&2\nexit 1\n")
    (fake / "pasta").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    with pytest.raises(ToolError, match="pasta.*cannot open tun.*shellNetwork"):
        await call(tools_for(ws)["bash"], {"command": "touch ran"})
    assert not (ws / "ran").exists()
    assert "ok" in await run(ws, "touch ran; echo ok", shell_network=False)


@needs_bwrap
async def test_what_a_command_creates_where_code_runs_outside_is_removed(repo: Path) -> None:
    """Nothing to bind where such a file does not exist yet: a new `.git/commondir` (git then reads
    the config of the folder it names: core.fsmonitor runs at the editor's next `git status`) or a
    first `.vscode/tasks.json` is removed when the command ends, and the result says so."""

    (repo / "evil").mkdir()
    result = await call(tools_for(repo)["bash"], {"command": (
        "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > evil/config; echo ../evil > .git/commondir; "
        "mkdir -p .vscode && echo '{}' > .vscode/tasks.json; echo '{}' > x.code-workspace; echo kept > kept.txt")})
    assert not (repo / ".git" / "commondir").exists() and not (repo / ".vscode").exists()
    assert not (repo / "x.code-workspace").exists() and (repo / "kept.txt").exists()
    assert "Removed what the command created at .git/commondir, .vscode, x.code-workspace" in text_of(result)
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, timeout=10)
    assert not (repo / "PWNED").exists()


@needs_bwrap
async def test_a_repository_the_command_creates_is_its_own(ws: Path) -> None:
    text = await run(ws, "git init -q && git config user.name Me && git config user.name")
    assert "Me" in text and (ws / ".git" / "config").exists()


def _live_pastas() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    name, state = handle.read().split(") ", 1)
                if name.endswith("(pasta") and state[0] not in "ZX":
                    found.add(int(entry))
            except (OSError, ValueError):
                continue
    return found


@needs_pasta
async def test_pasta_ends_with_the_command(ws: Path) -> None:
    before = _live_pastas()
    await run(ws, "true")
    with pytest.raises(Exception, match="timed out"):
        await call(tools_for(ws)["bash"], {"command": "sleep 30", "timeout": 0.5})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 3
    while _live_pastas() - before and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert _live_pastas() - before == set()


@needs_bwrap
async def test_a_network_stack_that_fails_never_runs_the_command(ws: Path, tmp_path: Path, monkeypatch) -> None:
    """Ten times over: the sandbox held on its block fd was let go when that fd closed (bwrap
    reads its end of file as "go") before it was killed, so the command sometimes ran."""
    from tunacode_lsp.tools import ToolError

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pasta").write_text("#!/bin/sh\nexit 1\n")
    (fake / "pasta").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    bash = tools_for(ws)["bash"]
    for attempt in range(10):
        with pytest.raises(ToolError, match="No command was run"):
            await call(bash, {"command": f"touch ran{attempt}"})
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith("ran")) == []
