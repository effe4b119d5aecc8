"""The trainer's one error type: a one-line message that names the key and says what to do.

Raised by config parsing, preflight checks and loading; caught by the entry points
(:mod:`.launch`, :mod:`.train`), which print ``error: <message>`` and exit 1 without a traceback.
"""

from __future__ import annotations


class TrainerError(Exception):
    """A user-facing problem with the command, config, model or data (no traceback is shown)."""
