"""TunaCode language server: the TunaCode coding agent served over LSP."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tunacode-lsp")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0"

PROTOCOL_VERSION = 1
