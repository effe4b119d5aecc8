"""Training functions used by the shipping tests (they need real source files)."""

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

EPOCHS = 3


def train_plain(lr: float = 0.1, epochs: int = 1) -> None:
    import os

    print("lr", lr, "epochs", epochs, os.getpid())


def train_no_args() -> None:
    print("hello")


def train_uses_module_import() -> str:
    return json.dumps({})


def train_uses_module_constant() -> int:
    return EPOCHS * 2


def train_uses_helper() -> None:
    train_no_args()


def make_closure(value: int) -> Callable[[], int]:
    def train_closure() -> int:
        return value

    return train_closure


def make_nested() -> Callable[[int], float]:
    def train_nested(x: int = 1) -> float:
        import math

        return math.sqrt(x)

    return train_nested


def decorate(fn: F) -> F:
    return fn


@decorate
def train_decorated() -> int:
    return 1


async def train_async() -> int:
    return 1


class Trainer:
    def method(self) -> int:
        return 1


train_lambda = lambda: 1  # noqa: E731

train_partial = functools.partial(train_plain, lr=0.5)


def train_recursive(n: int = 2) -> int:
    return 1 if n <= 0 else train_recursive(n - 1)


def train_comprehension_local() -> list[float]:
    import math

    return [math.sqrt(i) for i in range(3)]


def train_default_from_module(epochs: int = EPOCHS) -> int:
    return epochs


def train_annotated_with_module_name(data: json.JSONDecoder | None = None) -> None:
    print(data)


def train_annotated_with_builtins(
    lr: float = 0.1, tags: list[str] | None = None
) -> dict[str, object]:
    return {"lr": lr, "tags": tags}


def train_imports_probe() -> None:
    import sys

    import trainjob_probe_pkg
    import yaml

    print("probe", trainjob_probe_pkg.VALUE, trainjob_probe_pkg.__file__)
    print("yaml", yaml.__file__)
    print("python", sys.executable)
