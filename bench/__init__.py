"""Benchmarks of the TunaCode language server (not tests): `python -m bench [--quick]`.

One runner starts everything itself (the scripted model on loopback, the server over
stdio, a pygls client), measures each figure next to a baseline taken in the same run,
and prints one table. See docs/performance.md for what each figure means.
"""
