"""ToolSettings: the knobs of the tools, set once by the agent layer (re-exported by tools/__init__)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolSettings:
    shell_inherit_secrets: bool = False
    shell_default_timeout: float = 120.0
    shell_max_timeout: float = 600.0
    read_default_limit: int = 2000
    max_output_chars: int = 30_000
    shell_sandbox: str = "auto"  # auto | required | off (tools/sandbox.py)
    shell_network: bool = True
    shell_env_passthrough: tuple[str, ...] = ()  # variable names handed to the shell as they are
    shell_read_only_paths: tuple[str, ...] = ()  # absolute folders the sandbox shows read-only
