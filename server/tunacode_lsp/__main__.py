"""`python -m tunacode_lsp`: the same as the `tunacode-lsp` command (LSP on stdio by default)."""

import sys

from tunacode_lsp.cli.main import main

sys.exit(main())
