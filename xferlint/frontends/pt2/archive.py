"""The `.pt2` archive: a zip written by `torch.export.save` (PT2 Archive Spec).

Layout (torch 2.8 .. 2.13): `<root>/archive_format` ("pt2"), `<root>/archive_version`,
`<root>/byteorder`, `<root>/models/<name>.json` (the serialized ExportedProgram, schema
`torch/_export/serde/schema.py`), weights and constants under `data/`. Only the archive
markers and the model JSON are read; weights and `data/sample_inputs/*.pt` (pickles) are
never opened. Every read is bounded: the number of entries, the uncompressed size of what
is read (checked against the zip directory and again while reading, so a zip bomb stops at
the bound) and the JSON nesting depth (json's own recursion bound, caught).
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from typing import Any

from xferlint.frontends.bounded import FormatError, safe_text
from xferlint.records import dataclass

ARCHIVE_FORMAT = "pt2"
ARCHIVE_VERSIONS = frozenset({"0"})  # torch 2.8 .. 2.13
SCHEMA_MAJOR = 8  # torch/_export/serde/schema.py SCHEMA_VERSION (8, x); torch 2.13 writes (8, 20)
MAX_ENTRIES = 1 << 16
MAX_JSON_BYTES = 1 << 30  # 1 GiB of model JSON is far beyond any graph
MAX_MARKER_BYTES = 64


class Pt2FormatError(FormatError):
    """A `.pt2` that is not a readable torch.export archive."""


@dataclass(frozen=True, slots=True)
class Pt2Archive:
    """What the reader takes from an archive: its root folder and decoded model JSON."""

    root: str
    model_name: str
    archive_version: str
    model: dict[str, Any]


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    if info.file_size > limit:
        raise Pt2FormatError(f"{safe_text(info.filename)} claims {info.file_size} bytes, more than the {limit} xferlint reads")
    with zf.open(info) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Pt2FormatError(f"{safe_text(info.filename)} inflates beyond {limit} bytes")
    return data


def _root(names: list[str]) -> str:
    markers = [n for n in names if n.endswith("/archive_format") and n.count("/") == 1]
    if markers:
        return markers[0].split("/")[0]
    if any(n.endswith("serialized_exported_program.json") for n in names):
        raise Pt2FormatError("a .pt2 in the flat layout torch <= 2.7 wrote, which xferlint does not read "
                             "(re-save it with torch.export.save from torch >= 2.8)")
    raise Pt2FormatError("a zip archive without `archive_format`, not a torch.export .pt2 (an ETRecord?)")


def _marker(zf: zipfile.ZipFile, by_name: dict[str, zipfile.ZipInfo], path: str) -> str:
    info = by_name.get(path)
    if info is None:
        raise Pt2FormatError(f"missing {safe_text(path)}")
    return _read(zf, info, MAX_MARKER_BYTES).decode("utf-8", errors="replace").strip()


def _model(zf: zipfile.ZipFile, by_name: dict[str, zipfile.ZipInfo], root: str) -> tuple[str, dict[str, Any]]:
    prefix = f"{root}/models/"
    models = sorted(n for n in by_name if n.startswith(prefix) and n.endswith(".json") and "/" not in n[len(prefix):])
    if not models:
        raise Pt2FormatError("no model in the archive (models/*.json is missing; an AOTInductor package?)")
    path = f"{prefix}model.json" if f"{prefix}model.json" in by_name else models[0]
    raw = _read(zf, by_name[path], MAX_JSON_BYTES)
    try:
        text = raw.decode("utf-8")
        model = json.loads(text)
    except UnicodeDecodeError:
        raise Pt2FormatError(f"{safe_text(path)} is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise Pt2FormatError(f"{safe_text(path)} is not valid JSON ({safe_text(str(exc), 80)})") from None
    if not isinstance(model, dict):
        raise Pt2FormatError(f"{safe_text(path)} holds a {type(model).__name__}, not a serialized ExportedProgram")
    return path[len(prefix):-len(".json")], model


def _check_schema(model: dict[str, Any]) -> None:
    version = model.get("schema_version")
    major = version.get("major") if isinstance(version, dict) else None
    minor = version.get("minor") if isinstance(version, dict) else None
    if not isinstance(major, int) or not isinstance(minor, int):
        raise Pt2FormatError("the model JSON has no schema_version: not a serialized ExportedProgram")
    if major != SCHEMA_MAJOR:
        raise Pt2FormatError(f"ExportedProgram schema version {major}.{minor}, which xferlint does not read "
                             f"(it reads {SCHEMA_MAJOR}.x, torch 2.8 .. 2.13)")


def open_archive(data: bytes) -> Pt2Archive:
    """Check the archive and decode its model JSON (raises Pt2FormatError)."""
    if not data:
        raise Pt2FormatError("empty file, not a .pt2 archive")
    if not data.startswith(b"PK"):
        what = "a .pte program" if data[4:8] == b"ET12" else "not a zip archive"
        raise Pt2FormatError(f"{what}, not a torch.export .pt2")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ENTRIES:
                raise Pt2FormatError(f"{len(infos)} archive entries, more than the {MAX_ENTRIES} xferlint reads")
            by_name = {i.filename: i for i in infos}
            root = _root(list(by_name))
            fmt = _marker(zf, by_name, f"{root}/archive_format")
            if fmt != ARCHIVE_FORMAT:
                raise Pt2FormatError(f"archive format {safe_text(fmt)!r}, not {ARCHIVE_FORMAT!r}")
            version = _marker(zf, by_name, f"{root}/archive_version")
            if version not in ARCHIVE_VERSIONS:
                raise Pt2FormatError(f"archive version {safe_text(version)!r}, which xferlint does not read "
                                     f"(it reads {', '.join(sorted(ARCHIVE_VERSIONS))}: torch 2.8 .. 2.13)")
            name, model = _model(zf, by_name, root)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise Pt2FormatError(f"corrupt or truncated zip archive ({safe_text(str(exc), 80)})") from None
    except (OSError, RuntimeError, zlib.error) as exc:  # bad deflate data, encrypted entries
        raise Pt2FormatError(f"corrupt zip archive ({safe_text(str(exc), 80)})") from None
    _check_schema(model)
    return Pt2Archive(root=root, model_name=name, archive_version=version, model=model)
