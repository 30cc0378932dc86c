"""MCP servers: their configuration, their connections (the official `mcp` SDK), and their
tools offered to the model as `mcp__<server>__<tool>` under the same approvals and abort as
the built-in tools. Knows nothing of LSP: trust questions and notices go through callbacks."""
