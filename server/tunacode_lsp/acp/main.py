"""`tunacode-lsp acp`: serve the Agent Client Protocol on stdio until the client goes.

Options are the `tunacode.*` settings (docs/configuration.md) given as a JSON object with
`--settings` or `--settings-file`, over the environment (TUNACODE_MODEL, TUNACODE_BASE_URL).
stdout carries only the protocol: the process's fd 1 is pointed at stderr once the
protocol has its own copy, so a stray print can never corrupt the stream.

The end of stdin or SIGTERM/SIGHUP stops every running prompt by the abort path (history
settled, leases released) and exits within about 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from typing import Any, cast

log = logging.getLogger(__name__)

STOP_SETTLE_SECONDS = 1.5
DEFAULT_PERMISSION_TIMEOUT = 300.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunacode-lsp acp", description="Serve the Agent Client Protocol (v1) on stdio")
    parser.add_argument("--settings", metavar="JSON", help='tunacode settings as a JSON object, e.g. \'{"approval": "ask"}\'')
    parser.add_argument("--settings-file", metavar="PATH", help="the same, read from a JSON file")
    parser.add_argument(
        "--permission-timeout", type=float, default=DEFAULT_PERMISSION_TIMEOUT, metavar="SECONDS",
        help=f"how long a permission request waits for the user before it counts as rejected (default {DEFAULT_PERMISSION_TIMEOUT:g})",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def read_settings(args: argparse.Namespace) -> tuple[Any, str | None]:
    """(the raw settings object, or None; a problem that stops start-up, or None)."""

    try:
        if args.settings_file:
            with open(os.path.expanduser(args.settings_file), encoding="utf-8") as f:
                return json.load(f), None
        if args.settings:
            return json.loads(args.settings), None
    except (OSError, ValueError) as exc:
        return None, f"cannot read the settings: {exc}"
    return None, None


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    raw, problem = read_settings(args)
    if problem is not None:
        print(f"tunacode-lsp acp: {problem}", file=sys.stderr)
        return 2
    if not 0 < args.permission_timeout <= 86_400:
        print("tunacode-lsp acp: --permission-timeout expects 0 < SECONDS <= 86400", file=sys.stderr)
        return 2
    from tunacode_lsp.agent.config import parse_options

    options, warnings = parse_options(raw)
    for warning in warnings:
        log.warning("%s", warning)
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray output goes to stderr
    try:
        asyncio.run(_serve(options, args.permission_timeout, protocol_out))
    except KeyboardInterrupt:
        pass
    return 0


async def _serve(options: Any, permission_timeout: float, protocol_out: Any) -> None:
    from acp.agent.connection import AgentSideConnection
    from acp.interfaces import Agent

    from tunacode_lsp.acp.agent import TunaAcpAgent
    from tunacode_lsp.acp.transport import MAX_LINE_BYTES, CheckedStdioTransport

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    w_transport, w_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol_out)
    writer = asyncio.StreamWriter(w_transport, w_protocol, None, loop)

    agent = TunaAcpAgent(options, permission_timeout=permission_timeout)
    conn = AgentSideConnection(cast(Agent, agent), CheckedStdioTransport(reader, writer), listening=False)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    listening = asyncio.ensure_future(conn.listen())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
    log.info("stopping: %s", "a signal" if stop.is_set() else "the client closed the connection")
    agent.runs.abort_all()
    await agent.runs.settled(STOP_SETTLE_SECONDS)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(agent.mcp.stop_all(), STOP_SETTLE_SECONDS / 2)
    bash = sys.modules.get("tunacode_lsp.tools.bash")
    if bash is not None:
        bash._kill_leftovers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
    os._exit(0)
