"""Scripted OpenAI-compatible model server and demo assets for tests, demo and benchmarks."""
