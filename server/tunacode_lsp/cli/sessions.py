"""`tunacode-lsp sessions list|show|export|import|delete`: the session store from the shell.

It opens the store directly (no server): `$TUNACODE_HOME/sessions.sqlite3`, else the XDG
default. Read-only subcommands never create a database that is not there. `--json` prints
the contract's wire shapes (Session, `{session, messages}`), so scripts can rely on them.
Exit codes: 0 done, 1 not found or refused, 2 usage or an unusable store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from tunacode_lsp.agent.projection import project_session
from tunacode_lsp.agent.sessions import session_info
from tunacode_lsp.cli.output import PlainOutput, printable, workflow_command_fence
from tunacode_lsp.contract.protocol import SessionInfo, to_wire
from tunacode_lsp.store.errors import DocumentError, SessionBusy, SessionError, SessionNotFound
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.locations import default_store_path, project_id_for
from tunacode_lsp.store.session_store import SessionStore

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2



class CommandFailed(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunacode-lsp sessions", description="The stored sessions.")
    parser.add_argument("--store", metavar="FILE", help="session database (default: %(default)s)",
                        default=str(default_store_path()))
    sub = parser.add_subparsers(dest="action", required=True)

    listing = sub.add_parser("list", help="sessions, newest first")
    listing.add_argument("--cwd", metavar="DIR", help="only the sessions of this project folder")
    listing.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    listing.add_argument("--json", action="store_true")

    show = sub.add_parser("show", help="a session and its requests, as they were shown")
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="{session, messages, events} as the server sends them")

    export = sub.add_parser("export", help="the portable SessionDocument (JSON)")
    export.add_argument("session_id", metavar="ID")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    imported = sub.add_parser("import", help="store a SessionDocument as a session")
    imported.add_argument("file", metavar="FILE", help="a document from `export` (- for stdin)")
    imported.add_argument("--json", action="store_true")
    imported.add_argument("--copy", action="store_true",
                          help="import under a new id even when the document's session is already stored")

    delete = sub.add_parser("delete", help="delete a session and its messages")
    delete.add_argument("session_id", metavar="ID")
    delete.add_argument("--force", action="store_true", help="even while a request runs in it")
    delete.add_argument("--json", action="store_true")
    return parser


# ---------------------------------------------------------------- rendering


def _session_line(record: SessionInfo) -> str:
    title = record.title or "(untitled)"
    busy = "  [busy]" if record.busy else ""
    return f"{record.session_id}  {record.modified_at}  {record.message_count:>4} msgs  {title}{busy}"


def render_transcript(session: SessionInfo, events: list[dict[str, Any]], out: TextIO) -> None:
    """The session's header, then its requests as `run` shows them live (the server's projection
    of the history, rendered by the same PlainOutput): no stored message is read here."""
    usage = session.usage
    out.write(
        f"session   {session.session_id}\n"
        f"title     {session.title or '(untitled)'}\n"
        f"folder    {session.cwd}\n"
        f"model     {session.model}\n"
        f"created   {session.created_at}\n"
        f"modified  {session.modified_at}\n"
        f"messages  {session.message_count}\n"
        f"tokens    {usage.total_tokens} (in {usage.input_tokens}, "
        f"out {usage.output_tokens}), cost {usage.cost:g}\n"
    )
    shown = PlainOutput(out, out, session_hint=False, colour=False)
    for event in events:
        if event.get("type") == "request_start":
            prompt = printable(str(event.get("prompt", "")))
            out.write("\n" + "".join(f"> {line}\n" for line in prompt.splitlines() or [""]) + "\n")
        else:
            shown.event(event)
        if event.get("type") == "request_end":
            out.write(f"-- {printable(str(event.get('stopReason')), one_line=True)}\n")
    shown.close()


def _print_json(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


# ---------------------------------------------------------------- actions


def _check_folder(path: Path) -> None:
    """The store's folder, or its nearest existing ancestor, must be a folder (TUNACODE_HOME=<a file>)."""
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise CommandFailed(f"{ancestor} is not a folder (the store would be {path})", EXIT_USAGE)
            return


def _open(path: Path, *, create: bool) -> SessionStore | None:
    _check_folder(path)
    if not create and not path.exists():
        return None
    try:
        return SessionStore(path)
    except SessionError as exc:
        raise CommandFailed(str(exc), EXIT_USAGE) from None


def _require(store: SessionStore | None, session_id: str) -> SessionInfo:
    record = store.get_session(session_id) if store is not None else None
    if record is None:
        raise CommandFailed(f"no session {session_id!r} in the store", EXIT_NOT_FOUND)
    return record


def _list(store: SessionStore | None, args: argparse.Namespace, out: TextIO) -> None:
    if args.limit < 1:
        raise CommandFailed(f"--limit must be at least 1, got {args.limit}", EXIT_USAGE)
    project = project_id_for(args.cwd) if args.cwd else None
    records = store.list_sessions(project_id=project, limit=args.limit) if store is not None else []
    if args.json:
        _print_json({"sessions": [to_wire(session_info(r)) for r in records]}, out)
    elif not records:
        out.write("no sessions\n")
    else:
        out.write("".join(_session_line(r) + "\n" for r in records))


def _show(store: SessionStore | None, args: argparse.Namespace, out: TextIO) -> None:
    record = _require(store, args.session_id)
    assert store is not None
    messages = store.load_messages(record.session_id)
    marks = {r.first_seq: r.request_id for r in store.request_checkpoints(record.session_id)}
    events = project_session(
        messages, session_id=record.session_id, model=record.model,
        trailers=store.request_ends(record.session_id), marks=marks,
    )
    if args.json:
        _print_json({"session": to_wire(session_info(record)), "messages": messages, "events": events}, out)
    else:
        render_transcript(record, events, out)


def _export(store: SessionStore | None, args: argparse.Namespace, out: TextIO) -> None:
    record = _require(store, args.session_id)
    assert store is not None
    document = store.export_document(record.session_id)
    if args.output:
        target = Path(args.output)
        try:
            target.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise CommandFailed(f"cannot write {target}: {exc.strerror or exc}", EXIT_USAGE) from None
    else:
        _print_json(document, out)


def _import(store: SessionStore | None, args: argparse.Namespace, out: TextIO, stdin: TextIO) -> None:
    assert store is not None
    try:
        text = stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        document = json.loads(text)
    except OSError as exc:
        raise CommandFailed(f"{args.file}: {exc.strerror or exc}", EXIT_USAGE) from None
    except UnicodeDecodeError:
        raise CommandFailed(f"{args.file}: not a UTF-8 text file (expected a document from `sessions export`)",
                            EXIT_USAGE) from None
    except json.JSONDecodeError as exc:
        raise CommandFailed(f"{args.file}: not JSON ({exc})", EXIT_USAGE) from None
    stored_id = document.get("session_id") if isinstance(document, dict) else None
    if not args.copy and isinstance(stored_id, str) and stored_id and store.get_session(stored_id) is not None:
        raise CommandFailed(f"session {stored_id} is already in the store (--copy imports it under a new id)",
                            EXIT_NOT_FOUND)
    try:
        record = store.import_document(document)
    except (DocumentError, SessionError) as exc:
        raise CommandFailed(f"{args.file}: {exc}", EXIT_USAGE) from None
    if args.json:
        _print_json(to_wire(session_info(record)), out)
    else:
        out.write(f"imported {record.session_id}\n")


def _delete(store: SessionStore | None, args: argparse.Namespace, out: TextIO) -> None:
    record = _require(store, args.session_id)
    assert store is not None
    busy = CommandFailed(f"session {record.session_id} is busy with a request (--force deletes it anyway)", EXIT_NOT_FOUND)
    if record.busy and not args.force:
        raise busy
    try:  # checked again inside the delete transaction: a request may have started meanwhile
        deleted = store.delete_session(record.session_id, owner=None if args.force else new_owner())
    except SessionBusy:
        raise busy from None
    if args.json:
        _print_json({"deleted": deleted, "sessionId": record.session_id}, out)
    else:
        out.write(f"deleted {record.session_id}\n")


def run(argv: list[str], out: TextIO, err: TextIO, stdin: TextIO) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    store = None
    try:
        store = _open(Path(args.store).expanduser(), create=args.action == "import")
        if args.action == "list":
            _list(store, args, out)
        elif args.action == "show":
            with workflow_command_fence([] if args.json else [out]):  # stored model text, in a CI log
                _show(store, args, out)
        elif args.action == "export":
            _export(store, args, out)
        elif args.action == "import":
            _import(store, args, out, stdin)
        else:
            _delete(store, args, out)
    except CommandFailed as exc:
        err.write(f"tunacode-lsp sessions: {exc}\n")
        return exc.code
    except SessionNotFound as exc:  # deleted between the lookup and the read
        err.write(f"tunacode-lsp sessions: {exc}\n")
        return EXIT_NOT_FOUND
    except SessionError as exc:
        err.write(f"tunacode-lsp sessions: {exc}\n")
        return EXIT_USAGE
    finally:
        if store is not None:
            store.close()
    return EXIT_OK


def main(argv: list[str]) -> int:
    try:
        return run(argv, sys.stdout, sys.stderr, sys.stdin)
    except BrokenPipeError:  # `| head` stopped reading: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # keeps Python's exit flush quiet
        return EXIT_OK
