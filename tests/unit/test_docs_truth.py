"""The docs name only things that exist: every module path, every local link, every
`tunacode.*` command or setting and every `tunacode-lsp` subcommand and flag they mention.
A rename that forgets the docs fails here, so stale paths cannot come back."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tunacode_lsp.agent import config
from tunacode_lsp.cli import main as cli_main
from tunacode_lsp.cli import run as cli_run
from tunacode_lsp.cli import sessions as cli_sessions
from tunacode_lsp.contract import protocol

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "client-nvim" / "README.md"]
DOCS = [doc for doc in DOCS if doc.exists()]
# where a path named in the docs may live
ROOTS = [REPO, REPO / "server" / "tunacode_lsp", REPO / "client-vscode", REPO / "client-nvim",
         REPO / "client-nvim" / "lua" / "tunacode", REPO / "client-nvim" / "lua"]
CODE_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|ts|lua|mjs|sh|toml|yml))(?::\d+(?:-\d+)?)?`")
LOCAL_LINK = re.compile(r"\]\(((?!https?:|mailto:|#)[^)\s#]+)(?:#[^)]*)?\)")
TUNA_NAME = re.compile(r"`(tunacode\.[A-Za-z][\w.]*)")
SUBCOMMAND = re.compile(r"tunacode-lsp ([a-z][a-z-]+)\b")
RUN_FLAG = re.compile(r"tunacode-lsp run\b[^`\n]*")
EXAMPLES = {"src/a.ts"}
PROSE = {"on", "is", "in", "and", "as", "from", "with"}  # "tunacode-lsp on PATH": words after the name, not subcommands  # paths the docs use as examples of a format, not as files of this repo


def _mentions(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        found.extend((doc.relative_to(REPO).as_posix(), m.group(1)) for m in pattern.finditer(text))
    return found


# a path is this repository's when it starts with one of its folders (or the package's); others
# (`.git/hooks/x`, `.vscode/tasks.json`) are files of the user's workspace that the docs describe
OURS = {"server", "client-vscode", "client-nvim", "tests", "bench", "scripts", "docs", "src", "test", "lua",
        "agent", "tools", "lsp", "acp", "cli", "core", "store", "contract", "devtools", "tunacode_lsp"}


def test_every_module_path_named_in_the_docs_exists():
    missing = [(doc, path) for doc, path in _mentions(CODE_PATH)
               if path.split("/", 1)[0] in OURS and path not in EXAMPLES
               and not any((root / path).exists() for root in ROOTS)]
    assert not missing, "docs name paths that do not exist: " + ", ".join(f"{d}: {p}" for d, p in missing)


def test_every_local_link_in_the_docs_resolves():
    missing = []
    for doc in DOCS:
        prose = re.sub(r"`[^`\n]*`", "", doc.read_text(encoding="utf-8"))  # links shown as examples in code
        for m in LOCAL_LINK.finditer(prose):
            if not (doc.parent / m.group(1)).exists():
                missing.append(f"{doc.relative_to(REPO)}: {m.group(1)}")
    assert not missing, "broken links: " + ", ".join(missing)


def _known_tunacode_names() -> set[str]:
    names = {value for key, value in vars(protocol).items() if key.startswith("COMMAND_")}
    package = (REPO / "client-vscode" / "package.json").read_text(encoding="utf-8")
    names |= set(re.findall(r'"(tunacode\.[\w.]+)"', package))
    names |= {f"tunacode.{key}" for key in config._FIELDS}
    manifest = json.loads(package)
    for prop in manifest.get("contributes", {}).get("configuration", {}).get("properties", {}):
        names.add(prop)
    return names


def test_every_tunacode_command_and_setting_named_in_the_docs_exists():
    known = _known_tunacode_names()
    unknown = sorted({(doc, name.rstrip(".")) for doc, name in _mentions(TUNA_NAME)
                      if name.rstrip(".") not in known and not any(k.startswith(name.rstrip(".") + ".") for k in known)})
    assert not unknown, "docs name unknown commands or settings: " + ", ".join(f"{d}: {n}" for d, n in unknown)


def test_every_cli_subcommand_named_in_the_docs_exists():
    subcommands = set(cli_main.DELEGATED) | {"serve"}
    unknown = sorted({(doc, name) for doc, name in _mentions(SUBCOMMAND) if name not in subcommands | PROSE})
    assert not unknown, "docs name unknown subcommands: " + ", ".join(f"{d}: {n}" for d, n in unknown)


def test_every_flag_shown_with_run_exists():
    flags = {opt for action in cli_run.build_parser()._actions for opt in action.option_strings}
    unknown = set()
    for doc in DOCS:
        for m in RUN_FLAG.finditer(doc.read_text(encoding="utf-8")):
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(0)):
                if flag not in flags:
                    unknown.add((doc.relative_to(REPO).as_posix(), flag))
    assert not unknown, "docs show `run` flags that do not exist: " + ", ".join(f"{d}: {f}" for d, f in sorted(unknown))


def test_every_sessions_action_shown_exists():
    parser = cli_sessions.build_parser()
    actions = {name for action in parser._actions if hasattr(action, "choices") and isinstance(action.choices, dict)
               for name in action.choices}
    unknown = sorted({(doc, name) for doc, name in _mentions(re.compile(r"tunacode-lsp sessions ([a-z]+)"))
                      if name not in actions})
    assert not unknown, "docs show unknown `sessions` actions: " + ", ".join(f"{d}: {n}" for d, n in unknown)


def test_run_checks_max_turns_against_the_settings_bound():
    assert cli_run.MAX_TURNS == config.MAX_TURNS_LIMIT
