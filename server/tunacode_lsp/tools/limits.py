"""Bounds on what a model may send a tool (checked before anything runs or is asked)."""

from __future__ import annotations

MAX_ARGS_BYTES = 256 * 1024  # all arguments of one call, as JSON
MAX_PATH_CHARS = 4_096  # a path, a folder or a glob
MAX_PATTERN_CHARS = 4_096  # a search pattern
