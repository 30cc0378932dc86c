"""The model provider: OpenAI-compatible chat.completions streaming over httpx (abortable,
read timeout) and the retrying stream function tinyagent calls."""
