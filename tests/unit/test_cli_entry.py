"""The command line entry: serve flags at top level, as language clients pass them."""

from __future__ import annotations

import json
import subprocess
import sys


def _initialize(args: list[str]) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    exit_msg = json.dumps({"jsonrpc": "2.0", "method": "exit"})
    data = "".join(f"Content-Length: {len(m)}\r\n\r\n{m}" for m in (body, exit_msg)).encode()
    done = subprocess.run([sys.executable, "-m", "tunacode_lsp", *args], input=data, capture_output=True, timeout=60)
    head, _, rest = done.stdout.partition(b"\r\n\r\n")
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n"))
    assert b"Content-Length" in headers, (done.stdout[:200], done.stderr[-500:])
    return json.loads(rest[: int(headers[b"Content-Length"])])


def test_stdio_flag_at_top_level_serves():
    for args in ([], ["--stdio"], ["serve", "--stdio"]):
        reply = _initialize(args)
        assert reply["result"]["serverInfo"]["name"] == "tunacode-lsp", args


def test_bad_tcp_address_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "tunacode_lsp", "serve", "--tcp", "nowhere"], capture_output=True, timeout=60)
    assert done.returncode == 2 and b"HOST:PORT" in done.stderr


def test_run_ends_at_once_with_its_exit_code_and_its_output_flushed():
    """The program's `run` ends without the interpreter's teardown (cli/main.py exit_now):
    its exit code and everything it wrote still arrive."""

    done = subprocess.run([sys.executable, "-m", "tunacode_lsp", "run", "--max-turns", "0", "hi"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "tunacode-lsp run: --max-turns must be from 1 to 10000, got 0"


def test_serving_without_arguments_uses_the_parsers_defaults():
    """`tunacode-lsp` and `tunacode-lsp --stdio` (how editors and `run` start the server) serve
    without building the parser: its defaults, kept here, are the parser's own."""

    from tunacode_lsp.cli.main import SERVE_DEFAULTS, build_parser

    for argv in (["serve"], ["serve", "--stdio"]):
        parsed = vars(build_parser().parse_args(argv))
        assert {k: v for k, v in parsed.items() if k != "stdio"} == {k: v for k, v in vars(SERVE_DEFAULTS).items() if k != "stdio"}
