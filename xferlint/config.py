"""`[tool.xferlint]` in pyproject.toml, checked against the Settings dataclass.

Keys are the long command-line options, kebab-case (`extend-select`) or snake_case
(`extend_select`). The nearest pyproject.toml with a `[tool.xferlint]` table, from the
current directory upward, is used unless `--config FILE` names one. An unknown key or a
value of the wrong type is a usage error that names the file and the key.
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Literal, Optional

from xferlint.errors import ConfigError, UsageError
from xferlint.fsutil import find_upward
from xferlint.records import dataclass
from xferlint.selection import check_selectors
from xferlint.serialize import BOUNDARY, InvalidField, described, from_mapping


def _kebab(name: str) -> str:
    return name.replace("_", "-")


# Units of a byte size, case-insensitive: SI (powers of 1000) and IEC (powers of 1024, the
# units the reports write sizes in). A bare number is bytes.
_BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(text: str) -> int:
    """A byte size: `65536`, `65_536`, `64 KiB`, `1.5MiB`, `2 GB` (a sign is kept: the caller
    refuses a negative budget in its own words). ValueError when it is none; FractionalBytes
    when it is no whole number of bytes (`0.1 KiB`)."""
    from fractions import Fraction

    body = text.strip().replace("_", "")
    sign = -1 if body.startswith("-") else 1
    number = body.lstrip("+-").rstrip("BbIiKkMmGgTt ")
    unit = body.lstrip("+-")[len(number):].strip().lower()
    if unit not in _BYTE_UNITS or not number.replace(".", "", 1).isdigit() or not number.isascii():
        raise ValueError(f"not a byte size: {text!r}")
    value = sign * Fraction(number) * _BYTE_UNITS[unit]
    if value.denominator != 1:
        raise FractionalBytes(f"{text.strip()} is not a whole number of bytes ({float(value):g})")
    return int(value)


class FractionalBytes(ValueError):
    """A byte size with a fraction of a byte (`0.1 KiB`)."""


@dataclass(**BOUNDARY)
class Settings:
    """Options shared by the command line and `[tool.xferlint]`."""

    select: Optional[list[str]] = described("Rules to enable (codes, prefixes, names, ALL)", default=None)
    extend_select: list[str] = described("Rules to enable on top of `select`", default_factory=list)
    ignore: list[str] = described("Rules to disable", default_factory=list)
    output_format: Literal["concise", "full", "text", "json", "json-lines", "sarif", "github", "gitlab", "junit",
                           "html", "model-explorer"] = described(
        "Output format (`text` is the old name of `concise`)", default="concise")
    output: Optional[str] = described("Write the report to this file instead of stdout", default=None)
    exit_zero: bool = described("Exit 0 even when there are findings", default=False)
    statistics: bool = described("Show counts per rule instead of each finding", default=False)
    strict: bool = described("Error on operators the analyzer does not model", default=False)
    unsafe_fixes: bool = described("Also apply fixes marked unsafe", default=False)
    project_root: Optional[str] = described("Root that SARIF/text paths are relative to", default=None)
    max_transfer_bytes: Optional[int] = described(
        "Per-call transfer budget per method (bytes; in pyproject.toml also a string with a unit, \"64 KiB\")",
        default=None)
    exclude: Optional[list[str]] = described(
        "Glob patterns of files and directories directory discovery skips (replaces the defaults)", default=None)
    extend_exclude: list[str] = described("Patterns to skip on top of `exclude`", default_factory=list)
    jobs: Optional[int] = described("Worker processes at once: one per entry point, or per run of program "
                                    "files in a plain check (default: the cores available)", default=None)
    timeout: Optional[float] = described("Seconds each entry point may take (default: no limit)", default=None)
    per_file_ignores: dict[str, list[str]] = described(
        "Glob pattern (relative to the config file's directory) -> rules ignored in the files it matches; "
        "made absolute when the file is read", default_factory=dict)
    extend_per_file_ignores: dict[str, list[str]] = described(
        "Patterns -> rules, on top of `per-file-ignores`", default_factory=dict)


_MAX_CONFIG_BYTES = 16 << 20  # a pyproject.toml is small; a larger "file" is a device or a mistake

# Other spellings of a key (ruff's `format` is `output-format`).
_ALIASES = {"format": "output_format"}


def find_pyproject(start: Optional[str] = None) -> Optional[str]:
    """The nearest pyproject.toml with a [tool.xferlint] table, from `start` upward."""
    def has_table(directory: str) -> bool:
        candidate = os.path.join(directory, "pyproject.toml")
        return os.path.isfile(candidate) and _has_table(candidate)

    directory = find_upward(start or os.getcwd(), has_table)
    return os.path.join(directory, "pyproject.toml") if directory is not None else None


def _has_table(path: str) -> bool:
    """Whether `path` has a [tool.xferlint] table. A file that mentions xferlint but is
    not valid TOML (or cannot be read) is an error: ignoring it would run every rule."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if b"xferlint" not in raw and b"\\" not in raw:
        # no key names it: only an escape sequence in a quoted key could spell `xferlint`
        # otherwise, and without the table there is no need to import tomllib (~11 ms of a
        # one-file check) or parse the file
        return False
    import tomllib

    try:
        table = tomllib.loads(raw.decode("utf-8")).get("tool", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        if b"xferlint" in raw:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
        return False  # someone else's broken file, with nothing of ours in it
    return isinstance(table, dict) and "xferlint" in table


def load_settings(path: Optional[str]) -> tuple[Settings, Optional[str]]:
    """Settings from `path` (or the discovered pyproject.toml); defaults when none."""
    path = path or find_pyproject()
    if path is None:
        return Settings(), None
    if os.path.exists(path) and not os.path.isfile(path):
        raise ConfigError(f"{path}: not a regular file")
    import tomllib

    try:
        with open(path, "rb") as handle:
            raw = handle.read(_MAX_CONFIG_BYTES + 1)
        if len(raw) > _MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {_MAX_CONFIG_BYTES >> 20} MiB; not a pyproject.toml")
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("xferlint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.xferlint] must be a table")
    return _parse(path, table), path


def _field_name(key: str) -> str:
    name = key.replace("-", "_")
    return _ALIASES.get(name, name)


def _parse(path: str, table: dict) -> Settings:
    spelled = {_field_name(key): key for key in table}  # field -> the key as the file spells it
    key = spelled.get("max_transfer_bytes")
    budget = table.get(key)
    if isinstance(budget, str):  # `max-transfer-bytes = "64 MiB"`
        try:
            table = {**table, key: parse_bytes(budget)}
        except FractionalBytes as exc:
            raise ConfigError(f"{path}: [tool.xferlint] {key}: {exc}") from None
        except ValueError:
            raise ConfigError(f"{path}: [tool.xferlint] {key}: expected a number of bytes, with or without a unit "
                              f"(65536, \"64 KiB\"), got {budget!r}") from None
    try:
        settings = from_mapping(Settings, {_field_name(key): value for key, value in table.items()})
    except InvalidField as exc:
        key = spelled.get(exc.key, exc.key)
        if str(exc) == "unknown key":
            known = ", ".join(sorted(_kebab(f.name) for f in fields(Settings)))
            raise ConfigError(f"{path}: [tool.xferlint] unknown key '{key}' (known keys: {known})") from None
        raise ConfigError(f"{path}: [tool.xferlint] {key}: {exc}") from None
    for key in ("select", "extend_select", "ignore"):
        value = getattr(settings, key)
        if value is None:
            continue
        if key == "select" and not value:
            raise ConfigError(f"{path}: [tool.xferlint] {spelled.get(key, key)}: empty, so no rule would run; "
                              "remove the key to run every rule")
        _check_selectors(value, f"{path}: [tool.xferlint] {spelled.get(key, key)}")
    settings = _anchor_per_file_ignores(path, settings, spelled)
    if settings.max_transfer_bytes is not None and settings.max_transfer_bytes < 0:
        raise ConfigError(f"{path}: [tool.xferlint] max-transfer-bytes: a budget cannot be negative "
                          f"({settings.max_transfer_bytes})")
    if settings.jobs is not None and settings.jobs < 1:
        raise ConfigError(f"{path}: [tool.xferlint] jobs: at least 1 (got {settings.jobs})")
    if settings.timeout is not None and not settings.timeout > 0:
        raise ConfigError(f"{path}: [tool.xferlint] timeout: a number of seconds above 0 (got {settings.timeout})")
    return settings


def _check_selectors(selectors, where: str) -> None:
    """`check_selectors`, its complaint a ConfigError that names `where` (file, key, pattern)."""
    try:
        check_selectors(selectors, "")
    except UsageError as exc:
        raise ConfigError(f"{where}: {str(exc).removeprefix(': ')}") from None


def _anchor_per_file_ignores(path: str, settings: Settings, spelled: dict) -> Settings:
    """Check `per-file-ignores` (patterns -> rule selectors, none empty) and make its patterns
    absolute: they are relative to the directory of the file that declares them."""
    import dataclasses

    root = os.path.dirname(os.path.abspath(path))
    changes = {}
    for key in ("per_file_ignores", "extend_per_file_ignores"):
        table = getattr(settings, key)
        name = spelled.get(key, _kebab(key))
        for pattern, codes in table.items():
            if not pattern.strip():
                raise ConfigError(f"{path}: [tool.xferlint] {name}: an empty pattern")
            if not codes:
                raise ConfigError(f"{path}: [tool.xferlint] {name}: '{pattern}': an empty list of rules; "
                                  "name rules by code (XF006), prefix, name or ALL, or remove the pattern")
            _check_selectors(codes, f"{path}: [tool.xferlint] {name}: '{pattern}'")
        changes[key] = {os.path.join(root, p if "/" in p else os.path.join("**", p)): list(c)
                        for p, c in table.items()}
    return dataclasses.replace(settings, **changes)
