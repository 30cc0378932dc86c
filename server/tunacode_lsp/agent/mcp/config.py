"""MCP server definitions: the `mcpServers` setting and the workspace file `.mcp.json`.

Both use the shape other agents use: `{name: {command, args?, env?, cwd?}}` for a stdio
server, `{name: {url, headers?}}` for a streamable-HTTP one. String values may reference
environment variables as `${VAR}` or `${VAR:-default}`; an unset variable without a default
is a warning and the empty string. A server of the workspace file keeps its values as written
(`definition`, `variables`) until the user consented to it (agent/mcp/consent.py): only then
are its `${VAR}`s expanded (`expanded`), each one named in the consent prompt.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tunacode_lsp.tools.confined_read import read_confined

WORKSPACE_FILE = ".mcp.json"
MAX_WORKSPACE_FILE_BYTES = 1_000_000
NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

Source = Literal["settings", "workspace"]


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    source: Source
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    definition: str = field(default="", repr=False)  # workspace servers: the entry as written (JSON)
    variables: tuple[str, ...] = ()  # workspace servers: the ${VAR} names it would expand

    def expanded(self, env: Mapping[str, str], warnings: list[str], where: str = "") -> McpServerSpec:
        """The spec with its `${VAR}`s expanded (a workspace server's only once consented)."""

        where = where or f"{WORKSPACE_FILE} mcpServers.{self.name}"
        return replace(
            self,
            command=expand(self.command, env, warnings, f"{where}.command") if self.command is not None else None,
            args=tuple(expand(a, env, warnings, f"{where}.args") for a in self.args),
            env=tuple((k, expand(v, env, warnings, f"{where}.env.{k}")) for k, v in self.env),
            cwd=expand(self.cwd, env, warnings, f"{where}.cwd") if self.cwd else None,
            url=expand(self.url, env, warnings, f"{where}.url") if self.url is not None else None,
            headers=tuple((k, expand(v, env, warnings, f"{where}.headers.{k}")) for k, v in self.headers),
            variables=(),
        )


def references(values: list[str]) -> tuple[str, ...]:
    """The environment variables `${VAR}` / `${VAR:-default}` in these values, by name."""

    return tuple(sorted({m.group(1) for v in values for m in _VAR.finditer(v)}))


def expand(value: str, env: Mapping[str, str], warnings: list[str], where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        warnings.append(f"{where}: ${{{name}}} is not set; using an empty value")
        return ""

    return _VAR.sub(one, value)


def parse_servers(raw: Any, source: Source, *, env: Mapping[str, str] = os.environ) -> tuple[list[McpServerSpec], list[str]]:
    """The servers of one `mcpServers` object, and a warning for each one left out."""

    label = "tunacode.mcpServers" if source == "settings" else f"{WORKSPACE_FILE} mcpServers"
    if raw is None:
        return [], []
    if not isinstance(raw, dict):
        return [], [f"{label}: expected an object of servers, got {type(raw).__name__}"]
    specs: list[McpServerSpec] = []
    warnings: list[str] = []
    for name, entry in raw.items():
        where = f"{label}.{str(name)[:40]}"
        if not isinstance(name, str) or not NAME.match(name) or "__" in name:
            # no "__": `mcp__<server>__<tool>` must name one server's tool (the rule `mcp__github`
            # would cover every tool of a server named `github__x`)
            warnings.append(f"{where}: a server name is 1-40 letters, digits, '-' or '_' (no '__'); left out")
            continue
        if not isinstance(entry, dict):
            warnings.append(f"{where}: expected an object; left out")
            continue
        spec = _spec(name, entry, source, env, warnings, where)
        if spec is not None:
            specs.append(spec)
    return specs, warnings


def _strings(value: Any, kind: type, where: str, warnings: list[str]) -> Any:
    if kind is list:
        if value is None:
            return []
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    elif kind is dict:
        if value is None:
            return {}
        if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            return value
    warnings.append(f"{where}: expected {'a list' if kind is list else 'an object'} of strings; left out")
    return None


def _spec(name: str, entry: dict[str, Any], source: Source, env: Mapping[str, str], warnings: list[str], where: str) -> McpServerSpec | None:
    spec = _raw_spec(name, entry, source, warnings, where)
    if spec is None:
        return None
    if source == "workspace":  # kept as written until the user consented (config docstring)
        values = [v for v in (spec.command, spec.cwd, spec.url) if v] + list(spec.args)
        values += [v for _, v in spec.env] + [v for _, v in spec.headers]
        shown = {k: entry[k] for k in ("command", "args", "env", "cwd", "url", "headers") if k in entry}
        return replace(spec, definition=json.dumps(shown, ensure_ascii=False), variables=references(values))
    return spec.expanded(env, warnings, where)


def _raw_spec(name: str, entry: dict[str, Any], source: Source, warnings: list[str], where: str) -> McpServerSpec | None:
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        warnings.append(f"{where}: give either `command` (a stdio server) or `url` (streamable HTTP); left out")
        return None
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            warnings.append(f"{where}.url: expected an http(s) URL; left out")
            return None
        headers = _strings(entry.get("headers"), dict, f"{where}.headers", warnings)
        if headers is None:
            return None
        return McpServerSpec(name, source, url=url, headers=tuple(headers.items()))
    if not isinstance(command, str) or not command.strip():
        warnings.append(f"{where}.command: expected a non-empty string; left out")
        return None
    args = _strings(entry.get("args"), list, f"{where}.args", warnings)
    server_env = _strings(entry.get("env"), dict, f"{where}.env", warnings)
    cwd = entry.get("cwd")
    if args is None or server_env is None or (cwd is not None and not isinstance(cwd, str)):
        if cwd is not None and not isinstance(cwd, str):
            warnings.append(f"{where}.cwd: expected a string; left out")
        return None
    return McpServerSpec(name, source, command=command, args=tuple(args), env=tuple(server_env.items()), cwd=cwd or None)


def read_workspace_file(root: Path) -> tuple[Any, list[str]]:
    """The `mcpServers` object of `<root>/.mcp.json`, or None; warnings for a bad file."""

    # the confined reader: beneath the root, a regular file, bounded (a link out, a FIFO: a notice)
    found = read_confined(root, WORKSPACE_FILE, limit=MAX_WORKSPACE_FILE_BYTES)
    if found.data is None:
        return None, [found.notice] if found.notice else []
    try:
        data = json.loads(found.data.decode("utf-8"))
    except ValueError as exc:
        return None, [f"{WORKSPACE_FILE} cannot be read: {str(exc)[:200]}; ignored"]
    if not isinstance(data, dict):
        return None, [f"{WORKSPACE_FILE}: expected an object with `mcpServers`; ignored"]
    return data.get("mcpServers"), []
