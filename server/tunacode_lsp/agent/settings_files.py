"""Settings files, layered with the editor's settings: one loader, one validator.

Sources, lowest first: defaults < the user file `$XDG_CONFIG_HOME/tunacode/settings.json`
< the project file `.tunacode/settings.json` < the environment (`TUNACODE_MODEL`, ...) < the
editor's settings and the CLI's flags. Every source is checked by the same validator
(agent/config.py `parse_options`, agent/permissions.py, agent/hooks_config.py). Permission
rules and hooks are not overridden but joined: every source's rules apply (deny beats ask
beats allow whatever their source), every source's hooks run.

A project file is checked in by someone else, so it never loosens anything by itself: its
`allow` rules, its hooks, and any value looser than the one below it (approval `auto`,
`shellSandbox` other than `required`, `shellInheritSecrets: true`, `shellNetwork: true`,
`webFetchPrivateAddresses: true`, `textToolCalls: "on"`, and any `baseUrl`, `headers`,
`shellEnvPassthrough`, `shellReadOnlyPaths`, `checkpointMaxMegabytes`) apply only after the user consented to the file's exact content
(agent/settings_consent.py); until then they are held back and a notice says so. Both files
are read through the confined reader (a link out, a FIFO, a huge file are skipped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import attrs
import orjson

from tunacode_lsp.agent.config import ServerOptions, parse_options, wire_keys
from tunacode_lsp.agent.hooks_config import HookDef, parse_hooks
from tunacode_lsp.agent.permissions import PermissionRules, parse_rules
from tunacode_lsp.agent.settings_consent import is_consented, settings_fingerprint
from tunacode_lsp.tools.confined_read import read_confined

log = logging.getLogger(__name__)

PROJECT_FILE = ".tunacode/settings.json"
USER_FILE = "settings.json"
MAX_SETTINGS_BYTES = 256 * 1024
# read by the server process at start, not per request: not taken from settings files
PROCESS_KEYS = frozenset({"sessionStore", "logFile", "logLevel", "mcpServers"})
# key -> values from the strictest; a project value looser than the one below it needs consent
STRICTNESS: dict[str, tuple[Any, ...]] = {
    "approval": ("read-only", "ask", "auto"),
    "shellSandbox": ("required", "auto", "off"),
    "shellInheritSecrets": (False, True),
    "shellNetwork": (False, True),
    "webFetchPrivateAddresses": (False, True),
    "textToolCalls": ("off", "auto", "on"),
}
# where the prompts (and the key) go; what the shell gets of your environment and your disk;
# how much of your checkpoints (of every session in this workspace) is kept
ALWAYS_CONSENT = frozenset({"baseUrl", "headers", "shellEnvPassthrough", "shellReadOnlyPaths", "checkpointMaxMegabytes"})
# A generic client may fill its settings from a file of the project (Helix's
# `.helix/languages.toml`, Zed's `.zed/settings.json`, a Neovim project config), which no
# consent covers: what runs code or widens permissions comes only from a settings file.
EDITOR_REFUSED = (
    "`permissions.allow` and `hooks` are taken only from a settings file (yours, "
    "$XDG_CONFIG_HOME/tunacode/settings.json, or the project's once consented), never from the "
    "editor's settings, which a project's own editor config can fill; ignored here (its deny "
    "and ask rules apply)"
)


def user_config_dir(env: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CONFIG_HOME/tunacode`, else `~/.config/tunacode` (a relative XDG value is ignored)."""

    base = env.get("XDG_CONFIG_HOME")
    if base and Path(base).is_absolute():
        return Path(base) / "tunacode"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".config" / "tunacode"


@dataclass(frozen=True)
class SettingsFile:
    source: str  # user | project
    path: str  # as shown
    raw: dict[str, Any] | None = None  # None: missing, skipped or not valid JSON
    content: bytes | None = None
    problems: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str | None:
        return settings_fingerprint(self.path, self.content) if self.content is not None else None


def read_settings_file(source: str, root: Path, relative: str) -> SettingsFile:
    """Blocking: call from a thread. Never raises for what the file holds."""

    shown = str(root / relative) if source == "user" else relative
    found = read_confined(root, relative, limit=MAX_SETTINGS_BYTES)
    if found.data is None:
        return SettingsFile(source, shown, problems=(found.notice,) if found.notice else ())
    try:
        raw = orjson.loads(found.data)
    except orjson.JSONDecodeError as exc:
        return SettingsFile(source, shown, None, found.data, (f"{shown}: not valid JSON ({exc}); ignored",))
    if not isinstance(raw, dict):
        return SettingsFile(source, shown, None, found.data, (f"{shown}: expected a JSON object; ignored",))
    return SettingsFile(source, shown, raw, found.data)


def load_settings_files(root: Path, env: Mapping[str, str] = os.environ) -> tuple[SettingsFile, SettingsFile]:
    """(user, project). Blocking: call from a thread."""

    user_dir = user_config_dir(env)
    user = read_settings_file("user", user_dir, USER_FILE) if user_dir.is_dir() else SettingsFile(
        "user", str(user_dir / USER_FILE)
    )
    return user, read_settings_file("project", root, PROJECT_FILE)


@dataclass(frozen=True)
class FileReport:
    source: str
    path: str
    exists: bool
    fingerprint: str | None = None
    consented: bool | None = None  # project file only
    held_back: tuple[str, ...] = ()  # what waits for consent
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class EffectiveSettings:
    options: ServerOptions
    rules: PermissionRules = field(default_factory=PermissionRules)
    hooks: tuple[HookDef, ...] = ()
    values: dict[str, tuple[Any, str]] = field(default_factory=dict)  # wire key -> (value, source)
    files: tuple[FileReport, ...] = ()
    editor_problems: tuple[str, ...] = ()  # what the editor's settings held that is not taken from them

    def notices(self) -> list[str]:
        """What the user should hear about the files (problems, what waits for consent)."""

        said: list[str] = [f"Settings: {p}" for p in self.editor_problems]
        for report in self.files:
            said += [f"Settings: {p}" for p in report.problems]
            if report.held_back and not report.consented:
                said.append(
                    f"The project settings file {report.path} would loosen what the agent may do "
                    f"({'; '.join(report.held_back)}); these parts are held back until you consent to "
                    f"this exact file (tunacode.settings.consent with fingerprint {report.fingerprint}, "
                    "or `tunacode-lsp run --trust-workspace`). Its other settings apply."
                )
        return said


def _file_layer(file: SettingsFile) -> tuple[dict[str, Any], list[str]]:
    """The file's valid editor-setting values by wire key, and its problems."""

    if file.raw is None:
        return {}, []
    problems: list[str] = []
    keys = wire_keys()
    usable: dict[str, Any] = {}
    for key, value in file.raw.items():
        if key in PROCESS_KEYS:
            problems.append(f"{file.path}: {key} is read from the editor's settings or the CLI only; ignored here")
        elif key in keys:
            usable[key] = value
        else:
            problems.append(f"{file.path}: unknown setting {key!r}; ignored")
    parsed, warnings = parse_options(usable, env={})
    problems += [f"{file.path}: {w}" for w in warnings]
    return {key: getattr(parsed, keys[key]) for key in parsed.explicit}, problems


def _looser(key: str, value: Any, below: Any) -> bool:
    if key in ALWAYS_CONSENT:
        return True
    order = STRICTNESS.get(key)
    if order is None or value not in order or below not in order:
        return False
    return order.index(value) > order.index(below)


def resolve_settings(
    options: ServerOptions, user: SettingsFile, project: SettingsFile, *, project_consented: bool
) -> EffectiveSettings:
    """The effective settings of one workspace: the editor's `options` over the files."""

    keys = wire_keys()
    defaults = ServerOptions()
    user_values, user_problems = _file_layer(user)
    project_values, project_problems = _file_layer(project)
    held: list[str] = []
    values: dict[str, tuple[Any, str]] = {}
    chosen: dict[str, Any] = {}
    for key, field_name in keys.items():
        if key in ("permissions", "hooks"):
            continue
        value, source = getattr(defaults, field_name), "default"
        if key in user_values:
            value, source = user_values[key], "user"
        if key in project_values:
            candidate = project_values[key]
            if _looser(key, candidate, value) and not project_consented:
                held.append(f"{key}: {candidate!r}")
            else:
                value, source = candidate, "project"
        if key in options.from_env:
            value, source = getattr(options, field_name), "environment"
        if key in options.explicit or (
            key not in options.from_env and getattr(options, field_name) != getattr(defaults, field_name)
        ):  # set by the editor or the CLI (options made in code carry no `explicit`)
            value, source = getattr(options, field_name), "editor"
        chosen[field_name] = value
        values[key] = (value, source)

    rules = PermissionRules()
    hooks: list[HookDef] = []
    rule_problems: list[str] = []
    for source, raw_rules, raw_hooks in (
        ("user", (user.raw or {}).get("permissions"), (user.raw or {}).get("hooks")),
        ("project", (project.raw or {}).get("permissions"), (project.raw or {}).get("hooks")),
        ("editor", options.permissions, options.hooks),
    ):
        parsed_rules, problems = parse_rules(raw_rules, source)
        parsed_hooks, hook_problems = parse_hooks(raw_hooks, source)
        problems += hook_problems
        where = {"user": user.path, "project": project.path}.get(source, "editor settings")
        rule_problems += [f"{where}: {p}" for p in problems]
        if source == "editor" and (parsed_rules.allow or parsed_hooks):
            rule_problems.append(f"editor settings: {EDITOR_REFUSED}")
            parsed_rules = PermissionRules((), parsed_rules.ask, parsed_rules.deny)
            parsed_hooks = ()
        if source == "project" and not project_consented:
            if parsed_rules.allow:
                held.append(f"allow rules {', '.join(r.text for r in parsed_rules.allow)}")
                parsed_rules = PermissionRules((), parsed_rules.ask, parsed_rules.deny)
            if parsed_hooks:
                held.append(f"hooks {', '.join(h.command[:60] for h in parsed_hooks)}")
                parsed_hooks = ()
        rules = rules.merged(parsed_rules)
        hooks += parsed_hooks
    values["permissions"] = (
        {e: [f"{r.text} ({r.source})" for r in getattr(rules, e)] for e in ("allow", "ask", "deny")}, "joined"
    )
    values["hooks"] = ([f"{h.event}: {h.command[:80]} ({h.source})" for h in hooks], "joined")

    effective_options = attrs.evolve(options, **chosen)
    files = (
        FileReport(
            "user", user.path, user.content is not None, user.fingerprint, None, (),
            user.problems + tuple(user_problems) + tuple(p for p in rule_problems if p.startswith(user.path)),
        ),
        FileReport(
            "project", project.path, project.content is not None, project.fingerprint,
            project_consented if project.content is not None else None, tuple(held),
            project.problems + tuple(project_problems) + tuple(p for p in rule_problems if p.startswith(project.path)),
        ),
    )
    editor_problems = tuple(p for p in rule_problems if p.startswith("editor settings:"))
    return EffectiveSettings(effective_options, rules, tuple(hooks), values, files, editor_problems)


async def effective_settings(
    options: ServerOptions, root: Path, env: Mapping[str, str] = os.environ
) -> EffectiveSettings:
    """Read both files and the consent off the event loop, then layer them over `options`."""

    def load() -> EffectiveSettings:
        user, project = load_settings_files(root, env)
        fingerprint = project.fingerprint
        try:
            consented = fingerprint is not None and is_consented(root, fingerprint)
        except Exception:  # an unreadable consent store: nothing is consented (and the request goes on)
            log.warning("the consent store cannot be read; the project settings file is not consented", exc_info=True)
            consented = False
        return resolve_settings(options, user, project, project_consented=consented)

    return await asyncio.to_thread(load)


def save_allow_rules(scope: str, rules: tuple[str, ...], root: Path, env: Mapping[str, str] = os.environ) -> str:
    """"Always allow": add `rules` to `permissions.allow` of the user or project file.
    Blocking: call from a thread. Returns what to tell the user.

    The project file is written only through a real folder inside the root (no link out), and
    read back through the confined reader first. If its old content was consented to (or held
    nothing that waits for consent), the new content is consented too: the user just chose
    these rules; otherwise the new rules wait for consent with the rest.
    """

    from tunacode_lsp.agent.settings_consent import record_consent

    if scope == "user":
        folder = user_config_dir(env)
        folder.mkdir(parents=True, exist_ok=True)
        current = read_settings_file("user", folder, USER_FILE)
    else:
        folder = root / ".tunacode"
        current = read_settings_file("project", root, PROJECT_FILE)
        real_root = os.path.realpath(root)
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return f"Not saved: {PROJECT_FILE} is not in a plain folder of the workspace."
        folder.mkdir(exist_ok=True)
        if not os.path.realpath(folder).startswith(real_root.rstrip("/") + "/"):
            return f"Not saved: {PROJECT_FILE} leads out of the workspace."
    if (current.content is not None and current.raw is None) or (current.problems and current.content is None):
        return f"Not saved: {current.path} cannot be read as settings ({'; '.join(current.problems)})."
    data: dict[str, Any] = dict(current.raw or {})
    permissions = data.get("permissions")
    permissions = dict(permissions) if isinstance(permissions, Mapping) else {}
    allow = permissions.get("allow")
    allow = list(allow) if isinstance(allow, list) else []
    allow += [r for r in rules if r not in allow]
    permissions["allow"] = allow
    data["permissions"] = permissions
    content = orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
    was_consented = False
    if scope == "project":
        fingerprint = current.fingerprint
        was_consented = current.content is None or (fingerprint is not None and is_consented(root, fingerprint))
        if not was_consented:
            options = ServerOptions()
            user, _project = load_settings_files(root, env)  # "looser" is judged against your own file
            held = resolve_settings(options, user, current, project_consented=False).files[1].held_back
            was_consented = not held
    target = folder / (USER_FILE if scope == "user" else "settings.json")
    fd, temp = _temp_in(folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    saved = ", ".join(f"`{r}`" for r in rules)
    if scope == "project":
        if was_consented:
            record_consent(root, settings_fingerprint(PROJECT_FILE, content))
            return f"Saved {saved} to {PROJECT_FILE}."
        return f"Saved {saved} to {PROJECT_FILE}; the file waits for your consent before its allow rules apply."
    return f"Saved {saved} to {target}."


def _temp_in(folder: Path) -> tuple[int, str]:
    import tempfile

    return tempfile.mkstemp(prefix=".settings-", suffix=".json", dir=folder)
