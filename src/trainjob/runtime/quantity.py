"""Kubernetes resource quantities (``500m``, ``2``, ``1Gi``): parse, add, scale and format.

The compiler needs them to count CPUs for ``numProcPerNode: auto`` and to sum a PodGroup's
``minResources``. Exact arithmetic with Fractions; formatting follows Kubernetes' canonical form
closely enough to round-trip (binary suffixes stay binary, decimal stay decimal).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)$")


class QuantityError(ValueError):
    """A string is not a Kubernetes quantity."""


def parse(value: str | int | float) -> tuple[Fraction, bool]:
    """Return (amount, is_binary) of a quantity; raise QuantityError when malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int | float):
        return Fraction(value), False
    m = _PATTERN.match(value.strip())
    if not m or m.group(1) in ("", ".", "+", "-"):
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}"
        )
    try:
        number = Fraction(m.group(1))
    except ValueError as e:
        raise QuantityError(f"invalid quantity {value!r}") from e
    suffix = m.group(2)
    if suffix in _BINARY:
        return number * _BINARY[suffix], True
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:]), False
    return number * _DECIMAL[suffix], False


def ceil_int(value: str | int | float) -> int:
    """The quantity rounded up to an integer, as Go's ``Quantity.Value()``."""
    amount, _ = parse(value)
    return math.ceil(amount)


def format_quantity(amount: Fraction | int, binary: bool) -> str:
    """Canonical form: the largest suffix that keeps an integer."""
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    value = abs(Fraction(amount))
    if binary and value.denominator == 1:
        for suffix, mult in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            if value % mult == 0:
                return f"{sign}{value // mult}{suffix}"
        return f"{sign}{value}"
    for suffix in ("E", "P", "T", "G", "M", "k", "", "m", "u", "n"):
        scaled: Fraction = value / _DECIMAL[suffix]
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    # Finer than nano: round up like Kubernetes does.
    return f"{sign}{math.ceil(value * 10**9)}n"


def add(values: list[tuple[str | int | float, int]]) -> str:
    """Sum ``count x quantity`` pairs into one canonical quantity string."""
    total = Fraction(0)
    binary = False
    for value, count in values:
        amount, is_binary = parse(value)
        total += amount * count
        binary = binary or is_binary
    return format_quantity(total, binary)
