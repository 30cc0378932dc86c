"""A workspace's git index file read without git, for seeding the shadow repository from it
(agent/shadow_repo.py): whether it is safe to start from, which of its entries the full path
would not record (submodules, files over the size limit), the ids of its cached trees, and
the same bytes with only the cached trees kept of its extensions.

Formats 2, 3 and 4 with SHA-1 ids (git's own; `Documentation/gitformat-index.txt`). The
checksum is checked (git itself does not), so a damaged index is refused, not half read. Refused
(`UnusableIndex`): an entry git would skip or that the workspace's git may have converted
(unmerged, assume-unchanged, skip-worktree, a `.gitattributes`), a path git itself would
never write (`..`, `.`, an empty part, `.git`, a leading `/`), a split or sparse index.
Everything is found by one pass over the entries' fixed headers and byte searches; a path
is read only of an entry that needs a closer look (30,000 entries: ~20 ms of CPU). The
entries' offsets (and, in format 4, their paths) and the cached trees as a tree are kept for
agent/index_trees.py, which writes a first snapshot's trees from them."""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass

HEADER = 62  # an entry's fixed part with a SHA-1 id: stat data, mode, size, id, flags
ASSUME_VALID, EXTENDED, STAGE = 0x80, 0x40, 0x30  # in the flags' first byte
INTENT_TO_ADD = 0x20  # the extended flags' first byte: the only one allowed (the listing adds such a file)
GITLINK = 0o160000
KEPT_EXTENSIONS = {b"TREE"}
DROPPED_EXTENSIONS = {b"REUC", b"UNTR", b"FSMN", b"EOIE", b"IEOT"}  # git rebuilds or ignores these
# where a path may hold a part git never writes, or a `.gitattributes` (checked against the entry)
SUSPECT = re.compile(rb"/\.(?:\.?(?:/|\0)|git(?:/|\0)|gitattributes\0)|//|/\0", re.IGNORECASE)


class UnusableIndex(Exception):
    """The index is not one to start from (the first snapshot takes the full path)."""


@dataclass
class CachedTree:
    """A node of the index's cached trees (`TREE`): a folder, how many index entries it covers
    (-1: not valid), where its tree id is in the index's bytes (-1: none), its subfolders."""

    name: bytes
    count: int
    oid_at: int
    children: list[CachedTree]


@dataclass(frozen=True)
class IndexFacts:
    data: bytes  # the index to copy: its entries, its cached trees, a new checksum
    gitlinks: list[bytes]  # submodules' paths
    big: list[bytes]  # paths of entries over the size limit
    trees: list[str]  # ids of the valid cached trees
    version: int = 2
    offsets: tuple[int, ...] = ()  # where each entry starts in `data` (then where the entries end)
    paths: tuple[bytes, ...] | None = None  # format 4: each entry's path (the others' are read at their offset)
    cache_tree: CachedTree | None = None  # the root of the cached trees, None without them
    intent_to_add: bool = False  # an entry added with `git add -N` (its tree is not what write-tree writes)

    def path_at(self, position: int) -> bytes:
        """The path of the entry at `position` (0-based)."""

        if self.paths is not None:
            return self.paths[position]
        off = self.offsets[position]
        first = self.data[off + 60]
        start = off + HEADER + (2 if first & EXTENDED else 0)
        length = ((first & 0x0F) << 8) | self.data[off + 61]
        if length == 0xFFF:
            return self.data[start:self.data.index(b"\0", start)]
        return self.data[start:start + length]


def read_index(data: bytes, max_file_bytes: int) -> IndexFacts:
    """What seeding needs of the index `data` (raises UnusableIndex)."""

    try:
        return _read(data, max_file_bytes)
    except (IndexError, ValueError):  # an index that ends early, a cached tree without its id
        raise UnusableIndex("a damaged index") from None


def _read(data: bytes, max_file_bytes: int) -> IndexFacts:
    if len(data) < 32 or data[:4] != b"DIRC" or hashlib.sha1(memoryview(data)[:-20]).digest() != data[-20:]:
        raise UnusableIndex("not a git index with a SHA-1 checksum")
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        raise UnusableIndex(f"index format {version}")
    paths: list[bytes] | None = None
    if version == 4:
        paths = []
        odd, offsets = _walk_v4(data, count, max_file_bytes, paths)
    else:
        odd, offsets = _walk_v2(data, count, max_file_bytes)
    end = offsets[-1]
    gitlinks: list[bytes] = []
    big: list[bytes] = []
    intent_to_add = False
    for off, path in odd:
        first = data[off + 60]
        if first & (ASSUME_VALID | STAGE):
            raise UnusableIndex("an unmerged or assume-unchanged entry")
        if first & EXTENDED and (data[off + 62] & ~INTENT_TO_ADD or data[off + 63]):
            raise UnusableIndex("a skip-worktree entry")
        intent_to_add = intent_to_add or bool(first & EXTENDED and data[off + 62] & INTENT_TO_ADD)
        parts = path.split(b"/")
        if any(part in (b"", b".", b"..") or part.lower() == b".git" for part in parts):
            raise UnusableIndex("a path git would never write")
        if parts[-1] == b".gitattributes":
            raise UnusableIndex("a .gitattributes")
        if int.from_bytes(data[off + 24:off + 28], "big") == GITLINK:
            gitlinks.append(path)
        elif int.from_bytes(data[off + 36:off + 40], "big") > max_file_bytes:
            big.append(path)
    kept, trees, root = _extensions(data, end)
    if len(kept) != len(data) - 20 - end:  # something dropped: new bytes (the cached trees move)
        body = data[:end] + kept
        data = body + hashlib.sha1(body).digest()
        kept, trees, root = _extensions(data, end)
    return IndexFacts(data, gitlinks, big, trees, version, tuple(offsets), None if paths is None else tuple(paths),
                      root, intent_to_add)


def _odd(data: bytes, off: int, high: int) -> bool:
    """Whether the entry at `off` needs a closer look: any flag, a gitlink, a size near the limit."""

    return bool(data[off + 60] & 0xF0 or data[off + 26] == 0xE0 or data[off + 36] << 8 | data[off + 37] >= high)


def _walk_v2(data: bytes, count: int, max_file_bytes: int) -> tuple[list[tuple[int, bytes]], list[int]]:
    """One pass over formats 2 and 3 (each path in full, padded to 8 bytes): the entries to
    look at closer, as (offset, path), and each entry's offset, then where the entries end."""

    high = max_file_bytes >> 16  # a size's top two bytes at or over this: look closer
    limit = len(data) - 20
    odd: dict[int, bytes] = {}
    offsets: list[int] = []
    record = offsets.append
    off = 12
    for _ in range(count):
        record(off)
        flags = data[off + 60] << 8 | data[off + 61]
        if flags < 0xFFF:  # no flag, a path shorter than the field's maximum: the common case
            off += (flags + HEADER + 8) & ~7  # NUL-padded to a multiple of 8 bytes
            continue
        # a flag or a long path: the path up to its NUL
        start = off + HEADER + (2 if flags & (EXTENDED << 8) else 0)
        end = data.find(b"\0", start, limit)
        if end < 0:
            raise UnusableIndex("an entry's path has no end")
        odd[off] = data[start:end]
        off += (end + 8 - off) & ~7
    if off > limit:  # the entries are contiguous: the last one's end bounds them all
        raise UnusableIndex("the index ends inside an entry")
    # anything else to look at closer: a leading `.` or `/`, a gitlink, a size near the limit
    for at in [at for at in offsets if data[at + HEADER] in b"./" or data[at + 26] == 0xE0
               or data[at + 36] << 8 | data[at + 37] >= high]:
        if at not in odd:
            odd[at] = data[at + HEADER:data.index(b"\0", at + HEADER)]
    offsets.append(off)
    for hit in SUSPECT.finditer(data, 12, off):  # inside a path, or only in an entry's binary fields?
        at = offsets[bisect.bisect_right(offsets, hit.start()) - 1]
        start = at + HEADER + (2 if data[at + 60] & EXTENDED else 0)
        if hit.start() >= start and at not in odd:
            odd[at] = data[start:data.index(b"\0", start)]
    return sorted(odd.items()), offsets


def _walk_v4(data: bytes, count: int, max_file_bytes: int,
             paths: list[bytes]) -> tuple[list[tuple[int, bytes]], list[int]]:
    """One pass over format 4 (each path given as what differs from the previous one); each
    entry's path is appended to `paths`."""

    high = max_file_bytes >> 16
    limit = len(data) - 20
    odd: list[tuple[int, bytes]] = []
    offsets: list[int] = []
    record, named = offsets.append, paths.append
    off = 12
    path = b""
    for _ in range(count):
        record(off)
        if off + HEADER > limit:
            raise UnusableIndex("the index ends inside an entry")
        at = off + HEADER + (2 if data[off + 60] & EXTENDED else 0)
        byte = data[at]
        strip = byte & 0x7F
        at += 1
        while byte & 0x80:
            byte = data[at]
            strip = ((strip + 1) << 7) | (byte & 0x7F)
            at += 1
        end = data.find(b"\0", at, limit)
        if end < 0 or strip > len(path):
            raise UnusableIndex("an entry's path has no end")
        path = path[:len(path) - strip] + data[at:end]
        named(path)
        if path[:1] in (b".", b"/") or path[-1:] == b"/" or b"/." in path or b"//" in path or _odd(data, off, high):
            odd.append((off, path))
        off = end + 1
    offsets.append(off)
    return odd, offsets


def _extensions(data: bytes, end: int) -> tuple[bytes, list[str], CachedTree | None]:
    """The cached-trees extension (kept), the valid trees' ids and their root; refuses a split
    or sparse index."""

    kept = b""
    trees: list[str] = []
    root: CachedTree | None = None
    at = end
    limit = len(data) - 20
    while at < limit:
        if at + 8 > limit:
            raise UnusableIndex("a damaged extension")
        name, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "big")
        if at + 8 + size > limit:
            raise UnusableIndex("a damaged extension")
        if name in KEPT_EXTENSIONS:
            kept += data[at:at + 8 + size]
            trees, root = _cached_trees(data[at + 8:at + 8 + size], at + 8)
        elif name not in DROPPED_EXTENSIONS:
            raise UnusableIndex(f"index extension {name!r}")  # a split index (link), a sparse one (sdir), ...
        at += 8 + size
    return kept, trees, root


def _cached_trees(body: bytes, base: int) -> tuple[list[str], CachedTree | None]:
    """The ids of the valid nodes of a cached-trees extension (found at `base` in the index),
    and the nodes as a tree (None when the extension's shape does not hold together)."""

    found: list[str] = []
    nodes: list[tuple[CachedTree, int]] = []  # pre-order, each with its number of subfolders
    at = 0
    while at < len(body):
        nul = body.index(b"\0", at)
        newline = body.index(b"\n", nul)
        entries, _, subtrees = body[nul + 1:newline].partition(b" ")
        node = CachedTree(body[at:nul], int(entries), -1, [])
        at = newline + 1
        if node.count >= 0:
            if at + 20 > len(body):
                raise ValueError("a cached tree without its id")
            found.append(body[at:at + 20].hex())
            node.oid_at = base + at
            at += 20
        nodes.append((node, int(subtrees)))
    return found, _nest(nodes)


def _nest(nodes: list[tuple[CachedTree, int]]) -> CachedTree | None:
    """The pre-order list of cached trees as a tree (each node's subfolders in its children)."""

    if not nodes:
        return None
    stack: list[tuple[CachedTree, int]] = []  # (node, subfolders still to come)
    root = nodes[0][0]
    for index, (node, subtrees) in enumerate(nodes):
        if index:
            if not stack:
                return None  # more nodes than the root's subfolders name
            parent, left = stack[-1]
            parent.children.append(node)
            stack[-1] = (parent, left - 1)
        if subtrees < 0:
            return None
        stack.append((node, subtrees))
        while stack and stack[-1][1] == 0:
            stack.pop()
    return None if stack else root
