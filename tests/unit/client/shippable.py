"""Training functions used by the shipping tests (they need real source files)."""

import functools
import json

EPOCHS = 3


def train_plain(lr=0.1, epochs=1):
    import os

    print("lr", lr, "epochs", epochs, os.getpid())


def train_no_args():
    print("hello")


def train_uses_module_import():
    return json.dumps({})


def train_uses_module_constant():
    return EPOCHS * 2


def train_uses_helper():
    return train_no_args()


def make_closure(value):
    def train_closure():
        return value

    return train_closure


def make_nested():
    def train_nested(x=1):
        import math

        return math.sqrt(x)

    return train_nested


def decorate(fn):
    return fn


@decorate
def train_decorated():
    return 1


async def train_async():
    return 1


class Trainer:
    def method(self):
        return 1


train_lambda = lambda: 1  # noqa: E731

train_partial = functools.partial(train_plain, lr=0.5)


def train_recursive(n=2):
    return 1 if n <= 0 else train_recursive(n - 1)


def train_comprehension_local():
    import math

    return [math.sqrt(i) for i in range(3)]


def train_default_from_module(epochs=EPOCHS):
    return epochs


def train_annotated_with_module_name(data: json.JSONDecoder | None = None) -> None:
    print(data)


def train_annotated_with_builtins(lr: float = 0.1, tags: list[str] | None = None) -> dict:
    return {"lr": lr, "tags": tags}


def train_imports_probe():
    import sys

    import trainjob_probe_pkg
    import yaml

    print("probe", trainjob_probe_pkg.VALUE, trainjob_probe_pkg.__file__)
    print("yaml", yaml.__file__)
    print("python", sys.executable)
