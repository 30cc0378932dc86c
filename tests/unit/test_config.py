"""Option parsing: every bad value becomes a warning and the default, never an exception."""

from __future__ import annotations

import pytest

from tunacode_lsp.agent.config import ServerOptions, parse_options


def test_defaults():
    options, warnings = parse_options(None, env={})
    assert options == ServerOptions() and warnings == []
    assert options.approval == "ask" and options.max_turns == 40 and options.request_timeout == 600


def test_values_are_read_with_wire_names():
    options, warnings = parse_options(
        {"model": "openai:gpt-4.1", "baseUrl": " http://x/v1 ", "approval": "auto", "maxTurns": 7,
         "requestTimeout": 0, "toolConcurrency": 2, "shellInheritSecrets": True, "unknownKey": 1, "sessionStore": None},
        env={},
    )
    assert warnings == []
    assert (options.model, options.base_url, options.approval, options.max_turns) == ("openai:gpt-4.1", "http://x/v1", "auto", 7)
    assert options.request_timeout == 0 and options.tool_concurrency == 2 and options.shell_inherit_secrets is True
    assert options.session_store is None


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("maxTurns", "40", "whole number"),
        ("maxTurns", True, "whole number"),
        ("maxTurns", 0, "from 1"),
        ("approval", "sometimes", '"ask"'),
        ("requestTimeout", -1, "from 0"),
        ("shellInheritSecrets", "yes", "true or false"),
        ("model", "", "non-empty"),
        ("model", 3, "non-empty"),
    ],
)
def test_a_bad_value_warns_and_keeps_the_default(key, value, needle):
    options, warnings = parse_options({key: value}, env={})
    assert options == ServerOptions()
    assert len(warnings) == 1 and f"tunacode.{key}" in warnings[0] and needle in warnings[0]


def test_not_an_object():
    options, warnings = parse_options(["model"], env={})
    assert options == ServerOptions() and "expected an object" in warnings[0]


def test_environment_is_beaten_by_options():
    env = {"TUNACODE_MODEL": "openrouter:x/y", "TUNACODE_BASE_URL": "http://127.0.0.1:1/v1"}
    options, _ = parse_options({}, env=env)
    assert options.model == "openrouter:x/y" and options.base_url == "http://127.0.0.1:1/v1"
    options, _ = parse_options({"model": "openai:gpt-4o"}, env=env)
    assert options.model == "openai:gpt-4o"


def test_configuration_layers_over_initialize_options():
    base, _ = parse_options({"model": "openai:gpt-4o", "maxTurns": 5}, env={})
    options, warnings = parse_options({"maxTurns": "bad", "approval": "auto"}, env={"TUNACODE_MODEL": "x:y"}, base=base)
    assert options.model == "openai:gpt-4o"  # the environment does not override what initialize said
    assert options.max_turns == 5 and options.approval == "auto"
    assert "using 5" in warnings[0]


def test_shell_env_passthrough_is_a_list_of_names():
    options, warnings = parse_options({"shellEnvPassthrough": ["GITHUB_TOKEN", "NPM_TOKEN"]}, env={})
    assert warnings == [] and tuple(options.shell_env_passthrough) == ("GITHUB_TOKEN", "NPM_TOKEN")
    for bad in ("GITHUB_TOKEN", ["A=B"], [1], [""]):
        options, warnings = parse_options({"shellEnvPassthrough": bad}, env={})
        assert options.shell_env_passthrough == () and "list of environment variable names" in warnings[0]


def test_a_null_over_initialize_options_unsets_the_setting():
    # A client's cleared setting (sent as null) is unset, not the value the server started with.
    base, _ = parse_options({"model": "openai:gpt-4.1", "baseUrl": "http://127.0.0.1:9/v1", "imageInput": "on"}, env={})
    live, warnings = parse_options({"model": None, "baseUrl": None, "imageInput": None}, base=base, env={})
    assert warnings == []
    assert live.model == ServerOptions().model
    assert live.base_url == ServerOptions().base_url
    assert live.image_input == ServerOptions().image_input
    assert not {"model", "baseUrl", "imageInput"} & live.explicit


def test_a_null_unsets_back_to_the_environment():
    base, _ = parse_options({"model": "openai:gpt-4.1"}, env={"TUNACODE_MODEL": "anthropic:claude"})
    live, _ = parse_options({"model": None}, base=base, env={"TUNACODE_MODEL": "anthropic:claude"})
    assert live.model == "anthropic:claude"
    assert "model" in live.from_env and "model" not in live.explicit
