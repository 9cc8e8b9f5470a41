"""JSON output: the Report, as `xferlint schema` describes it."""

from __future__ import annotations

import json

from xferlint.serialize import to_jsonable


def emit(report, options) -> str:
    return json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n"
