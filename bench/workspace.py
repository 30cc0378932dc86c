"""A small project for the tools to read, search and list."""

from __future__ import annotations

from pathlib import Path


def make_project(root: Path, modules: int = 10) -> Path:
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    for i in range(modules):
        body = "\n".join(
            f"def function_{i}_{j}(value: int) -> int:\n"
            f"    \"\"\"Step {j} of module {i}.\"\"\"\n"
            f"    return value + {j}\n"
            for j in range(30)
        )
        (src / f"module_{i}.py").write_text(f'"""Module {i}."""\n\n{body}')
    (root / "README.md").write_text("# Bench project\n\nA few modules for the tools.\n")
    (root / ".gitignore").write_text("build/\n")
    return root
