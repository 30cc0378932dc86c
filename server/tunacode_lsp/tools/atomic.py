"""Atomic file replacement: write a temp file beside the target, keep the mode, os.replace."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def replace_file(real_path: Path, data: bytes) -> None:
    mode = stat.S_IMODE(os.stat(real_path).st_mode)
    fd, temp_name = tempfile.mkstemp(dir=real_path.parent, prefix=f".{real_path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, real_path)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise
