"""How much each figure repeats (full run or --quick), and a scratch folder per run."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class BenchConfig:
    quick: bool = False
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tunacode-bench-")))

    def reps(self, full: int, quick: int = 1) -> int:
        return quick if self.quick else full

    def folder(self, name: str) -> Path:
        path = self.scratch / name
        path.mkdir(parents=True, exist_ok=True)
        return path
