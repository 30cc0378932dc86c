"""A text file as read from disk at one moment: bytes, digest, lines and line hashes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tunacode_lsp.tools.textfile import decode, line_body, line_hash, read_text_file, split_lines


@dataclass(frozen=True)
class Snapshot:
    path: Path
    data: bytes

    @classmethod
    def load(cls, real_path: Path, shown: str, real_root: Path | None = None) -> Snapshot:
        """Read it (beneath `real_root`, never through a link out, when given)."""
        return cls(real_path, read_text_file(real_path, shown, real_root))

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def text(self) -> str:
        return decode(self.data)

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    @cached_property
    def hashes(self) -> list[str]:
        return [line_hash(line_body(line)) for line in self.lines]
