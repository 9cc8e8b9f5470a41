"""torch.export programs with cuda values, built on a CPU-only torch (no GPU needed).

The models (`sample_models/aten_models.py`) hold one anti-pattern each, with negative twins. `export`
builds the module on the host, then moves it and its inputs to `cuda:0` inside a
`FakeTensorMode(allow_non_fake_inputs=True)` and exports under `no_grad` (docs: "Exporting
programs with cuda values on a CPU machine"). `nonzero` and boolean masks abort on fake
cuda tensors, so those models (`JSON_EDITED`) are exported on cpu and their saved `.pt2`
has every device rewritten to cuda:0. Exports that can abort run in a subprocess:
`python -m xferlint.testing.aten OUT_DIR` writes every model as `OUT_DIR/<name>.pt2`.
"""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile

DEV = "cuda:0"
MODELS_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "sample_models", "aten_models.py")


def _catalog():
    """The sample models (`sample_models/aten_models.py`), imported by path: their source
    lines are the user code findings point at, so they live outside the package."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("xferlint_aten_models", os.path.abspath(MODELS_FILE))
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


JSON_EDITED = frozenset({"nonzero", "nonzero_ok", "mask"})  # abort on fake cuda: edited after export
HOST_INPUTS = {"duplicate": (1,), "duplicate_ok": (1,)}  # inputs that stay on the host
COUNTER_FIRST = frozenset({"while_round_trip", "loops_ok"})  # first input: a while_loop counter


def _inputs(name: str):
    import torch

    _, count = _catalog().MODELS[name]
    inputs = [torch.randn(4, 8) for _ in range(count)]
    if name in COUNTER_FIRST:
        inputs[0] = torch.tensor(0)
    return tuple(inputs)


def export(name: str, decompose: bool = False):
    """The model's ExportedProgram with its values on cuda:0 (in-process: only for models
    outside JSON_EDITED; those abort under fake cuda)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    cls, _ = _catalog().MODELS[name]
    module = cls().eval()
    inputs = _inputs(name)
    if name in JSON_EDITED:
        with torch.no_grad():
            ep = torch.export.export(module, inputs)
            return ep.run_decompositions() if decompose else ep
    with FakeTensorMode(allow_non_fake_inputs=True):
        module = module.to(DEV)
        moved = tuple(t if i in HOST_INPUTS.get(name, ()) else t.to(DEV) for i, t in enumerate(inputs))
        with torch.no_grad():
            ep = torch.export.export(module, moved)
            return ep.run_decompositions() if decompose else ep


def to_cuda_json(data: bytes) -> bytes:
    """A saved `.pt2` with every tensor's device rewritten to cuda:0 (the archive stays a
    plain zip that torch.export.load accepts where torch has CUDA)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            raw = src.read(info)
            if info.filename.endswith("/models/model.json"):
                model = json.loads(raw)
                for meta in model["graph_module"]["graph"]["tensor_values"].values():
                    meta["device"] = {"type": "cuda", "index": 0}
                raw = json.dumps(model).encode()
            dst.writestr(info, raw)
    return out.getvalue()


def save(name: str, path: str, decompose: bool = False) -> None:
    import torch

    with torch.no_grad():
        ep = export(name, decompose)
        if name in JSON_EDITED:
            buffer = io.BytesIO()
            torch.export.save(ep, buffer)
            data = to_cuda_json(buffer.getvalue())
            with open(path, "wb") as handle:
                handle.write(data)
        else:
            torch.export.save(ep, path)


def main(out_dir: str, names=None) -> None:
    """Write every model (or those `names`) as `<name>.pt2` and `<name>.decomposed.pt2`."""
    os.makedirs(out_dir, exist_ok=True)
    for name in names or _catalog().MODELS:
        save(name, os.path.join(out_dir, f"{name}.pt2"))
        save(name, os.path.join(out_dir, f"{name}.decomposed.pt2"), decompose=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])


def sample_pt2(name: str):
    """The bundled `sample_models/pt2/<name>.pt2` read by the torch-free frontend (the
    examples of the rules on ATen)."""
    from xferlint.frontends.pt2.view import load_pt2_file

    path = os.path.abspath(os.path.join(os.path.dirname(MODELS_FILE), "pt2", f"{name}.pt2"))
    return load_pt2_file(path, label=f"{name}.pt2").view


def sample_names() -> list[str]:
    return list(_catalog().MODELS)
