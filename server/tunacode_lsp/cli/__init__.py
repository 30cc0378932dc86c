"""The command line: `tunacode-lsp` (serve), `run` (the headless client), `sessions`, `demo`."""
