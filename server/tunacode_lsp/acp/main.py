"""`tunacode-lsp acp`: serve the Agent Client Protocol on stdio until the client goes.

Options are the `tunacode.*` settings (docs/configuration.md) given as a JSON object with
`--settings` or `--settings-file`, over the environment (TUNACODE_MODEL, TUNACODE_BASE_URL).
stdout carries only the protocol: the process's fd 1 is pointed at stderr once the
protocol has its own copy, so a stray print can never corrupt the stream.

The end of stdin or SIGTERM/SIGHUP stops every running prompt by the abort path (history
settled, leases released), answers the requests already read, and exits within about 4 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import stat
import sys
import threading
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
    if _is_pipe(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:  # a file (`< requests.jsonl`): read on a thread
        _feed_from_thread(loop, reader, sys.stdin.buffer)
    writer: Any
    if _is_pipe(protocol_out.fileno()):
        w_transport, w_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol_out)
        writer = asyncio.StreamWriter(w_transport, w_protocol, None, loop)
    else:  # a file (`> answers.jsonl`): plain blocking writes
        writer = FileWriter(protocol_out)

    agent = TunaAcpAgent(options, permission_timeout=permission_timeout)
    transport = CheckedStdioTransport(reader, writer)
    # session/resume, session/close and session/fork are "unstable" in SDK 0.12: served on purpose
    conn = AgentSideConnection(cast(Agent, agent), transport, listening=False, use_unstable_protocol=True)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    listening = asyncio.ensure_future(conn.listen())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
    log.info("stopping: %s", "a signal" if stop.is_set() else "the client closed the connection")
    agent.requests.abort_all()
    await agent.requests.settled(STOP_SETTLE_SECONDS)
    await transport.answered(STOP_SETTLE_SECONDS)  # requests read before the end still get their answer
    with contextlib.suppress(Exception):
        await asyncio.wait_for(agent.mcp.stop_all(), STOP_SETTLE_SECONDS / 2)
    bash = sys.modules.get("tunacode_lsp.tools.bash")
    if bash is not None:
        bash.kill_leftovers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
    os._exit(0)


def _is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: Any) -> None:
    def pump() -> None:
        try:
            while chunk := source.read1(65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="tunacode-acp-stdin", daemon=True).start()


class FileWriter:
    """The writer interface the transport uses, over a regular file."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, data: bytes) -> None:
        self._out.write(data)

    async def drain(self) -> None:
        self._out.flush()

    def close(self) -> None:
        self._out.close()
