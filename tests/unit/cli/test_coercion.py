"""cli/coercion.py converts option values as typer itself does, value for value and error for
error, without pydantic for the plain ones: each value here goes through the fast coercion
installed on typer's parameters and through typer's own (``build_runtime_param``, pydantic's
TypeAdapter), and both must agree."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import pytest
import typer
from typer._coercion import build_runtime_param

from trainjob.cli import coercion


class Colour(StrEnum):
    red = "red"
    dark_blue = "dark-blue"


app = typer.Typer()


@app.command()
def probe(
    name: Annotated[str, typer.Option()] = "x",
    maybe: Annotated[str | None, typer.Option()] = None,
    tail: Annotated[int, typer.Option()] = -1,
    colour: Annotated[Colour, typer.Option(case_sensitive=False)] = Colour.red,
    strict: Annotated[Colour, typer.Option()] = Colour.red,
    names: Annotated[list[str] | None, typer.Option()] = None,
    flag: Annotated[bool, typer.Option()] = False,
    bounded: Annotated[int, typer.Option(min=1)] = 5,
) -> None:  # pragma: no cover - only its parameters are used
    pass


COMMAND = typer.main.get_command(app)
PARAMS = {p.name: p for p in COMMAND.params}


def both(param: str, value: Any) -> tuple[Any, Any]:
    """(fast, typer's own) result of coercing ``value``: the value, or the error's message."""
    p: Any = PARAMS[param]
    ctx = typer.Context(COMMAND)
    p._runtime_param = None
    out = []
    for runtime in (p.get_runtime_param(), build_runtime_param(p.type_descriptor)):
        try:
            out.append(runtime.coerce(value, param=p, ctx=ctx))
        except typer.BadParameter as e:
            out.append(("error", e.format_message()))
    return out[0], out[1]


def test_installed() -> None:
    assert coercion.install()  # idempotent, and typer has the hooks it relies on
    assert type(PARAMS["name"].get_runtime_param()).__name__ == "FastRuntimeParam"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("name", "abc"),
        ("name", ""),
        ("name", "with space"),
        ("maybe", None),
        ("maybe", "ns"),
        ("tail", "10"),
        ("tail", -1),
        ("tail", " 3 "),
        ("tail", "+3"),
        ("tail", "-0"),
        ("tail", "1_000"),
        ("tail", "00012"),
        ("tail", "1.0"),  # pydantic takes it: handed to typer's own
        ("tail", "1.5"),
        ("tail", "abc"),
        ("tail", "1e3"),
        ("tail", "١٢"),  # non-ASCII digits: int() takes them, pydantic does not
        ("tail", "1__0"),
        ("colour", "red"),
        ("colour", "RED"),
        ("colour", "Dark-Blue"),
        ("colour", Colour.dark_blue),
        ("colour", "green"),
        ("strict", "RED"),
        ("strict", "red"),
        ("names", ("a", "b")),
        ("names", ()),
        ("names", None),
        ("flag", True),
        ("flag", "yes"),
        ("bounded", "0"),
        ("bounded", "7"),
    ],
)
def test_same_as_typers_own(param: str, value: Any) -> None:
    fast, own = both(param, value)
    assert fast == own
    assert type(fast) is type(own)
