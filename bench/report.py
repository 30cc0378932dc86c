"""The table: one line per figure, its baseline from the same run, the ratio, the goal."""

from __future__ import annotations

import math
import os
import platform
import sys
from datetime import UTC, datetime

from .stats import Row, Samples

HEADER = ("figure", "n", "p50", "p99", "spread (min..max)", "baseline", "base p50", "base p99", "ratio", "goal", "met")


def _num(value: float) -> str:
    if math.isnan(value):
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _with_unit(value: float, samples: Samples) -> str:
    return f"{_num(value)} {samples.unit}" if not math.isnan(value) else "-"


def cells(row: Row) -> tuple[str, ...]:
    fig, base = row.figure, row.baseline
    ratio = row.ratio
    met = row.met
    return (
        row.name,
        str(len(fig)),
        _with_unit(fig.p50, fig),
        _with_unit(fig.p99, fig),
        f"{_num(fig.low)}..{_num(fig.high)}",
        row.baseline_name or "-",
        _with_unit(base.p50, base) if base else "-",
        _with_unit(base.p99, base) if base else "-",
        f"{ratio:.2f} ({row.ratio_of})" if ratio is not None else "-",
        row.goal.text(fig.unit) if row.goal else "-",
        {True: "yes", False: "NO", None: "-"}[met],
    )


def machine() -> str:
    return (
        f"{os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}, "
        f"Python {sys.version.split()[0]}"
    )


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min)"


def render_text(rows: list[Row], *, quick: bool, load_before: str = "") -> str:
    table = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = [
        f"TunaCode benchmarks, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}"
        + (" (--quick: one sample each, times not meaningful)" if quick else ""),
        f"machine load: before {load_before or '?'}; after {load_average()}",
    ]
    for index, line in enumerate(table):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    notes = [f"- {r.name}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + (["", *notes] if notes else []))


def render_markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in cells(r)) + " |" for r in rows]
    return "\n".join(lines)
