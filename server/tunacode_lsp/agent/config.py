"""Server options: the `tunacode.*` settings, typed and parsed once.

They arrive as `initializationOptions`, again through `workspace/configuration` (section
`tunacode`), and from the environment. Every field has a default; a bad value is reported
as a warning (the server shows it with window/showMessage) and the default is kept, so a
typo in a settings file never stops the server. docs/configuration.md documents each one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

APPROVAL_MODES = ("auto", "ask", "read-only")
MAX_TURNS_LIMIT = 10_000  # the largest maxTurns accepted (settings and `run --max-turns`)


@attrs.frozen
class ServerOptions:
    model: str | None = None
    base_url: str | None = None
    approval: str = "ask"
    max_turns: int = 40
    request_timeout: float = 600.0
    session_store: str | None = None
    max_retries: int = 3
    stream_read_timeout: float = 120.0
    tool_concurrency: int = 3
    shell_inherit_secrets: bool = False
    history_token_budget: int = 100_000
    context_window: int = 0  # 0: the catalog's window of the model (agent/catalog.py)
    compact_threshold: float = 0.8
    log_file: bool = False
    log_level: str = "info"
    image_input: str = "auto"  # auto (known vision models) | on | off
    text_tool_calls: str = "auto"  # auto: from models that write them (text_tool_calls.py) | on | off
    mcp_servers: Any = None  # the raw mcpServers object (checked by agent/mcp/config.py)
    mcp_tool_timeout: float = 120.0
    mcp_startup_timeout: float = 30.0
    shell_sandbox: str = "auto"  # auto | required | off
    shell_network: bool = True
    permissions: Any = None  # the raw permissions object (checked by agent/permissions.py)
    hooks: Any = None  # the raw hooks object (checked by agent/hooks.py)
    explicit: frozenset[str] = frozenset()  # wire keys set by this source (not defaults), for precedence
    from_env: frozenset[str] = frozenset()  # wire keys that came from the environment
    tool_timeouts: Any = None  # {tool name: seconds}, checked by _is_timeouts
    web_fetch_private_addresses: bool = False
    shell_env_passthrough: tuple[str, ...] = ()  # variable names the shell gets as they are
    shell_read_only_paths: tuple[str, ...] = ()  # absolute folders the sandbox shows read-only
    openai_api: str = "responses"  # openai: models: responses | chat (agent/models.py)
    thinking_budget: int = 0  # Anthropic extended thinking budget in tokens (0: off)
    reasoning_effort: str | None = None  # OpenAI reasoning models: minimal | low | medium | high
    headers: Any = None  # extra HTTP headers on every model call: {name: value}
    model_cost: Any = None  # {input, output, cacheRead?, cacheWrite?} USD per 1M tokens (agent/catalog.py)
    checkpoint_max_megabytes: int = 2048  # one workspace's shadow repository at most (agent/checkpoints.py)


# wire name -> (field name, checker returning an error text or None)
Check = Callable[[Any], str | None]  # None when the value is good, else what is wrong


def _is_str(v: Any) -> str | None:
    return None if isinstance(v, str) and v.strip() else "expected a non-empty string"


def _is_int(low: int, high: int) -> Check:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return "expected a whole number"
        return None if low <= v <= high else f"expected a number from {low} to {high}"

    return check


def _is_number(low: float, high: float) -> Check:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return "expected a number"
        return None if low <= v <= high else f"expected a number from {low} to {high}"

    return check


def _is_object(v: Any) -> str | None:
    return None if isinstance(v, dict) else "expected an object"


def _is_bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "expected true or false"


def _is_env_names(v: Any) -> str | None:
    if not isinstance(v, list) or not all(isinstance(n, str) and n and "=" not in n and "\0" not in n for n in v):
        return "expected a list of environment variable names"
    return None


def _is_abs_paths(v: Any) -> str | None:
    if not isinstance(v, list) or not all(isinstance(p, str) and p.startswith("/") and "\0" not in p for p in v):
        return "expected a list of absolute paths"
    return None
def _is_headers(v: Any) -> str | None:
    ok = isinstance(v, dict) and all(
        isinstance(k, str) and k.strip() and isinstance(x, str) and not any(c in k + x for c in "\r\n")
        for k, x in v.items()
    )
    return None if ok else "expected an object of header names to one-line string values"


def _is_model_cost(v: Any) -> str | None:
    prices = ("input", "output", "cacheRead", "cacheWrite")
    ok = isinstance(v, dict) and "input" in v and "output" in v and all(
        k in prices and isinstance(x, int | float) and not isinstance(x, bool) and 0 <= x <= 10_000 for k, x in v.items()
    )
    return None if ok else "expected {input, output, cacheRead?, cacheWrite?}: USD per million tokens, 0 to 10000"


def _one_of(*choices: str) -> Check:
    def check(v: Any) -> str | None:
        return None if v in choices else "expected one of " + ", ".join(f'"{c}"' for c in choices)

    return check


def _is_timeouts(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "expected an object {tool name: seconds}"
    for name, seconds in v.items():
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 1 <= seconds <= 3_600:
            return f"{name!r}: expected a number of seconds from 1 to 3600"
    return None


_FIELDS: dict[str, tuple[str, Any]] = {
    "model": ("model", _is_str),
    "baseUrl": ("base_url", _is_str),
    "approval": ("approval", _one_of(*APPROVAL_MODES)),
    "maxTurns": ("max_turns", _is_int(1, MAX_TURNS_LIMIT)),
    "requestTimeout": ("request_timeout", _is_number(0, 86_400)),
    "sessionStore": ("session_store", _is_str),
    "maxRetries": ("max_retries", _is_int(0, 10)),
    "streamReadTimeout": ("stream_read_timeout", _is_number(1, 3_600)),
    "toolConcurrency": ("tool_concurrency", _is_int(1, 32)),
    "shellInheritSecrets": ("shell_inherit_secrets", _is_bool),
    "historyTokenBudget": ("history_token_budget", _is_int(1_000, 10_000_000)),
    "contextWindow": ("context_window", _is_int(0, 100_000_000)),
    "compactThreshold": ("compact_threshold", _is_number(0.1, 1.0)),
    "logFile": ("log_file", _is_bool),
    "logLevel": ("log_level", _one_of("debug", "info", "warning", "error")),
    "imageInput": ("image_input", _one_of("auto", "on", "off")),
    "textToolCalls": ("text_tool_calls", _one_of("auto", "on", "off")),
    "mcpServers": ("mcp_servers", _is_object),
    "mcpToolTimeout": ("mcp_tool_timeout", _is_number(1, 3_600)),
    "mcpStartupTimeout": ("mcp_startup_timeout", _is_number(1, 600)),
    "shellSandbox": ("shell_sandbox", _one_of("auto", "required", "off")),
    "shellNetwork": ("shell_network", _is_bool),
    "permissions": ("permissions", _is_object),
    "hooks": ("hooks", _is_object),
    "toolTimeouts": ("tool_timeouts", _is_timeouts),
    "webFetchPrivateAddresses": ("web_fetch_private_addresses", _is_bool),
    "shellEnvPassthrough": ("shell_env_passthrough", _is_env_names),
    "shellReadOnlyPaths": ("shell_read_only_paths", _is_abs_paths),
    "openaiApi": ("openai_api", _one_of("responses", "chat")),
    "thinkingBudget": ("thinking_budget", _is_int(0, 1_000_000)),
    "reasoningEffort": ("reasoning_effort", _one_of("minimal", "low", "medium", "high")),
    "headers": ("headers", _is_headers),
    "modelCost": ("model_cost", _is_model_cost),
    "checkpointMaxMegabytes": ("checkpoint_max_megabytes", _is_int(1, 1_048_576)),
}

_ENV = {"TUNACODE_MODEL": "model", "TUNACODE_BASE_URL": "baseUrl"}


def parse_options(
    raw: Any, env: Mapping[str, str] | None = None, base: ServerOptions | None = None
) -> tuple[ServerOptions, list[str]]:
    """Options from a settings object over the environment; returns (options, warnings).

    Unknown keys are ignored (clients send their own settings in the same section);
    `null` means "not set": over a `base`, a `null` for a key set there unsets it (back to the
    environment's value or the default, as a client's cleared setting should). An explicit
    option beats the environment, which is read only when there is no `base` (the options
    parsed at initialize).
    """

    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    warnings: list[str] = []
    explicit: set[str] = set(base.explicit) if base else set()
    from_env: set[str] = set(base.from_env) if base else set()
    for var, key in _ENV.items() if base is None else ():
        if env.get(var, "").strip():
            values[_FIELDS[key][0]] = env[var].strip()
            from_env.add(key)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        warnings.append(f"tunacode settings: expected an object, got {type(raw).__name__}; using defaults")
        raw = {}
    for key, value in raw.items():
        if key in _FIELDS and value is None and base is not None and key in explicit:
            _unset(key, values, explicit, from_env, env)
            continue
        if key not in _FIELDS or value is None:
            continue
        field, check = _FIELDS[key]
        problem = check(value)
        if problem:
            default = getattr(base or ServerOptions(), field)
            warnings.append(f"tunacode.{key}: {problem} (got {value!r}); using {default!r}")
            continue
        values[field] = value.strip() if isinstance(value, str) else value
        explicit.add(key)
    values["explicit"] = frozenset(explicit)
    values["from_env"] = frozenset(from_env - explicit)
    return attrs.evolve(base or ServerOptions(), **values), warnings


def _unset(key: str, values: dict[str, Any], explicit: set[str], from_env: set[str], env: Mapping[str, str]) -> None:
    """A setting the editor now sends as `null` (cleared): back to the environment's value or the default."""

    field = _FIELDS[key][0]
    explicit.discard(key)
    var = next((v for v, k in _ENV.items() if k == key), None)
    if var and env.get(var, "").strip():
        values[field] = env[var].strip()
        from_env.add(key)
    else:
        values[field] = getattr(ServerOptions(), field)


def wire_keys() -> dict[str, str]:
    """Every setting's wire name -> its ServerOptions field (agent/settings_files.py layers them)."""

    return {key: field for key, (field, _check) in _FIELDS.items()}
