"""The trees of a seeded first snapshot, written without git (agent/shadow_repo.py).

The first snapshot of a git workspace starts from a copy of the workspace's index
(agent/git_index.py), whose cached trees (`TREE`) name the tree of every folder. When they
are all valid and only a few files differ, the snapshot's tree is those trees with the
folders on the changed paths written again: each such folder's entries are read from the
index (its files at their positions, its subfolders as cached trees, a subfolder's entries
skipped by its count), the changes applied, and the tree object written here. That is what
`git add` and `git write-tree` would write, without their two passes over the whole index.

Anything that does not hold together (a count that overruns its folder, a path outside it, a
subfolder the cached trees do not name, a file and a folder of one name) raises NotSimple:
the caller takes git's way. The index's claims about files (their ids) are trusted, as git
trusts them."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.agent.git_index import HEADER, CachedTree, IndexFacts

TREE_MODE = 0o40000
Change = tuple[int, bytes] | None  # a file's new (mode, id), or None: gone


class NotSimple(Exception):
    """The index and the changes are not a case for this module (git writes the tree)."""


@dataclass
class Written:
    """The snapshot's tree and, for each folder written again that the cached trees name, its new id."""

    tree: bytes
    folders: list[tuple[CachedTree, bytes]]


def write_tree(facts: IndexFacts, changes: dict[bytes, Change], store: Callable[[bytes, bytes], bytes]) -> Written:
    """The tree of the index `facts` with `changes` (path -> new (mode, id) or None) applied;
    `store(kind, body)` writes an object and gives its id. Raises NotSimple."""

    root = facts.cache_tree
    total = len(facts.offsets) - 1
    if root is None or root.name or root.count != total or root.oid_at < 0 or facts.intent_to_add:
        raise NotSimple("no valid cached tree of the whole index")
    if not changes:
        return Written(facts.data[root.oid_at:root.oid_at + 20], [])
    nested: dict[bytes, Any] = {}  # a folder: "name/" -> its own such dict; a file: name -> Change
    for path, change in changes.items():
        parts = path.split(b"/")
        if any(part in (b"", b".", b"..") or part.lower() == b".git" for part in parts):
            raise NotSimple("a path git would never write")
        level = nested
        for part in parts[:-1]:
            level = level.setdefault(part + b"/", {})
            if not isinstance(level, dict):
                raise NotSimple("a path under a changed file")
        level[parts[-1]] = change
    written = Written(b"", [])
    oid = _folder(facts, root, b"", 0, nested, store, written)
    written.tree = oid if oid is not None else store(b"tree", b"")
    return written


def _entry(facts: IndexFacts, position: int) -> tuple[int, bytes]:
    off = facts.offsets[position]
    mode, = struct.unpack_from(">I", facts.data, off + 24)
    return mode, facts.data[off + 40:off + HEADER - 2]


def _folder(facts: IndexFacts, node: CachedTree | None, prefix: bytes, start: int, wanted: dict[bytes, Any],
            store: Callable[[bytes, bytes], bytes], written: Written) -> bytes | None:
    """The id of the folder `prefix` with `wanted` applied (None: it is left empty)."""

    entries: dict[bytes, tuple[int, bytes]] = {}
    folders: dict[bytes, tuple[CachedTree, int]] = {}  # subfolder -> (its node, its first entry)
    if node is not None:
        _listing(facts, node, prefix, start, entries, folders)
    made: set[bytes] = set()
    for key, change in wanted.items():
        if not key.endswith(b"/"):
            continue
        name = key[:-1]
        if name in entries and name not in folders and wanted.get(name, ...) is not None:
            raise NotSimple("a folder where the index keeps a file")
        child, child_start = folders.get(name, (None, 0))
        oid = _folder(facts, child, prefix + key, child_start, change, store, written)
        if oid is None:
            entries.pop(name, None)
        else:
            entries[name] = (TREE_MODE, oid)
            made.add(name)
    for key, change in wanted.items():
        if key.endswith(b"/"):
            continue
        if change is None and key in made:
            continue  # the file became a folder (written above)
        if key in made or (key in folders and key + b"/" not in wanted):
            raise NotSimple("a file and a folder of one name")
        if change is None:
            gone = entries.pop(key, None)
            if gone is None or gone[0] == TREE_MODE:
                raise NotSimple("a file gone that the index does not hold")
        else:
            entries[key] = change
    if not entries:
        return None
    body = b"".join(b"%o %s\0%s" % (mode, name, oid)
                    for name, (mode, oid) in sorted(entries.items(), key=lambda item: item[0] + b"/" if item[1][0] == TREE_MODE else item[0]))
    oid = store(b"tree", body)
    if node is not None:
        written.folders.append((node, oid))
    return oid


def _listing(facts: IndexFacts, node: CachedTree, prefix: bytes, start: int,
             entries: dict[bytes, tuple[int, bytes]], folders: dict[bytes, tuple[CachedTree, int]]) -> None:
    """The folder's entries in the index: its files, and its subfolders as their cached trees."""

    children = {child.name: child for child in node.children}
    end = start + node.count
    if node.count < 0 or len(children) != len(node.children) or end > len(facts.offsets) - 1:
        raise NotSimple("a cached tree that does not hold together")
    position = start
    while position < end:
        path = facts.path_at(position)
        if not path.startswith(prefix):
            raise NotSimple("an entry outside its cached tree")
        name, slash, _ = path[len(prefix):].partition(b"/")
        if name in entries:
            raise NotSimple("two entries of one name")
        if not slash:
            entries[name] = _entry(facts, position)
            position += 1
            continue
        child = children.get(name)
        if child is None or child.count <= 0 or child.oid_at < 0:
            raise NotSimple("a subfolder without a valid cached tree")
        last = position + child.count - 1
        if last >= end or not facts.path_at(last).startswith(prefix + name + b"/"):
            raise NotSimple("a cached tree's count overruns its folder")
        entries[name] = (TREE_MODE, facts.data[child.oid_at:child.oid_at + 20])
        folders[name] = (child, position)
        position += child.count
    if len(folders) != len(children):
        raise NotSimple("a cached tree naming a folder the index does not hold")


def object_id(kind: bytes, body: bytes) -> tuple[bytes, bytes]:
    """(the id, the raw loose object before compression) of a git object."""

    raw = b"%s %d\0" % (kind, len(body)) + body
    return hashlib.sha1(raw).digest(), raw
