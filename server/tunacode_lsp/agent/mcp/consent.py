"""Consent for the MCP servers of the workspace file `.mcp.json` (agent/workspace_consent.py).

What the user consents to, for one server: its whole entry as written (command, args, env,
cwd, URL, headers: every value, `${VAR}`s unexpanded), the environment variables it would
expand (named in the prompt), and the content of the workspace files it names: its command
and each argument (and the value of an `--option=value` argument) that is a path to a file
inside the workspace, taken from its working folder. Modules such a file imports are not
hashed. A workspace server's working folder is the workspace root unless its `cwd` says
otherwise (a relative `cwd` is taken from the root).

Before each restart of a consented server (after a crash) the fingerprint is computed
again: a server whose definition or files changed since the consent (the model may have
edited its script) is not restarted and is asked about again on the next start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from tunacode_lsp.agent.mcp.config import WORKSPACE_FILE, McpServerSpec
from tunacode_lsp.agent.workspace_consent import (
    ConsentRequest,
    WorkspaceConsent,
    consent_prompt,
    consent_request_async,
    prompt_problem,
    within,
)

KIND = "mcp-server"


@dataclass(frozen=True)
class Granted:
    spec: McpServerSpec  # to start: `${VAR}`s expanded, cwd absolute
    fingerprint: str  # what was consented to


def _base(spec: McpServerSpec, root: Path) -> Path:
    return root / spec.cwd if spec.cwd else root


def files_it_runs(spec: McpServerSpec, root: Path) -> list[Path]:
    """Its command and arguments that name a path inside the workspace (existing or not)."""

    if spec.command is None:
        return []
    base = _base(spec, root)
    found: list[Path] = []
    for value in (spec.command, *spec.args):
        for candidate in {value, value.partition("=")[2]}:
            path = within(root, base, candidate)
            if path is not None and path != Path(os.path.normpath(root)):
                found.append(path)
    return found


async def consent_request_for(spec: McpServerSpec, root: Path) -> ConsentRequest:
    return await consent_request_async(
        root, kind=KIND, name=spec.name, source=WORKSPACE_FILE, what=f"the MCP server '{spec.name}'",
        definition=json.loads(spec.definition or "{}"), variables=spec.variables, files=files_it_runs(spec, root),
    )


class McpConsent:
    """The gate for workspace servers: `grant` before a start, `unchanged` before a restart."""

    def __init__(self, consent: WorkspaceConsent, notify: Callable[[str], None]) -> None:
        self._consent = consent
        self._notify = notify

    @property
    def root(self) -> Path:
        return self._consent.root

    async def grant(self, spec: McpServerSpec) -> Granted | None:
        request = await consent_request_for(spec, self.root)
        problem = prompt_problem(consent_prompt(request))
        if problem:
            self._notify(f"MCP server '{spec.name}' of {WORKSPACE_FILE} not started: {problem}")
            return None
        if not await self._consent.decide(request):
            return None
        warnings: list[str] = []
        launch = spec.expanded(os.environ, warnings)
        for warning in warnings:
            self._notify(warning)
        if launch.command is not None:
            launch = replace(launch, cwd=str(_base(launch, self.root)))
        return Granted(launch, request.fingerprint)

    async def unchanged(self, spec: McpServerSpec, fingerprint: str) -> bool:
        return (await consent_request_for(spec, self.root)).fingerprint == fingerprint
