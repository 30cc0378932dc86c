"""Samples, percentiles and the result rows of the table."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


@dataclass
class Samples:
    """Repeated measurements of one quantity, in one unit (ms or MB)."""

    values: list[float] = field(default_factory=list)
    unit: str = "ms"

    def add(self, value: float) -> None:
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.values)

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile (q in 0..100): with n < 100 samples, p99 is the maximum."""
        ordered = sorted(self.values)
        if not ordered:
            return math.nan
        rank = max(1, math.ceil(q / 100 * len(ordered)))
        return ordered[rank - 1]

    @property
    def p50(self) -> float:
        return statistics.median(self.values) if self.values else math.nan

    @property
    def p99(self) -> float:
        return self.percentile(99)

    @property
    def low(self) -> float:
        return min(self.values) if self.values else math.nan

    @property
    def high(self) -> float:
        return max(self.values) if self.values else math.nan


def ms(seconds: float) -> float:
    return seconds * 1000.0


@dataclass
class Goal:
    """`stat` of the figure (p50, p99 or ratio) must be at most `limit`."""

    stat: str
    limit: float

    def text(self, unit: str) -> str:
        if self.stat == "ratio":
            return f"ratio <= {self.limit:g}"
        return f"{self.stat} < {self.limit:g} {unit}"


@dataclass
class Row:
    """One line of the table: a figure, its baseline from the same run, its goal."""

    name: str
    figure: Samples
    baseline: Samples | None = None
    baseline_name: str = ""
    goal: Goal | None = None
    ratio_of: str = "p50"  # which statistic the ratio compares
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or not len(self.baseline) or not len(self.figure):
            return None
        ours, theirs = getattr(self.figure, self.ratio_of), getattr(self.baseline, self.ratio_of)
        return ours / theirs if theirs else None

    @property
    def met(self) -> bool | None:
        if self.goal is None or not len(self.figure):
            return None
        value = self.ratio if self.goal.stat == "ratio" else getattr(self.figure, self.goal.stat)
        if value is None:
            return None
        return value <= self.goal.limit if self.goal.stat == "ratio" else value < self.goal.limit
