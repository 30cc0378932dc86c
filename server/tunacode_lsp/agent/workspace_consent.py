"""Consent to repository-defined executables: one mechanism for every kind of them.

A checked-in file can make the server start a process (a server in `.mcp.json`; later a
project settings file's hooks). Such a definition starts only after the user consented to
exactly it. What is consented to is its fingerprint (`consent_key`): the kind, the name,
the whole definition as written (command, args, env, cwd, URL, headers: every field,
`${VAR}` references unexpanded) and the content of the workspace files it runs. Any change
to any of them is another fingerprint, so it is asked about again. Approval modes never
imply consent.

`ConsentRequest` carries what the prompt shows (`consent_prompt`): the whole definition
with every character visible (core/text.py `visible_text`), the environment variables it
would expand, by name, and the workspace files it runs with their digests. A `${VAR}` of a
workspace definition is expanded only after consent to a prompt that named it.

`WorkspaceConsent` decides: a remembered answer for the same fingerprint (store/
consent_store.py), else the question (`ask`, the front end's prompt; a headless client
answers from `run --trust-workspace`), remembered when the front end says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunacode_lsp.contract.consent import CONSENT_PROMPT_HEAD
from tunacode_lsp.core.redact import process_redactor
from tunacode_lsp.core.text import visible_text
from tunacode_lsp.store.consent_store import ConsentStore
from tunacode_lsp.store.locations import project_id_for
from tunacode_lsp.tools.confined_read import read_confined

MAX_PROMPT_CHARS = 20_000  # a definition that cannot be shown whole is not started
MAX_HASHED_BYTES = 64 * 1024 * 1024

Ask = Callable[["ConsentRequest"], Awaitable[bool | None]]  # None: no answer (asked again next time)


@dataclass(frozen=True)
class WorkspaceFileDigest:
    shown: str  # the path relative to the root
    digest: str  # sha256 of the content, or why it could not be read ("skipped: ...")


@dataclass(frozen=True)
class ConsentRequest:
    kind: str  # "mcp-server"; "project-settings" ...
    name: str
    source: str  # the workspace file that defines it (".mcp.json")
    what: str  # the thing in words ("the MCP server 'demo'")
    definition: Mapping[str, Any]  # as written
    variables: tuple[str, ...]  # the ${VAR} names it would expand
    files: tuple[WorkspaceFileDigest, ...]
    fingerprint: str


def file_digests(root: Path, files: Iterable[Path | str]) -> tuple[WorkspaceFileDigest, ...]:
    """The content digest of each workspace file (blocking: call from a thread). Read through
    the confined reader: a link out, a FIFO or a device is recorded as skipped, never read."""

    out: dict[str, WorkspaceFileDigest] = {}
    for path in files:
        found = read_confined(root, path, limit=MAX_HASHED_BYTES, truncate=True)
        if found.data is None and found.notice is None:
            continue  # missing: not a file it runs
        digest = f"skipped: {found.notice}" if found.data is None else hashlib.sha256(found.data).hexdigest()
        if found.truncated:
            digest += f" (first {MAX_HASHED_BYTES:,} bytes)"
        out[found.shown] = WorkspaceFileDigest(found.shown, digest)
    return tuple(out[k] for k in sorted(out))


def consent_key(kind: str, name: str, definition: Mapping[str, Any], files: Iterable[WorkspaceFileDigest]) -> str:
    """The fingerprint consent is given to: the whole definition and its files' content."""

    data = {"kind": kind, "name": name, "definition": definition, "files": [[f.shown, f.digest] for f in files]}
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def consent_request(
    root: Path, *, kind: str, name: str, source: str, what: str, definition: Mapping[str, Any],
    variables: Iterable[str], files: Iterable[Path | str],
) -> ConsentRequest:
    """Blocking (it hashes files): call from a thread, or use `consent_request_async`."""

    digests = file_digests(root, files)
    return ConsentRequest(
        kind, name, source, what, definition, tuple(sorted(set(variables))), digests,
        consent_key(kind, name, definition, digests),
    )


async def consent_request_async(root: Path, **fields: Any) -> ConsentRequest:
    return await asyncio.to_thread(lambda: consent_request(root, **fields))


def _shown(value: str) -> str:
    """A value of the definition as the prompt shows it: every character visible, quoted,
    values that are known secrets redacted."""

    return json.dumps(visible_text(process_redactor().text(value)), ensure_ascii=False)


def _lines(definition: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for key, value in definition.items():
        if isinstance(value, list):
            lines.append(f"  {key}: [{len(value)}]")
            lines += [f"    [{i}] {_shown(str(item))}" for i, item in enumerate(value)]
        elif isinstance(value, dict):
            lines.append(f"  {key}: {{{len(value)}}}")
            lines += [f"    {_shown(str(k))}: {_shown(str(v))}" for k, v in value.items()]
        elif value is not None:
            lines.append(f"  {key}: {_shown(str(value))}")
    return lines


def consent_prompt(request: ConsentRequest) -> str:
    """The question, with the whole definition: every field, every character visible."""

    parts = [
        f"{CONSENT_PROMPT_HEAD}{request.source} defines {request.what}. Start it? It runs with your permissions, "
        "outside the sandbox. Allow only if you trust exactly this:",
        *_lines(request.definition),
    ]
    if request.variables:
        parts.append("Expands from your environment: " + ", ".join(request.variables))
    else:
        parts.append("Expands no environment variable.")
    if request.files:
        parts.append("Runs these workspace files (a change asks again):")
        parts += [f"  {visible_text(f.shown)} sha256 {f.digest}" for f in request.files]
    parts.append(f"Fingerprint {request.fingerprint[:16]}")
    return "\n".join(parts)


def prompt_problem(prompt: str) -> str | None:
    if len(prompt) > MAX_PROMPT_CHARS:
        return f"its definition is too long to be shown whole ({len(prompt):,} characters, at most {MAX_PROMPT_CHARS:,})"
    return None


class WorkspaceConsent:
    """One workspace's consent: remembered answers (when `remember`) and the question."""

    def __init__(self, root: Path, store: ConsentStore | None, ask: Ask, *, remember: bool = True) -> None:
        self.root = root
        self._project = project_id_for(root)
        self._store = store if remember else None
        self._ask = ask

    async def is_consented(self, request: ConsentRequest) -> bool | None:
        """The remembered answer for exactly this fingerprint, or None."""

        if self._store is None:
            return None
        store = self._store
        return await asyncio.to_thread(store.decision, self._project, request.kind, request.name, request.fingerprint)

    async def record_consent(self, request: ConsentRequest, allowed: bool) -> None:
        if self._store is None:
            return
        store = self._store
        await asyncio.to_thread(store.record, self._project, request.kind, request.name, request.fingerprint, allowed)

    async def decide(self, request: ConsentRequest) -> bool:
        remembered = await self.is_consented(request)
        if remembered is not None:
            return remembered
        answer = await self._ask(request)
        if answer is not None:
            await self.record_consent(request, answer)
        return bool(answer)


def within(root: Path, base: Path, value: str) -> Path | None:
    """`value` as a path from `base` when it lies (lexically) inside `root`, else None."""

    if not value or "\0" in value or len(value) > 4096 or any(len(part) > 255 for part in value.split("/")):
        return None  # not a path (no file system takes it)
    path = Path(os.path.normpath(base / value))
    real_root = Path(os.path.normpath(root))
    return path if path == real_root or real_root in path.parents else None
