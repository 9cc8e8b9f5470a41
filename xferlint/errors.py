"""The exception hierarchy. Every error a user can cause is an XferlintError whose message
is one line that says what is wrong and how to get out; the CLI turns each into a
per-input error entry (exit code 2) and never shows a traceback for them."""

from __future__ import annotations


class XferlintError(Exception):
    """Base class of every error xferlint raises on purpose."""


class UsageError(XferlintError):
    """Bad command line or configuration (unknown rule selector, unknown config key)."""


class ConfigError(UsageError):
    """`[tool.xferlint]` in pyproject.toml is invalid."""


class InputError(XferlintError):
    """An input could not be loaded: missing file, syntax error, entry point that raised,
    attribute of the wrong type, a foreign or truncated file."""


class InterruptedInput(KeyboardInterrupt):
    """A KeyboardInterrupt raised while an input was imported or called, with the error
    line that says where. Still a KeyboardInterrupt, so that Ctrl-C stops an in-process
    run; a worker process ignores SIGINT, so there only the user's code raises one, and
    the worker reports `message` as that input's error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnmodelledOpError(XferlintError):
    """Strict mode met an operator the analyzer has no transfer function for."""


class FixError(XferlintError):
    """A fix could not be applied or verified."""


class FixWriteError(FixError):
    """A fixed program could not be written (disk full, read-only file or mount)."""

    def __init__(self, path: str, exc: OSError) -> None:
        super().__init__(f"{path}: cannot write the fixed program ({exc.strerror or exc})")
