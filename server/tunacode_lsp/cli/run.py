"""`tunacode-lsp run PROMPT`: one agent request headless, for CI and scripts.

This module is the light front: the command line, the configuration checks, the exit codes
and the server process (cli/spawn.py). The server is started before this module is imported
(cli/main.py, `early_server`) and kept when it runs in the folder the arguments name; else
`main` starts one the moment the arguments are good. Either way before anything heavy is
imported, so the server's imports overlap the client's;
`--help`, a bad flag or a bad configuration answer without importing the agent, pygls or
asyncio (the server started early is killed and reaped). Nor `logging` before the spawn: the log redaction (core/redact.py) is installed right
after it, or first by the rare checks that import modules that log (`redact_logs`). The
client itself (JSON-RPC over the server's pipes) is cli/headless.py.
docs/ci.md documents the flags, the output formats and the exit codes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from tunacode_lsp.cli.spawn import EarlyServer, spawn_server, stop_server

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_MAX_TURNS = 3
EXIT_DENIED = 4
EXIT_NO_CHANGES = 5
EXIT_MAX_COST = 6
EXIT_SCHEMA = 7
EXIT_TIMEOUT = 124
EXIT_CANCELLED = 130

EXIT_BY_STOP_REASON: dict[str, int] = {
    "end_turn": EXIT_OK,
    "error": EXIT_ERROR,
    "max_turns": EXIT_MAX_TURNS,
    "max_cost": EXIT_MAX_COST,
    "timeout": EXIT_TIMEOUT,
    "cancelled": EXIT_CANCELLED,
}
APPROVE_MODES = {"auto": "auto", "deny": "read-only"}
EPILOG = (
    "Exit codes: 0 end_turn, 1 error, 2 usage or configuration error, 3 max_turns, "
    "4 a tool call was denied (--fail-on-denied), 5 no file changed (--require-changes), "
    "6 stopped at the cost cap (--max-cost), 7 the answer does not match --output-schema, "
    "124 timeout, 130 cancelled (Ctrl-C)."
)


class UsageError(Exception):
    """A bad command line or configuration: exit code 2."""


class RunOptions(NamedTuple):  # not a dataclass: `dataclasses` alone costs 10 ms of start-up
    prompt: str
    session_id: str | None = None
    model: str | None = None
    base_url: str | None = None
    cwd: Path = Path(".")
    json: bool = False
    approve: str = "deny"
    max_turns: int | None = None
    timeout: float | None = None
    verbose: bool = False
    fail_on_denied: bool = False
    require_changes: bool = False
    context: tuple[dict[str, Any], ...] = ()  # context items (cli/inputs.py)
    mcp_servers: dict[str, Any] | None = None  # --mcp-config
    trust_workspace: bool = False  # --trust-workspace: start what the workspace defines (.mcp.json)
    mode: str | None = None  # --mode: agent | plan
    settings: dict[str, Any] | None = None  # --settings / --settings-file: server settings, validated
    max_cost: float | None = None  # --max-cost USD: no model call starts once the request's cost would pass it
    output_schema: dict[str, Any] | None = None  # --output-schema FILE: the answer must be JSON matching it


# the settings' own bound (agent/config.py MAX_TURNS_LIMIT; a unit test keeps them equal): the
# light client checks flags without importing the agent
MAX_TURNS = 10_000


def redact_logs() -> None:
    """This process's log redaction (core/redact.py; cli/main.py leaves it to `run`): before
    anything can log. Idempotent."""

    from tunacode_lsp.core.redact import install_log_redaction

    install_log_redaction()


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tunacode-lsp run",
        description="Run one agent request headless: the answer on stdout, tool activity on stderr.",
        epilog=EPILOG,
    )
    parser.add_argument("prompt", help="the prompt, or - to read it from stdin")
    parser.add_argument("--session", metavar="ID", help="continue this stored session")
    parser.add_argument("--model", metavar="M", help="provider:model_id, e.g. openai:gpt-4.1")
    parser.add_argument("--base-url", metavar="URL", help="endpoint of an openai-compatible model")
    parser.add_argument("--cwd", metavar="DIR", default=".", help="workspace folder (default: the current one)")
    parser.add_argument("--json", action="store_true", help="JSON Lines on stdout: every event, then the result")
    parser.add_argument(
        "--approve", choices=sorted(APPROVE_MODES), default="deny",
        help="tools that change something: auto = allow all, deny = read-only (default)",
    )
    parser.add_argument("--max-turns", metavar="N", type=int, help="model turns for this request")
    parser.add_argument("--timeout", metavar="S", type=float,
                        help="seconds for the request (0 = none); the whole run is stopped after S + 15 s")
    parser.add_argument("--fail-on-denied", action="store_true", help="exit 4 when any tool call was denied")
    parser.add_argument("--require-changes", action="store_true", help="exit 5 when the request changed no file")
    parser.add_argument("--verbose", action="store_true", help="pass the server's log (stderr) through")
    parser.add_argument(
        "--context-file", metavar="PATH[:START-END]", action="append", default=[],
        help="give the model this file, or these lines of it (1-based, inclusive), as context; repeatable",
    )
    parser.add_argument("--image", metavar="PATH", action="append", default=[],
                        help="give the model this PNG, JPEG, GIF or WebP image; repeatable")
    parser.add_argument("--mcp-config", metavar="FILE",
                        help='MCP servers for this run: a JSON file {"mcpServers": {...}} as .mcp.json (docs/mcp.md)')
    parser.add_argument("--trust-workspace", action="store_true",
                        help="start the MCP servers the workspace's .mcp.json defines and apply .tunacode/settings.json whole, for this run (never implied by --approve auto)")
    parser.add_argument("--mode", choices=("agent", "plan"), default=None,
                        help="plan: read-only tools and todo_write; the answer is a plan (default: agent)")
    parser.add_argument("--settings", metavar="JSON",
                        help='server settings as a JSON object (docs/configuration.md), e.g. \'{"shellSandbox": "required"}\'')
    parser.add_argument("--settings-file", metavar="FILE", help="the same, read from a JSON file")
    parser.add_argument("--max-cost", metavar="USD", type=float,
                        help="stop (exit 6) before a model call would take the request's cost past USD")
    parser.add_argument("--output-schema", metavar="FILE",
                        help="the final answer must be JSON valid against this JSON Schema (exit 7 when not)")
    return parser


def _read_prompt(arg: str, stdin: TextIO | None) -> str:
    """The prompt from argv or stdin; UsageError when it is not UTF-8 (argv arrives surrogate-escaped)."""

    where = "on stdin" if arg == "-" else "in the argument"
    try:
        prompt = (stdin or sys.stdin).read() if arg == "-" else arg
        prompt.encode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise UsageError(f"the prompt {where} is not valid UTF-8 text") from None
    return prompt


def parse_args(argv: list[str], stdin: TextIO | None = None) -> RunOptions:
    """The command line as RunOptions; UsageError (exit 2) for anything unusable."""

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage and the problem
        if exc.code == 0:
            raise
        raise UsageError("") from None
    prompt = _read_prompt(args.prompt, stdin)
    if not prompt.strip():
        raise UsageError("the prompt is empty" + (" (nothing on stdin)" if args.prompt == "-" else ""))
    if args.max_turns is not None and not 1 <= args.max_turns <= MAX_TURNS:
        raise UsageError(f"--max-turns must be from 1 to {MAX_TURNS}, got {args.max_turns}")
    if args.timeout is not None and not 0 <= args.timeout <= 86_400:
        raise UsageError(f"--timeout must be from 0 to 86400 seconds, got {args.timeout:g}")
    cwd = Path(args.cwd).expanduser()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    for flag, value in (("--session", args.session), ("--model", args.model), ("--base-url", args.base_url)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag} must not be empty")
    from tunacode_lsp.cli import inputs  # light: json, base64, pathlib

    try:
        context = inputs.context_items(args.context_file, args.image)
        servers = inputs.mcp_servers(args.mcp_config) if args.mcp_config is not None else None
    except inputs.InputError as exc:
        raise UsageError(str(exc)) from None
    if args.max_cost is not None and not 0 < args.max_cost <= 1_000_000:
        raise UsageError(f"--max-cost must be a number of US dollars above 0, got {args.max_cost:g}")
    return RunOptions(
        prompt=prompt,
        session_id=args.session,
        model=args.model,
        base_url=args.base_url,
        cwd=cwd.resolve(),
        json=args.json,
        approve=args.approve,
        max_turns=args.max_turns,
        timeout=args.timeout,
        verbose=args.verbose,
        fail_on_denied=args.fail_on_denied,
        require_changes=args.require_changes,
        context=tuple(context),
        mcp_servers=servers,
        trust_workspace=args.trust_workspace,
        mode=args.mode,
        settings=read_settings(args.settings, args.settings_file),
        max_cost=args.max_cost,
        output_schema=read_schema(args.output_schema) if args.output_schema is not None else None,
    )


def read_settings(text: str | None, path: str | None) -> dict[str, Any] | None:
    """--settings / --settings-file as a settings object, checked by the validator every settings
    source goes through (agent/config.py): an unknown key or a bad value is a UsageError."""

    if text is None and path is None:
        return None
    if text is not None and path is not None:
        raise UsageError("give --settings or --settings-file, not both")
    import json

    flag = "--settings" if text is not None else f"--settings-file {path}"
    try:
        if path is not None:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        raw = json.loads(text or "")
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{flag}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{flag}: expected a JSON object of settings, got {type(raw).__name__}")
    redact_logs()  # the agent's modules log
    from tunacode_lsp.agent.config import parse_options, wire_keys

    unknown = sorted(set(raw) - set(wire_keys()))
    if unknown:
        raise UsageError(f"{flag}: unknown setting {unknown[0]!r} (docs/configuration.md lists them)")
    if "approval" in raw:
        raise UsageError(f"{flag}: set approval with --approve (run never asks)")
    _options, problems = parse_options(raw, env={})
    if not problems and "permissions" in raw:
        from tunacode_lsp.agent.permissions import parse_rules

        problems = parse_rules(raw["permissions"], flag)[1]
    if problems:
        raise UsageError(f"{flag}: {problems[0].rsplit('; using ', 1)[0]}")
    return raw


def read_schema(path: str) -> dict[str, Any]:
    """--output-schema FILE: a JSON Schema the final answer is checked against (UsageError when unusable)."""

    import json

    redact_logs()  # jsonschema's modules log
    import jsonschema

    try:
        schema = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--output-schema {path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"--output-schema {path}: not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema {path}: a JSON Schema is an object")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"--output-schema {path}: not a valid JSON Schema ({exc.message})") from None
    return schema


def schema_problem(text: str, schema: dict[str, Any]) -> str | None:
    """Why the answer does not match the schema (None when it does). A ```json fence around
    the whole answer is allowed: models write one even when told not to."""

    import json

    import jsonschema

    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n(.*?)\n?```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except ValueError as exc:
        return f"the answer is not JSON ({exc})"
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(the whole answer)"
    return f"the answer does not match --output-schema at {where}: {error.message}"


# ---------------------------------------------------------------- configuration


HTTP_URL = re.compile(r"https?://[^/?#\s]+([/?#]\S*)?", re.IGNORECASE)


def check_base_url(url: str, source: str) -> None:
    """An endpoint the provider can call: http(s) with a host, else one line saying what to write."""

    if not HTTP_URL.fullmatch(url.strip()):
        hint = f"http://{url.strip()}" if "://" not in url else "http://HOST:PORT/v1"
        raise UsageError(f"{source} {url!r} is not an http(s) URL: write it with its scheme, e.g. {hint}")


def check_data_folder(env: Mapping[str, str]) -> None:
    """The folder that holds the session database must be a folder the server can write."""

    from tunacode_lsp.store.locations import data_dir  # light: os, hashlib, pathlib

    folder = data_dir(env)
    source = "TUNACODE_HOME" if env.get("TUNACODE_HOME") else "the data folder"
    fix = "point TUNACODE_HOME at a writable folder"
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{source} {folder} is a file, not a folder: {fix}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{source} {folder} cannot be created ({exc.strerror or exc}): {fix}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{source} {folder} is not writable: {fix}")


def check_configuration(opts: RunOptions, env: Mapping[str, str]) -> None:
    """Configuration problems the server would report as raw exceptions, caught first (exit 2)."""

    if opts.base_url is not None:
        check_base_url(opts.base_url, "--base-url")
    elif env.get("TUNACODE_BASE_URL", "").strip():
        check_base_url(env["TUNACODE_BASE_URL"], "TUNACODE_BASE_URL")
    check_data_folder(env)
    check_required_sandbox(opts)


def check_required_sandbox(opts: RunOptions) -> None:
    """`shellSandbox: required` that cannot be met fails the run before it starts (the server
    would only refuse each shell command, and the run would go on without them)."""

    if (opts.settings or {}).get("shellSandbox") != "required":
        return
    redact_logs()  # the sandbox's probe logs
    from tunacode_lsp.tools.sandbox import sandbox_state

    state = sandbox_state("required")
    if not state.active:
        raise UsageError(f"shellSandbox is required but the sandbox cannot start: {state.reason} (docs/ci.md: the sandbox)")


# ---------------------------------------------------------------- what the server gets


def initialization_options(opts: RunOptions) -> dict[str, Any]:
    """The server options the flags stand for (unset flags leave the server's defaults)."""

    options: dict[str, Any] = {**(opts.settings or {}), "approval": APPROVE_MODES[opts.approve]}
    for key, value in (
        ("model", opts.model),
        ("baseUrl", opts.base_url),
        ("maxTurns", opts.max_turns),
        ("requestTimeout", opts.timeout),
    ):
        if value is not None:
            options[key] = value
    if opts.mcp_servers is not None:
        options["mcpServers"] = opts.mcp_servers  # named by the user: trusted, like the setting
    if any(item.get("type") == "image" for item in opts.context):
        options["imageInput"] = "on"  # an image named on the command line is meant for the model
    return options


def request_params(opts: RunOptions) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": opts.prompt}
    if opts.session_id:
        params["sessionId"] = opts.session_id
    if opts.model:  # beats the model a resumed session recorded
        params["model"] = opts.model
    if opts.context:
        params["context"] = list(opts.context)
    if opts.mode:
        params["mode"] = opts.mode
    if opts.max_cost is not None:  # kept by the server: checked before each model call
        params["maxCost"] = opts.max_cost
    return params


def exit_code_for(stop_reason: str) -> int:
    return EXIT_BY_STOP_REASON.get(stop_reason, EXIT_ERROR)


def outcome_exit_code(opts: RunOptions, stop_reason: str, *, denied: int, changed: int) -> int:
    """The stop reason decides first; a finished answer can still fail the checks asked for."""

    code = exit_code_for(stop_reason)
    if code != EXIT_OK:
        return code
    if opts.fail_on_denied and denied:
        return EXIT_DENIED
    if opts.require_changes and not changed:
        return EXIT_NO_CHANGES
    return EXIT_OK


# ---------------------------------------------------------------- the server process


class EarlyInterrupt:
    """SIGINT/SIGTERM before the client's event loop takes over: remembered, not raised.

    Without it a Ctrl-C during the first imports is a KeyboardInterrupt traceback; with it
    the run notices the flag as soon as it can and exits 130 quietly."""

    def __init__(self) -> None:
        self.fired = False

    def install(self) -> EarlyInterrupt:
        """Until the event loop installs its own handlers (which replace these)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, _sig: int, _frame: Any) -> None:
        self.fired = True


def main(argv: list[str], started: EarlyServer | None = None) -> int:
    """`started`: a server cli/main.py started before these imports (cli/spawn.py), kept when
    it runs in the folder asked for; killed otherwise, and whenever this returns without it."""

    kept = False
    try:
        try:
            opts = parse_args(argv)  # may wait on stdin (`-`): a Ctrl-C must stop that wait
            check_configuration(opts, os.environ)
        except UsageError as exc:
            if str(exc):
                print(f"tunacode-lsp run: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            return EXIT_CANCELLED
        early = EarlyInterrupt().install()
        if started is not None and started.fits(opts.cwd):
            process, kept = started.process, True
        else:
            try:
                process = spawn_server(opts.cwd, os.environ)
            except OSError as exc:
                print(f"tunacode-lsp run: cannot start the language server: {exc}", file=sys.stderr)
                return EXIT_ERROR
        redact_logs()  # before the client's modules (asyncio logs)
        from tunacode_lsp.cli.headless import run_main  # the client's imports, overlapping the server's

        return run_main(opts, process, early)
    finally:
        if started is not None and not kept:
            stop_server(started.process)
