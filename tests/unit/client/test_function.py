"""Shipping a CustomTrainer function: what is refused before submission, and why.

A function runs in another process with none of the caller's variables, so lambdas, closures,
module-level names, decorators, methods, builtins and functions without source are refused with
a ValueError that names the problem and the fix. Shippable functions become ``source + call``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.client import shippable as s
from trainjob.client import function


@pytest.mark.parametrize(
    ("func", "args", "fragment"),
    [
        pytest.param(s.train_lambda, None, "lambdas cannot be shipped", id="a lambda is refused"),
        pytest.param(
            s.make_closure(3),
            None,
            "uses variables of its enclosing function (value)",
            id="a closure over a local variable is refused",
        ),
        pytest.param(
            s.train_uses_module_import,
            None,
            "uses names from its module (json)",
            id="a module-level import used inside is refused",
        ),
        pytest.param(
            s.train_uses_module_constant,
            None,
            "(EPOCHS)",
            id="a module-level constant used inside is refused",
        ),
        pytest.param(
            s.train_uses_helper,
            None,
            "(train_no_args)",
            id="a module-level helper used inside is refused",
        ),
        pytest.param(
            s.train_decorated, None, "it is decorated", id="a decorated function is refused"
        ),
        pytest.param(s.train_async, None, "async function", id="an async function is refused"),
        pytest.param(s.Trainer().method, None, "a bound method", id="a bound method is refused"),
        pytest.param(len, None, "builtin_function_or_method", id="a builtin is refused"),
        pytest.param(s.train_partial, None, "a partial", id="a functools.partial is refused"),
        pytest.param("train", None, "must be callable", id="a string is refused"),
        pytest.param(
            s.train_plain,
            {"lr": object()},
            "must be Python literals",
            id="func_args that are not literals are refused",
        ),
        pytest.param(
            s.train_plain,
            {"momentum": 0.9},
            "do not fit",
            id="func_args the signature does not accept are refused",
        ),
        pytest.param(
            s.train_plain, {1: 2}, "string keys", id="func_args with non-string keys are refused"
        ),
        pytest.param(
            s.train_plain,
            {"lr": 0.1, "momentum": 0.9, "nesterov": True},
            "takes no argument named 'momentum', 'nesterov'",
            id="func_args the function does not take are named",
        ),
        pytest.param(
            s.train_default_from_module,
            None,
            "default values or type annotations use EPOCHS",
            id="a default value taken from the module is refused",
        ),
        pytest.param(
            s.train_annotated_with_module_name,
            None,
            "default values or type annotations use json",
            id="an annotation naming a module-level import is refused",
        ),
    ],
)
def test_unshippable_functions_are_refused_with_the_reason(
    func: Any, args: dict[str, Any] | None, fragment: str
) -> None:
    with pytest.raises(ValueError) as err:
        function.ship(func, args)
    assert fragment in str(err.value)


def test_a_function_without_source_is_refused_naming_where_it_was_defined() -> None:
    namespace: dict[str, object] = {}
    exec(compile("def train():\n    return 1\n", "<stdin>", "exec"), namespace)
    with pytest.raises(ValueError) as err:
        function.ship(namespace["train"], None)
    assert "source code is not available (defined in <stdin>)" in str(err.value)
    assert "define it with `def`" in str(err.value)


@pytest.mark.parametrize(
    ("func", "args", "call"),
    [
        pytest.param(
            s.train_no_args, None, "train_no_args()", id="no func_args calls with no args"
        ),
        pytest.param(
            s.train_plain,
            {"lr": 0.5, "epochs": 2},
            "train_plain(**{'lr': 0.5, 'epochs': 2})",
            id="func_args are unpacked as keyword arguments",
        ),
        pytest.param(
            s.make_nested(),
            {"x": 4},
            "train_nested(**{'x': 4})",
            id="a nested function without free variables is dedented and shipped",
        ),
        pytest.param(s.train_recursive, None, "train_recursive()", id="recursion is allowed"),
        pytest.param(
            s.train_comprehension_local,
            None,
            "train_comprehension_local()",
            id="imports inside the function used in a comprehension are fine",
        ),
        pytest.param(
            s.train_annotated_with_builtins,
            {"lr": 0.2},
            "train_annotated_with_builtins(**{'lr': 0.2})",
            id="annotations with builtin types only are shipped",
        ),
    ],
)
def test_shippable_functions_become_source_plus_call(
    func: Callable[..., Any], args: dict[str, Any] | None, call: str
) -> None:
    shipped = function.ship(func, args)
    assert shipped.script.rstrip("\n").endswith("\n" + call)
    tree = ast.parse(shipped.script)
    assert isinstance(tree.body[0], ast.FunctionDef)
    assert tree.body[0].name == func.__name__
    assert shipped.file_name == "shippable.py"
    namespace: dict[str, object] = {}
    exec(compile(shipped.script, "shipped", "exec"), namespace)  # runs on its own


def test_shipped_script_runs_with_hostile_string_arguments_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hostile = "'; rm -rf / #\"$(id)`id`"
    shipped = function.ship(s.train_plain, {"lr": hostile})
    exec(compile(shipped.script, "shipped", "exec"), {})
    assert f"lr {hostile} epochs 1" in capsys.readouterr().out


def test_shipped_script_settles_gloo_threads_at_exit_under_a_private_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import atexit

    registered: list[object] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    shipped = function.ship(s.train_plain, {"lr": 0.1})
    body = ast.parse(shipped.script).body
    # the user's def first, then trainjob's exit hook, then the call: the pod's command reads so
    assert [type(n).__name__ for n in body] == ["FunctionDef", "FunctionDef", "Expr", "Expr"]
    assert body[1].name == "_trainjob_settle_gloo_workers"  # type: ignore[attr-defined]
    namespace: dict[str, object] = {}
    exec(compile(shipped.script, "shipped", "exec"), namespace)
    assert registered == [namespace["_trainjob_settle_gloo_workers"]]
    # it is trainjob.trainers.gloo_exit's function, and it runs on its own (no gloo here: returns)
    assert "pt_gloo_runloop" in shipped.script
    registered[0]()  # type: ignore[operator]
