"""Command line: `tunacode-lsp [serve]` (LSP on stdio), `acp` (ACP on stdio), `run` (headless client), `sessions`,
`scripted-model` (the offline model server), `demo` (the README's main job)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import SimpleNamespace

TYPE_CHECKING = False  # not `typing`'s (~6 ms): `run` spawns its server before importing it
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

    from tunacode_lsp.cli.spawn import EarlyServer


def _serve(args: argparse.Namespace | SimpleNamespace) -> int:
    from tunacode_lsp.lsp.start_up_gc import hold_full_collections

    hold_full_collections()  # until initialize is answered (lsp/start_up_gc.py)
    from tunacode_lsp.lsp.logging_setup import setup_logging
    from tunacode_lsp.lsp.server import server

    setup_logging(args.log_level, server=server, log_file=args.log_file or bool(os.environ.get("TUNACODE_LOG_FILE")))
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            print(f"tunacode-lsp: --tcp expects HOST:PORT, got {args.tcp!r}", file=sys.stderr)
            return 2
        _stop_on_ctrl_c()  # before saying so: a Ctrl-C right after the line must find it
        print(f"tunacode-lsp: serving LSP on tcp://{host}:{port} (Ctrl-C stops)", file=sys.stderr, flush=True)
        server.start_tcp(host, int(port))
    else:
        if sys.stdin.isatty():
            _stop_on_ctrl_c()
            print(TERMINAL_HINT, file=sys.stderr, flush=True)
        server.start_io()
    return 0


# `serve`'s options when none is given (build_parser's defaults)
SERVE_DEFAULTS = SimpleNamespace(command="serve", stdio=False, tcp=None, log_level="info", log_file=False)

TERMINAL_HINT = (
    "tunacode-lsp: a language server, speaking LSP on stdin/stdout; editors start it for you.\n"
    "  Try `tunacode-lsp run \"your request\"` for one request headless, `tunacode-lsp --help` for more. Ctrl-C stops."
)


def _stop_on_ctrl_c() -> None:
    """A person at a terminal stops the server with one Ctrl-C (exit 130), quietly: pygls's own
    reader thread otherwise swallows the first one and aborts the interpreter on the second."""

    import signal

    def stop(_signum: int, _frame: object) -> None:
        print("\ntunacode-lsp: stopped", file=sys.stderr, flush=True)
        os._exit(130)

    signal.signal(signal.SIGINT, stop)


def _delegate(module: str, func: str = "main") -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        mod = __import__(f"tunacode_lsp.{module}", fromlist=[func])
        return getattr(mod, func)(argv)

    return run


def _run(argv: list[str]) -> int:
    """`run`, its server started first (cli/spawn.py); run's `main` owns it from its first
    line, and whatever escapes it (a Ctrl-C at any point) stops that server here too."""

    from tunacode_lsp.cli.spawn import early_server, interrupt_on_term, stop_server

    interrupt_on_term()
    box: list[EarlyServer] = []
    try:
        early_server(argv, os.environ, box)
        from tunacode_lsp.cli.run import main as run_main

        return run_main(argv, box[0] if box else None)
    except BaseException:
        if box:  # stopping twice is harmless: run's main may have stopped it already
            stop_server(box[0].process)
        raise


# subcommands implemented in their own modules, given the rest of the command line
DELEGATED: dict[str, tuple[str, str]] = {
    "run": ("cli.run", "Run one agent request headless (for CI and scripts)"),
    "sessions": ("cli.sessions", "List, show, export or delete stored sessions"),
    "acp": ("acp.main", "Serve the Agent Client Protocol (Zed, JetBrains, Neovim ACP clients) on stdio"),
    "scripted-model": ("devtools.scripted_model", "Serve the scripted OpenAI-compatible model (tests, demo)"),
    "demo": ("devtools.demo", "The offline demo: a scripted model fixes a bug in a sample project"),
}


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from tunacode_lsp import __version__

    parser = argparse.ArgumentParser(prog="tunacode-lsp", description="TunaCode language server")
    parser.add_argument("--version", action="version", version=f"tunacode-lsp {__version__}")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="Serve LSP (default: on stdio)")
    serve.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="serve on a TCP port instead (for debugging)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--log-file", action="store_true", help="also log to $TUNACODE_HOME/server.log")
    for name, (_, help_text) in DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


# subcommands whose program ends without the interpreter's teardown once they return
ENDS_AT_ONCE = frozenset({"run"})
# subcommands that install the log redaction themselves, before anything of theirs can log:
# `run` right after spawning its server (cli/run.py), so the `logging` import (~15 ms) is not
# on the path to the spawn
REDACTS_ITSELF = frozenset({"run"})


def exit_now(code: int) -> NoReturn:
    """End the program at once, its output flushed: no teardown of the interpreter (freeing
    every module's objects one by one: ~100 ms of `tunacode-lsp run`, after its answer was
    printed). For a subcommand that has ended everything it started (`run` stopped and reaped
    its server; its snapshot threads are daemons). Exit status 120 when stdout could not be
    flushed, as Python's own exit gives."""

    failed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            failed = failed or stream is sys.stdout
    logging = sys.modules.get("logging")  # not imported: nothing to flush
    if logging is not None:
        logging.shutdown()
    os._exit(120 if failed and code == 0 else code)


def main(argv: list[str] | None = None) -> int:
    program = argv is None
    if program:  # the program (the console script): no module from the working directory
        from tunacode_lsp.cli.safe_path import drop_working_directory

        drop_working_directory()
    argv = sys.argv[1:] if argv is None else argv
    if not (argv and argv[0] in REDACTS_ITSELF):
        from tunacode_lsp.core.redact import install_log_redaction

        install_log_redaction()  # no log line of any mode carries a secret (core/redact.py)
    if argv and argv[0] in DELEGATED:
        module, _ = DELEGATED[argv[0]]
        try:
            if argv[0] == "run":  # its server starts first, before run's own imports (cli/spawn.py)
                code = _run(argv[1:])
            else:
                code = _delegate(module)(argv[1:])
        except KeyboardInterrupt:  # Ctrl-C before a subcommand handles it: quiet, as a shell expects
            code = 130
        if program and argv[0] in ENDS_AT_ONCE:
            exit_now(code)
        return code
    if argv in ([], ["--stdio"]):  # how editors and `run` start the server: no parser (argparse: ~5 ms of each start)
        return _serve(SERVE_DEFAULTS)
    parser = build_parser()
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        # `tunacode-lsp --stdio` (as language clients start servers) means serve
        argv = ["serve", *argv]
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
