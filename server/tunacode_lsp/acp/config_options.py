"""ACP session configuration: `configOptions` (model, mode, approval) in session/new and
session/load answers, and `session/set_config_option` to change one for the session.

- `model`: the known models (agent/models.py) and the session's own; a choice is the model of
  the session's next prompts.
- `mode`: `agent` (default) or `plan` (read-only tools and todo_write; the answer is a plan).
- `approval`: `ask`, `auto` or `read-only` for the session's prompts (the server's setting
  is the start). Permission rules still apply over it (deny beats ask beats allow beats the
  approval mode), and no approval mode implies consent to a project's settings file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from acp import schema

from tunacode_lsp.agent.config import APPROVAL_MODES
from tunacode_lsp.agent.models import list_models
from tunacode_lsp.contract.protocol import REQUEST_MODES

MODE_NAMES = {"agent": "Agent", "plan": "Plan"}
APPROVAL_NAMES = {"ask": "Ask before changes", "auto": "Allow all", "read-only": "Read-only"}


@dataclass(frozen=True)
class SessionConfig:
    model: str
    approval: str
    mode: str = "agent"
    model_chosen: bool = False  # the client picked the model (it then beats the stored one)


class ConfigError(ValueError):
    """An unknown option or value (the caller answers -32602)."""


Category = Literal["mode", "model"] | None
ConfigOption = schema.SessionConfigOptionSelect | schema.SessionConfigOptionBoolean


def _select(option_id: str, name: str, category: Category, current: str, values: dict[str, str]) -> ConfigOption:
    return schema.SessionConfigOptionSelect(
        id=option_id, name=name, category=category, type="select", current_value=current,
        options=[schema.SessionConfigSelectOption(value=v, name=label) for v, label in values.items()],
    )


def model_values(current: str) -> dict[str, str]:
    values = {current: current}
    values.update({m.id: m.id + ("" if m.configured else " (no key)") for m in list_models()})
    return values


def config_options(config: SessionConfig) -> list[ConfigOption]:
    return [
        _select("model", "Model", "model", config.model, model_values(config.model)),
        _select("mode", "Mode", "mode", config.mode, {m: MODE_NAMES[m] for m in REQUEST_MODES}),
        _select("approval", "Approval", None, config.approval, {a: APPROVAL_NAMES[a] for a in APPROVAL_MODES}),
    ]


def with_option(config: SessionConfig, config_id: str, value: object) -> SessionConfig:
    if not isinstance(value, str):
        raise ConfigError(f"value: {config_id} takes one of its listed values")
    if config_id == "mode":
        if value not in REQUEST_MODES:
            raise ConfigError(f"value: mode is one of {', '.join(REQUEST_MODES)}")
        return replace(config, mode=value)
    if config_id == "approval":
        if value not in APPROVAL_MODES:
            raise ConfigError(f"value: approval is one of {', '.join(APPROVAL_MODES)}")
        return replace(config, approval=value)
    if config_id == "model":
        if value not in model_values(config.model):
            raise ConfigError("value: not a listed model")
        return replace(config, model=value, model_chosen=True)
    raise ConfigError(f"configId: unknown option {config_id[:80]!r} (model, mode, approval)")
