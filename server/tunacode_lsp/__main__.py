"""`python -m tunacode_lsp`: the same as the `tunacode-lsp` command (LSP on stdio by default).

Start it as `python -P -m tunacode_lsp`: without `-P`, Python searches the working directory
first; the working directory is dropped from `sys.path` here, before any other import."""

import sys

from tunacode_lsp.cli.safe_path import drop_working_directory

drop_working_directory()

from tunacode_lsp.cli.main import main  # noqa: E402  (after the path is safe)

sys.exit(main())
