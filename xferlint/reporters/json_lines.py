"""JSON Lines: one finding per line (the `check --output-format json` finding objects),
then one line per input error (`{"error": ...}`), for streaming tools and `jq -c`."""

from __future__ import annotations

import json

from xferlint.serialize import to_jsonable


def emit(report, options) -> str:
    rows = [to_jsonable(f) for f in report.findings] + [{"error": to_jsonable(e)} for e in report.errors]
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
