"""How long one call of each tool may take: a default per tool, changed by the
`toolTimeouts` setting (docs/configuration.md). A call still running at its bound is stopped
and fails with an error that names the bound and the setting."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from tunacode_lsp.tools.settings import ToolSettings

# seconds; bash is bounded by its own `timeout` argument (plus BASH_GRACE for the cleanup),
# MCP tools by mcpToolTimeout
DEFAULT_TOOL_SECONDS: Mapping[str, float] = {
    "read_file": 30.0,
    "write_file": 30.0,
    "edit_file": 60.0,
    "apply_patch": 60.0,
    "grep": 60.0,
    "list_files": 60.0,
    "todo_write": 10.0,
    "diagnostics": 30.0,
    "process_output": 10.0,  # on top of the call's `wait`
    "process_kill": 10.0,
    "web_fetch": 30.0,
}
FALLBACK_SECONDS = 60.0  # a tool without its own default
BASH_GRACE = 15.0  # on top of a command's timeout: killing the group and reading what is left
MIN_SECONDS = 1.0
MAX_SECONDS = 3_600.0


def tool_seconds(timeouts: Mapping[str, float], name: str) -> float:
    """The bound of one call of `name`: the setting's value, else the tool's default."""

    value = timeouts.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool) and MIN_SECONDS <= value <= MAX_SECONDS:
        return float(value)
    return DEFAULT_TOOL_SECONDS.get(name, FALLBACK_SECONDS)


def timed_out_message(name: str, seconds: float, *, changes_files: bool) -> str:
    what = (
        " It may have changed the file before it was stopped: read it again before another edit."
        if changes_files
        else ""
    )
    return (
        f"{name} did not finish within {seconds:g} s and was stopped (the bound is the setting "
        f"tunacode.toolTimeouts.{name}).{what} Narrow the call (a smaller path, a more specific pattern) and try again."
    )


def with_bash_default(settings: ToolSettings) -> ToolSettings:
    """`toolTimeouts.bash` is the default `timeout` of a command (at most the largest one a
    call may ask for); the call's bound is its timeout plus BASH_GRACE."""

    value = settings.tool_timeouts.get("bash")
    if value is None:
        return settings
    seconds = min(tool_seconds(settings.tool_timeouts, "bash"), settings.shell_max_timeout)
    return replace(settings, shell_default_timeout=seconds)
