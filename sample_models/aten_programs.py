"""torch.export entry points: the ATen sample models (`aten_models.py`) exported with
cuda:0 values on a CPU-only torch, each anti-pattern next to its negative twin.

Expect XF001, XF002, XF004, XF005, XF006 and XF012 once each, none on the `*_ok` twins.
The `nonzero` and mask samples abort under fake cuda and are linted from `pt2/` only.
"""

from xferlint.testing.aten import JSON_EDITED, export, sample_names


def program():
    return {name: export(name) for name in sample_names() if name not in JSON_EDITED}
