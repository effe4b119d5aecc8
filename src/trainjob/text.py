"""Text from users and from processes, made safe to print in a terminal and in a status.

A log line can carry colour codes and other terminal escapes (``\\x1b[31m``), a manifest a NUL or
a carriage return: printed raw they recolour, move the cursor or hide text, and a NUL cuts a C
string. :func:`clean` (for messages taken from logs: status, events, describe) drops escape
sequences and shows any other control character escaped; :func:`printable` (for error messages
echoing user input) escapes them all, so the user sees exactly what is wrong. Newlines and tabs
stay. Used by the CLI's error reporting and the local backend's pod messages.

At the top of the package because its users are the front ends (CLI, dashboard), the executor's
triage and a local job's pods, which may import neither each other nor the API models; it
imports only ``re``.
"""

from __future__ import annotations

import re

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-character ESC sequences.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else ch


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (``\\x00``, ``\\x1b``)."""
    return _CONTROL.sub(_escape, text)


def clean(text: str) -> str:
    """``text`` without terminal escape sequences, other control characters escaped."""
    return printable(_ESCAPES.sub("", text))
