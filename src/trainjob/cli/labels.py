"""The labels of a command's values in its help, as kubectl and click write them: ``-n, --namespace
NAMESPACE``, ``--tail N``, ``--port PORT``, ``--backend local|container|kubernetes``, and in the
usage line ``trainjob logs [OPTIONS] NAME``, ``trainjob get jobs [OPTIONS] [NAME]...``.

typer 0.29 labels every value with its Python type in angle brackets (``--namespace <str>``,
``names... <list[str]>``, ``--workers <int range>``) and a required argument in braces
(``{name}``): labels a kubectl user reads as noise or as a syntax to type. :func:`install` gives
typer's options and arguments these labels, for every command at once; an option whose
declaration names a ``metavar`` keeps it (``-o FORMAT``, ``--sort-by JSONPATH``).

An option's label is made from its last word (``--leader-election-namespace`` NAMESPACE,
``--bind-host`` HOST), a count ``N``, a file ``FILE``, the choices of an enum; an argument's is
its name in capitals, singular (``names`` NAME...). Like :mod:`trainjob.cli.coercion` it reaches
into typer's classes (``typer.core.TyperOption``/``TyperArgument``); a typer that moved them is
left as it is, and ``tests/unit/cli/test_help_and_completion.py`` fails on the labels it shows.
"""

from __future__ import annotations

from typing import Any

WORDS = {
    "filename": "FILE", "kubeconfig": "FILE", "workers": "N", "out": "DIR", "configuration": "NAME",
}  # fmt: skip
"""An option's last word -> its label, where the word itself would not say it."""


def _choices(desc: Any) -> str:
    return "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())


def option_label(option: Any) -> str:
    """The label of an option's value (``NAMESPACE``, ``N``, ``FILE``, ``a|b``)."""
    desc = option.type_descriptor
    longest: str = max(option.opts, key=len).lstrip("-")
    word = longest.rsplit("-", 1)[-1].lower()
    if desc.is_choice:
        return _choices(desc)
    if word in WORDS:
        return WORDS[word]
    args = getattr(desc.annotation, "__args__", None)
    kind = args[0] if desc.is_list and args else desc.annotation
    if kind is int:
        return "PORT" if word == "port" else "N"
    if kind is float:
        return "SECONDS"
    if desc.is_path:
        return "DIR" if desc.path_type == "directory" else "FILE"
    return word.upper().replace("_", "-")


def argument_name(argument: Any) -> str:
    """An argument in capitals, singular (``NAME`` for ``names``), or its ``metavar``."""
    if argument.metavar is not None:
        return str(argument.metavar)
    name = str(argument.name or "").upper()
    return name[:-1] if argument.nargs != 1 and name.endswith("S") else name


def install() -> bool:
    """Label typer's options and arguments as kubectl does; False (typer left as it is) when
    this typer has not the classes this relies on."""
    try:
        from typer import core
    except ImportError:  # pragma: no cover - another typer
        return False
    option = getattr(core, "TyperOption", None)
    argument = getattr(core, "TyperArgument", None)
    needed = ("display_type", "_rich_display_name", "_usage_display_name")
    if option is None or argument is None or not all(hasattr(argument, n) for n in needed):
        return False  # pragma: no cover - another typer
    if getattr(option.display_type, "_trainjob_labels", False):
        return True

    def option_display_type(self: Any, ctx: Any) -> str:
        return option_label(self)

    def argument_display_type(self: Any, ctx: Any) -> str:
        """Beside the argument's name in its help: its choices, if any (nothing else)."""
        desc = self.type_descriptor
        return _choices(desc) if desc.is_choice else ""

    def help_name(self: Any) -> str:
        return argument_name(self) + ("..." if self.nargs != 1 else "")

    def usage_name(self: Any) -> str:
        name = argument_name(self)
        shown = name if self.required else f"[{name}]"
        return shown + ("..." if self.nargs != 1 else "")

    option_display_type._trainjob_labels = True  # type: ignore[attr-defined]
    option.display_type = option_display_type
    argument.display_type = argument_display_type
    argument._rich_display_name = help_name
    argument._usage_display_name = usage_name
    return True
