"""Checks for calc.py: prints "all checks passed", or the failures and exits 1."""

import sys

from calc import add, multiply

CHECKS = [
    ("add(2, 3) == 5", lambda: add(2, 3) == 5),
    ("add(-1, 1) == 0", lambda: add(-1, 1) == 0),
    ("multiply(4, 5) == 20", lambda: multiply(4, 5) == 20),
]


def main() -> int:
    failures = [name for name, check in CHECKS if not check()]
    for name in failures:
        print(f"FAILED: {name}")
    if failures:
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
