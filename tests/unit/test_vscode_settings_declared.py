"""Every server setting is declared by the VS Code extension (package.json) and passed on (src/options.ts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tunacode_lsp.agent.config import wire_keys

CLIENT = Path(__file__).resolve().parents[2] / "client-vscode"
TYPED = {"model", "baseUrl", "approval", "maxTurns", "requestTimeout", "sessionStore"}
# Settings that start processes, choose endpoints, loosen approvals, pass env or secrets.
MACHINE = {
    "baseUrl", "approval", "sessionStore", "shellEnvPassthrough", "shellInheritSecrets",
    "shellReadOnlyPaths", "shellSandbox", "shellNetwork", "webFetchPrivateAddresses",
    "headers", "hooks", "permissions", "mcpServers",
}


def _package() -> dict:
    return json.loads((CLIENT / "package.json").read_text())


def _list(name: str) -> set[str]:
    text = (CLIENT / "src" / "options.ts").read_text()
    body = re.search(rf"export const {name}: readonly string\[\] = \[(.*?)\];", text, re.S)
    assert body, name
    return set(re.findall(r'"([^"]+)"', body.group(1)))


def test_package_json_declares_every_server_setting():
    properties = _package()["contributes"]["configuration"]["properties"]
    missing = [key for key in wire_keys() if f"tunacode.{key}" not in properties]
    assert missing == []


def test_options_ts_passes_every_server_setting():
    assert _list("PASS_THROUGH_KEYS") == set(wire_keys()) - TYPED


def test_risky_settings_are_machine_scoped_user_only_and_restricted():
    package = _package()
    properties = package["contributes"]["configuration"]["properties"]
    restricted = set(package["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"])
    user_only = _list("USER_ONLY_KEYS")
    for key in MACHINE:
        assert properties[f"tunacode.{key}"].get("scope") in {"machine", "application"}, key
        assert f"tunacode.{key}" in restricted, key
        assert key in user_only, key
