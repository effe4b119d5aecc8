"""Kubernetes quantities: parsing, Go's canonical form, and Go's rule for the format of a sum."""

from __future__ import annotations

from fractions import Fraction

import pytest

from trainjob.api import quantity
from trainjob.api.quantity import Quantity, QuantityError


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("2", "2", id="a whole number stays as written"),
        pytest.param("1500m", "1500m", id="milli cpu without a whole mantissa stays milli"),
        pytest.param("2000m", "2", id="milli cpu that is whole prints without suffix"),
        pytest.param("0.5", "500m", id="a decimal fraction prints as milli"),
        pytest.param("1000M", "1G", id="decimal suffixes move up while the mantissa stays whole"),
        pytest.param("1500", "1500", id="1500 keeps no suffix because 1.5k is not whole"),
        pytest.param("1536Mi", "1536Mi", id="binary keeps the largest whole 1024 power"),
        pytest.param("1.5Gi", "1536Mi", id="a fractional binary amount moves down a suffix"),
        pytest.param("1024Ki", "1Mi", id="binary suffixes move up"),
        pytest.param("512Ki", "512Ki", id="512Ki stays binary"),
        pytest.param("0.5Ki", "512", id="binary amounts below 1024 print as decimal"),
        pytest.param("1e3", "1e3", id="exponent format is kept"),
        pytest.param("1500e-3", "1500e-3", id="exponent format uses multiples of three"),
        pytest.param("0.1n", "1n", id="amounts finer than nano round up"),
        pytest.param("0", "0", id="zero prints as 0"),
        pytest.param("1E", "1E", id="a lone E is the exa suffix"),
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    assert str(quantity.parse(text)) == canonical


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(2, Quantity(Fraction(2)), id="a YAML integer is decimal"),
        pytest.param(0.1, Quantity(Fraction(1, 10)), id="a YAML float is read from its digits"),
    ],
)
def test_numbers_from_yaml(value: int | float, want: Quantity) -> None:
    assert quantity.parse(value) == want


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1Gb", id="unknown suffix"),
        pytest.param(".", id="a lone dot"),
    ],
)
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        quantity.parse(text)


def test_booleans_are_not_quantities() -> None:
    with pytest.raises(QuantityError):
        quantity.parse(True)


@pytest.mark.parametrize(
    ("terms", "want"),
    [
        pytest.param([("500m", 3)], "1500m", id="count times milli cpu"),
        pytest.param([("1Gi", 2), ("512Mi", 1)], "2560Mi", id="binary sums stay binary"),
        pytest.param([("1G", 1), ("1Gi", 1)], "2073741824", id="the first term's format wins"),
        pytest.param([("1Gi", 1), ("1G", 1)], "2073741824", id="binary not whole in Ki is plain"),
        pytest.param([("1Gi", 0), ("1G", 2)], "2G", id="a zero first term passes the format on"),
        pytest.param([("2", 2), ("500m", 1)], "4500m", id="decimal sums stay decimal"),
    ],
)
def test_sums_follow_go_format_rules(terms: list[tuple[str | int | float, int]], want: str) -> None:
    assert quantity.add(terms) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("1500m", 2, id="rounds up"),
        pytest.param("2", 2, id="whole numbers are kept"),
        pytest.param(3, 3, id="integers pass through"),
    ],
)
def test_ceil_int(value: str | int, want: int) -> None:
    assert quantity.ceil_int(value) == want
