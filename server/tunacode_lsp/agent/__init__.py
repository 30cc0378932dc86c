"""The agent loop on tinyagent: one request start to end. Knows nothing of LSP."""
