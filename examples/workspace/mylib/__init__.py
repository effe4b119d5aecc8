"""A package of the workspace folder (examples/workspace.yaml imports it from train.py)."""


def greeting() -> str:
    return "hello from mylib"
