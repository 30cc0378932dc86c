"""ToolSettings: the knobs of the tools, set once by the agent layer (re-exported by tools/__init__)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tunacode_lsp.tools.background import SessionProcesses


@dataclass(frozen=True)
class ToolSettings:
    shell_inherit_secrets: bool = False
    shell_default_timeout: float = 120.0
    shell_max_timeout: float = 600.0
    read_default_limit: int = 2000
    max_output_chars: int = 30_000
    shell_sandbox: str = "auto"  # auto | required | off (tools/sandbox.py)
    shell_network: bool = True
    # tool name -> seconds one call may take (tools/timeouts.py has the defaults)
    tool_timeouts: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    outputs_dir: Path | None = None  # the session's folder of whole outputs (tools/kept_outputs.py)
    web_private_addresses: bool = False  # web_fetch may reach loopback/private/link-local addresses
    background: SessionProcesses | None = None  # the session's background processes (tools/background.py)
    shell_env_passthrough: tuple[str, ...] = ()  # variable names handed to the shell as they are
    shell_read_only_paths: tuple[str, ...] = ()  # absolute folders the sandbox shows read-only
