"""A tiny calculator used by the TunaCode offline demo."""


def add(a: int, b: int) -> int:
    """Return the sum of a and b."""
    return a - b


def multiply(a: int, b: int) -> int:
    """Return the product of a and b."""
    return a * b
