"""`[tool.xferlint]` in pyproject.toml, validated by pydantic.

Keys are the long command-line options, kebab-case (`extend-select`) or snake_case
(`extend_select`). The nearest pyproject.toml with a `[tool.xferlint]` table, from the
current directory upward, is used unless `--config FILE` names one. An unknown key or a
value of the wrong type is a usage error that names the file and the key.
"""

from __future__ import annotations

import os
import tomllib
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xferlint.errors import ConfigError
from xferlint.fsutil import find_upward


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class Settings(BaseModel):
    """Options shared by the command line and `[tool.xferlint]`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=_kebab, frozen=True)

    select: Optional[list[str]] = Field(default=None, description="Rules to enable (codes, prefixes, names, ALL)")
    extend_select: list[str] = Field(default_factory=list, description="Rules to enable on top of `select`")
    ignore: list[str] = Field(default_factory=list, description="Rules to disable")
    format: Literal["text", "json", "sarif"] = "text"
    output: Optional[str] = Field(default=None, description="Write the report to this file instead of stdout")
    exit_zero: bool = Field(default=False, description="Exit 0 even when there are findings")
    statistics: bool = Field(default=False, description="Show counts per rule instead of each finding")
    strict: bool = Field(default=False, description="Error on operators the analyzer does not model")
    unsafe_fixes: bool = Field(default=False, description="Also apply fixes marked unsafe")
    project_root: Optional[str] = Field(default=None, description="Root that SARIF/text paths are relative to")
    max_transfer_bytes: Optional[int] = Field(default=None, ge=0, description="Per-call transfer budget per method")


def find_pyproject(start: Optional[str] = None) -> Optional[str]:
    """The nearest pyproject.toml with a [tool.xferlint] table, from `start` upward."""
    def has_table(directory: str) -> bool:
        candidate = os.path.join(directory, "pyproject.toml")
        return os.path.isfile(candidate) and _has_table(candidate)

    directory = find_upward(start or os.getcwd(), has_table)
    return os.path.join(directory, "pyproject.toml") if directory is not None else None


def _has_table(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return "xferlint" in tomllib.load(handle).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False


def load_settings(path: Optional[str]) -> tuple[Settings, Optional[str]]:
    """Settings from `path` (or the discovered pyproject.toml); defaults when none."""
    path = path or find_pyproject()
    if path is None:
        return Settings(), None
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("xferlint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.xferlint] must be a table")
    try:
        return Settings.model_validate(table), path
    except ValidationError as exc:
        raise ConfigError(_first_problem(path, exc)) from None


def _first_problem(path: str, exc: ValidationError) -> str:
    error = exc.errors()[0]
    key = ".".join(str(p) for p in error.get("loc", ())) or "?"
    if error.get("type") == "extra_forbidden":
        known = ", ".join(sorted(_kebab(k) for k in Settings.model_fields))
        return f"{path}: [tool.xferlint] unknown key '{key}' (known keys: {known})"
    return f"{path}: [tool.xferlint] {key}: {error.get('msg', 'invalid value')}"
