"""Ship a CustomTrainer's Python function: check it can run elsewhere, then render its script.

The function travels as source code (``inspect.getsource`` + ``textwrap.dedent``) followed by one
call line, as upstream's SDK does; it runs in another process, on another machine, with none of
the caller's variables. Between the two, trainjob adds an exit hook that lets torch's gloo threads
go idle before the interpreter finalizes (:mod:`trainjob.trainers.gloo_exit`: torch 2.15 otherwise
aborts some successful DDP runs at exit). Everything that would fail there is refused here, before submission, with
a ``ValueError`` that names the problem and the fix:

- not a plain ``def`` (a lambda, a method, a builtin, a ``functools.partial``, a coroutine);
- no source available (defined in the interactive interpreter or through ``exec``);
- decorated (the decorator would not exist where it runs);
- a closure over variables of an enclosing function;
- names taken from its module (module-level imports, constants, helpers), in its body or in its
  default values and annotations (evaluated when the shipped ``def`` runs);
- ``func_args`` that are not Python literals or do not fit the signature.

Called by :mod:`trainjob.client.builder`.
"""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import inspect
import os
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainjob.trainers import gloo_exit, stdout_metrics

_FIX_DEFINE = "define it with `def` at the top level of a .py file or a notebook cell"
_FIX_IMPORTS = "import modules and define helpers inside the function body"


class Placeholder:
    """A ``func_args`` value a sweep fills in per trial: ``{{.name}}`` in the call line, which
    the OptimizationJob's template substitutes (:mod:`trainjob.optimizer.template`). With
    ``literal`` it is written bare, so a number (a uniform range, numeric choices) reaches the
    function as a number, as upstream's SDK passes them; else quoted, a string."""

    def __init__(self, name: str, literal: bool) -> None:
        self.name, self.literal = name, literal

    def __repr__(self) -> str:
        text = "{{." + self.name + "}}"
        return text if self.literal else f"'{text}'"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Placeholder) and (other.name, other.literal) == (
            self.name,
            self.literal,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.literal))


@dataclass(frozen=True)
class ShippedFunction:
    """A function ready to ship: its script (source + call line) and the file name to use."""

    name: str
    script: str
    file_name: str


def ship(func: Any, func_args: dict[str, Any] | None) -> ShippedFunction:
    """Check ``func`` (and ``func_args``) can run in another process; return its script.

    A sweep's trial function (``func_args`` holding a :class:`Placeholder`) also has the
    ``name=value`` lines it prints reported as metrics, as Katib's stdout collector reads them
    (:mod:`trainjob.trainers.stdout_metrics`). Raises ``ValueError`` naming the problem and the
    fix.
    """
    what = _describe(func)
    if not callable(func):
        raise ValueError(f"Training function must be callable, got function type: {type(func)}")
    if not isinstance(func, types.FunctionType):
        kind = "a bound method" if inspect.ismethod(func) else f"a {type(func).__name__}"
        raise ValueError(
            f"Cannot ship {what} as a training function: it is {kind}, not a plain function; "
            f"{_FIX_DEFINE} and pass its arguments with func_args"
        )
    if func.__name__ == "<lambda>":
        raise ValueError(
            f"Cannot ship {what} as a training function: lambdas cannot be shipped; {_FIX_DEFINE}"
        )
    if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
        raise ValueError(
            f"Cannot ship {what}: an async function would not run; make it a plain `def`"
        )
    if func.__code__.co_freevars:
        names = ", ".join(func.__code__.co_freevars)
        raise ValueError(
            f"Cannot ship {what}: it uses variables of its enclosing function ({names}), which "
            f"do not exist where it runs; pass them with func_args, or {_FIX_DEFINE}"
        )
    source = _source(func, what)
    tree = ast.parse(source)
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != func.__name__:
        raise ValueError(
            f"Cannot ship {what}: its source does not start with `def {func.__name__}`; "
            f"{_FIX_DEFINE}"
        )
    if node.decorator_list:
        raise ValueError(
            f"Cannot ship {what}: it is decorated, and the decorator would not exist where it "
            "runs; remove the decorator (or apply it inside the function)"
        )
    header_names = sorted(_header_names(node))
    if header_names:
        raise ValueError(
            f"Cannot ship {what}: its default values or type annotations use "
            f"{', '.join(header_names)}, which do not exist where it runs (they are evaluated "
            "when the function is defined there); use literal defaults and pass values with "
            "func_args, and quote the annotations or drop them"
        )
    module_names = sorted(_module_globals(func))
    if module_names:
        raise ValueError(
            f"Cannot ship {what}: it uses names from its module ({', '.join(module_names)}), "
            f"which do not exist where it runs; {_FIX_IMPORTS}, or pass values with func_args"
        )
    call = f"{func.__name__}()" if func_args is None else _call_line(func, what, func_args)
    trial = any(isinstance(v, Placeholder) for v in (func_args or {}).values())
    collect = _collector_block() if trial else ""
    return ShippedFunction(
        name=func.__name__,
        script=f"{source}\n{_at_exit_block()}\n{collect}{call}\n",
        file_name=_file_name(func),
    )


@functools.cache
def _at_exit_block() -> str:
    """Source that, at exit, lets torch's gloo threads go idle (trainjob.trainers.gloo_exit).

    Runs ahead of the call, under a name no user function takes, so a successful DDP run does not
    end in torch 2.15's abort at interpreter exit; a no-op without torch.distributed's gloo.
    """
    source = textwrap.dedent(inspect.getsource(gloo_exit.settle_gloo_workers))
    source = source.replace("def settle_gloo_workers(", f"def {_SETTLE}(", 1)
    return (
        "# trainjob: at exit, wait for torch's gloo threads to go idle (torch 2.15 abort at exit)\n"
        f"{source}\n__import__('atexit').register({_SETTLE})\n"
    )


_SETTLE = "_trainjob_settle_gloo_workers"
_COLLECT = "_trainjob_collect_stdout_metrics"


@functools.cache
def _collector_block() -> str:
    """Source that reports the ``name=value`` lines the function prints as metrics (Katib's
    stdout collector, :mod:`trainjob.trainers.stdout_metrics`), run before the call."""
    source = textwrap.dedent(inspect.getsource(stdout_metrics.collect_stdout_metrics))
    source = source.replace("def collect_stdout_metrics(", f"def {_COLLECT}(", 1)
    return (
        "# trainjob: name=value lines printed below are reported as metrics (Katib's collector)\n"
        f"{source}\n{_COLLECT}()\n\n"
    )


def _describe(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return f"function {name!r}" if name else repr(func)


def _source(func: types.FunctionType, what: str) -> str:
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as e:
        where = func.__code__.co_filename
        raise ValueError(
            f"Cannot ship {what}: its source code is not available (defined in {where}); "
            f"{_FIX_DEFINE}"
        ) from e
    source = textwrap.dedent(source)
    try:
        compile(source, func.__code__.co_filename, "exec")
    except SyntaxError as e:
        raise ValueError(
            f"Cannot ship {what}: its source does not parse on its own ({e.msg}); {_FIX_DEFINE}"
        ) from e
    return source


def _header_names(node: ast.FunctionDef) -> set[str]:
    """Non-builtin names read by the ``def`` line itself: defaults and annotations."""
    args = node.args
    exprs: list[ast.expr | None] = [*args.defaults, *args.kw_defaults, node.returns]
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None:
            exprs.append(arg.annotation)
    return {
        n.id
        for e in exprs
        if e is not None
        for n in ast.walk(e)
        if isinstance(n, ast.Name) and not hasattr(builtins, n.id)
    }


def _loaded_globals(code: types.CodeType) -> Iterator[str]:
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
            yield str(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _loaded_globals(const)


def _module_globals(func: types.FunctionType) -> set[str]:
    """Global names the function reads that only its module defines."""
    found: set[str] = set()
    for name in _loaded_globals(func.__code__):
        if name == func.__name__ or hasattr(builtins, name):
            continue
        if name in func.__globals__:
            found.add(name)
    return found


def _call_line(func: types.FunctionType, what: str, func_args: dict[str, Any]) -> str:
    if not isinstance(func_args, dict) or not all(isinstance(k, str) for k in func_args):
        raise ValueError(f"func_args must be a dict with string keys, got {func_args!r}")
    literal = repr(func_args)
    plain = {k: 0 if isinstance(v, Placeholder) else v for k, v in func_args.items()}
    try:
        same = ast.literal_eval(repr(plain)) == plain
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        same = False
    if not same:
        raise ValueError(
            f"func_args of {what} must be Python literals (numbers, strings, booleans, None, "
            f"and lists, tuples, dicts or sets of them), got {literal}"
        )
    sig = inspect.signature(func)
    params = sig.parameters.values()
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        takes = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        unknown = [k for k in func_args if k not in takes]
        if unknown:
            raise ValueError(
                f"func_args do not fit {what}{sig}: it takes no argument named "
                f"{', '.join(repr(k) for k in unknown)}"
            )
    try:
        sig.bind(**func_args)
    except TypeError as e:
        raise ValueError(f"func_args do not fit {what}{inspect.signature(func)}: {e}") from e
    return f"{func.__name__}(**{literal})"


def _file_name(func: types.FunctionType) -> str:
    try:
        path = inspect.getfile(func)
    except TypeError:  # pragma: no cover - plain functions always have a file
        path = ""
    base = os.path.basename(path)
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in base)
    if not safe.endswith(".py") or safe.startswith("."):
        safe = f"{func.__name__}.py"
    return safe
