"""Start-up stays light: the LSP server module (what an editor's spawn waits for) and the ACP
front end load the agent's heavy dependencies (tinyagent, pydantic, httpx, jsonschema, the MCP
SDK) only with the first request. A module-level import that pulls them in costs ~0.3 s of
every editor start (docs/performance.md, spawn -> initialize)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("tinyagent", "pydantic", "httpx", "jsonschema", "mcp", "anthropic", "openai", "httpx2", "boto3", "google")


@pytest.mark.parametrize("module", ["tunacode_lsp.lsp.server", "tunacode_lsp.cli.run"])
def test_the_entry_module_loads_no_heavy_dependency(module):
    code = f"import sys, json, {module}; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_the_runner_loads_no_provider_sdk_before_a_call():
    """The provider SDKs load on the first call that needs them, not with the agent."""

    code = (
        "import sys, json, tunacode_lsp.agent.runner, tunacode_lsp.agent.provider.stream; "
        "print(json.dumps(sorted(m for m in ('anthropic', 'openai', 'httpx2') if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []
