"""torch.export entry points: the ATen sample models (`aten_models.py`) exported with
cuda:0 values on a CPU-only torch, each anti-pattern next to its negative twin.

Expect one finding per model (XF001-XF006, XF012), none on the `*_ok` twins.
The `nonzero` and mask samples abort under fake cuda and are linted from `pt2/` only.
"""

from xferlint.testing.aten import JSON_EDITED, export, sample_names


def program():
    return {name: export(name) for name in sample_names() if name not in JSON_EDITED}
