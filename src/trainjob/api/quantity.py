"""Kubernetes resource quantities (``500m``, ``2``, ``1Gi``, ``1e3``): parse, add, scale, format.

The compiler needs them to count CPUs for ``numProcPerNode: auto`` (the Torch plugin, via
:func:`ceil_int`) and to sum a PodGroup's ``minResources`` (:mod:`trainjob.runtime.resources`);
validation checks resource amounts with them (:mod:`trainjob.api.container_validation`).
Arithmetic is exact (Fractions). A :class:`Quantity` keeps its format the way Go's
``resource.Quantity`` does, so sums print as upstream prints them:

* the format comes from the suffix: binary (``Ki``..``Ei``), decimal (``m``, ``k``, ``M``..) or
  exponent (``1e3``); a plain number is decimal;
* adding to a zero quantity takes the other's format, otherwise the left operand's format stays;
* the canonical string uses the largest suffix that keeps an integer mantissa; binary values
  below 1024, or not whole, print as decimal; amounts finer than ``1n`` round up.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

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
_DECIMAL_BY_EXPONENT = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)$")
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """A string is not a Kubernetes quantity."""


@dataclass(frozen=True)
class Quantity:
    """An exact amount and the format it prints in (Go's ``resource.Quantity``)."""

    amount: Fraction
    format: Format = "DecimalSI"

    def __add__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.amount == 0 else self.format
        return Quantity(self.amount + other.amount, fmt)

    def __mul__(self, count: int) -> Quantity:
        return Quantity(self.amount * count, self.format)

    def __str__(self) -> str:
        return format_quantity(self.amount, self.format)


def parse(value: str | int | float) -> Quantity:
    """The quantity a manifest value stands for; raise QuantityError when malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int):
        return Quantity(Fraction(value))
    if isinstance(value, float):
        return Quantity(_round_up_nano(Fraction(repr(value))))
    m = _PATTERN.match(value.strip())
    if not m or m.group(1) in ("", ".", "+", "-", "+.", "-."):
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
        return Quantity(_round_up_nano(number * _BINARY[suffix]), "BinarySI")
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return Quantity(_round_up_nano(number * Fraction(10) ** int(suffix[1:])), "DecimalExponent")
    return Quantity(_round_up_nano(number * _DECIMAL[suffix]), "DecimalSI")


def _round_up_nano(amount: Fraction) -> Fraction:
    """Kubernetes keeps at most nano precision and rounds the rest away from zero."""
    if (amount / _NANO).denominator == 1:
        return amount
    scaled = amount / _NANO
    rounded = math.ceil(scaled) if amount > 0 else math.floor(scaled)
    return rounded * _NANO


def ceil_int(value: str | int | float) -> int:
    """The quantity rounded up to an integer, as Go's ``Quantity.Value()``."""
    return math.ceil(parse(value).amount)


def format_quantity(amount: Fraction | int, fmt: Format = "DecimalSI") -> str:
    """Canonical form, as Go's ``Quantity.String()`` prints it."""
    value = _round_up_nano(Fraction(amount))
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    if fmt == "BinarySI" and value >= 1024 and value.denominator == 1:
        mantissa, exponent = int(value), 0
        while exponent < 6 and mantissa % 1024 == 0:
            mantissa //= 1024
            exponent += 1
        suffix = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")[exponent]
        return f"{sign}{mantissa}{suffix}"
    # Decimal: the largest exponent (a multiple of 3) that keeps the mantissa whole.
    exponent = 18
    while exponent > -9 and (value / Fraction(10) ** exponent).denominator != 1:
        exponent -= 3
    scaled = value / Fraction(10) ** exponent
    if fmt == "DecimalExponent":
        suffix = f"e{exponent}" if exponent else ""
    else:
        suffix = _DECIMAL_BY_EXPONENT[exponent]
    return f"{sign}{scaled.numerator}{suffix}"


def add(values: list[tuple[str | int | float, int]]) -> str:
    """Sum ``count x quantity`` pairs into one canonical quantity string."""
    total = Quantity(Fraction(0))
    for value, count in values:
        total = total + parse(value) * count
    return str(total)
