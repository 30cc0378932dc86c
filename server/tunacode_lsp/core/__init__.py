"""Pure helpers shared by every layer: the message codec, the history invariants, text
bounding, and racing a wait against an abort signal. No I/O, no LSP, no store."""
