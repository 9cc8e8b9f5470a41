"""Random device programs, for differential tests and benchmarks.

A `ModelSpec` is a random DAG over 4x4 float tensors: inputs, then ops chosen from the
demo backend's delegable ops (add, sin, mm) and host-only ops (cos, relu, mul), each
reading earlier values (so values have several users), and several outputs (every value
nobody reads, plus a few more). Each delegable op gets a device from
(None, "cuda:0", "cuda:1"); None keeps it on the host. Everything is drawn from
`random.Random(seed)`, so a seed names a model.

    from randmodels import generate, lower_spec, lower_variants, lowered_models
    spec = generate(7)
    program = lower_spec(spec, elide=False)          # one lowering, like xferlint.testing.lower
    programs = lower_variants(spec)                  # elide_off / elide_on / rewire, one edge step
    models, refused = lowered_models(first_seed=0, count=30)

The ground truth the differential test compares xferlint against is read straight from a
lowered program's final graph (`copy_counts`), with ExecuTorch's TensorSpecs, never
through xferlint.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Optional

import torch

DEVICE_OPS = ("add", "sin", "mm")
HOST_OPS = ("cos", "relu", "mul")
DEVICES = (None, "cuda:0", "cuda:1")
ARITY = {"add": 2, "sin": 1, "mm": 2, "cos": 1, "relu": 1, "mul": 2}
SHAPE = (4, 4)  # square, so mm composes with everything


@dataclass(frozen=True)
class OpSpec:
    op: str
    args: tuple[int, ...]  # indices into the value list: inputs first, then op results


@dataclass(frozen=True)
class ModelSpec:
    seed: int
    num_inputs: int
    ops: tuple[OpSpec, ...]
    outputs: tuple[int, ...]  # value indices, never an input
    devices: tuple[Optional[str], ...]  # one per delegable op, in op order

    def describe(self) -> str:
        names = [f"x{i}" for i in range(self.num_inputs)] + [f"v{i}" for i in range(len(self.ops))]
        body = []
        devices = iter(self.devices)
        for i, op in enumerate(self.ops):
            where = f"@{next(devices) or 'host'}" if op.op in DEVICE_OPS else ""
            body.append(f"v{i}={op.op}{where}({','.join(names[a] for a in op.args)})")
        outs = ",".join(names[o] for o in self.outputs)
        return f"seed={self.seed}: " + "; ".join(body) + f" -> ({outs})"


def generate(seed: int, min_ops: int = 3, max_ops: int = 9, device_weights=(1, 3, 2)) -> ModelSpec:
    """A random model spec; the same seed always gives the same spec."""
    rnd = random.Random(seed)
    num_inputs = rnd.randint(1, 3)
    num_ops = rnd.randint(min_ops, max_ops)
    ops: list[OpSpec] = []
    devices: list[Optional[str]] = []
    for i in range(num_ops):
        op = rnd.choice(DEVICE_OPS) if rnd.random() < 0.65 else rnd.choice(HOST_OPS)
        available = num_inputs + i
        # Prefer recent values (long chains make back-to-back delegates), but reach back
        # too, so values get several users.
        args = tuple(
            available - 1 - min(int(rnd.expovariate(0.7)), available - 1) for _ in range(ARITY[op])
        )
        ops.append(OpSpec(op, args))
        if op in DEVICE_OPS:
            devices.append(rnd.choices(DEVICES, weights=device_weights)[0])
    used = {a for o in ops for a in o.args}
    results = range(num_inputs, num_inputs + num_ops)
    outputs = {v for v in results if v not in used}  # every result is used by something
    outputs |= {v for v in results if rnd.random() < 0.2}
    return ModelSpec(seed, num_inputs, tuple(ops), tuple(sorted(outputs)), tuple(devices))


class RandomModel(torch.nn.Module):
    """Runs a ModelSpec."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = list(inputs)
        for op in self.spec.ops:
            a = [values[i] for i in op.args]
            if op.op == "add":
                values.append(a[0] + a[1])
            elif op.op == "mul":
                values.append(a[0] * a[1])
            elif op.op == "mm":
                values.append(torch.mm(a[0], a[1]))
            else:
                values.append(getattr(torch, op.op)(a[0]))
        return tuple(values[i] for i in self.spec.outputs)


def example_inputs(spec: ModelSpec) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(spec.seed)
    return tuple(torch.randn(*SHAPE, generator=generator) for _ in range(spec.num_inputs))


def lower_spec(spec: ModelSpec, **kwargs: Any) -> Any:
    """Lower with ExecuTorch (`xferlint.testing.lower`); kwargs: elide, rewire_without_dce,
    to_executorch."""
    from xferlint.testing import lower

    return lower(RandomModel(spec), example_inputs(spec), list(spec.devices) or [None], **kwargs)


VARIANTS = ("elide_off", "elide_on", "rewire")


def lower_variants(spec: ModelSpec, variants: tuple[str, ...] = VARIANTS) -> dict[str, Any]:
    """One `to_edge_transform_and_lower` (the expensive step), then `to_executorch` on a
    copy of the edge program per variant, as `xferlint.testing.lower` would run it:

    - `elide_off`: PropagateDevicePass's same-device elision switched off;
    - `elide_on`: stock ExecuTorch;
    - `rewire`: elision off plus the `RewireWithoutDCE` hook in `to_out_var_pass`.
    """
    import copy

    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import ToOutVarPass

    from xferlint.testing import RewireWithoutDCE, ThenPass, upstream_elision

    edge = lower_spec(spec, to_executorch=False)
    programs: dict[str, Any] = {}
    for name in variants:
        if name not in VARIANTS:
            raise ValueError(f"unknown variant {name!r}; expected one of {VARIANTS}")
        config = ExecutorchBackendConfig()
        if name == "rewire":
            config.to_out_var_pass = ThenPass(RewireWithoutDCE(), ToOutVarPass(ignore_to_out_var_failure=False))
        with upstream_elision(name == "elide_on"):
            # to_executorch mutates the edge program in place: each variant gets a copy.
            programs[name] = copy.deepcopy(edge).to_executorch(config)
    return programs


def lowered_models(first_seed: int, count: int, variants: tuple[str, ...] = VARIANTS,
                   max_tries: Optional[int] = None) -> tuple[list[tuple[ModelSpec, dict[str, Any]]], list[tuple[ModelSpec, str]]]:
    """`count` random models ExecuTorch lowers (seeds from `first_seed` on), each with its
    variants, and the models it refused, each with a one-line reason. A refused model is
    replaced by the next seed's, up to `max_tries` seeds (default 3 * count)."""
    models: list[tuple[ModelSpec, dict[str, Any]]] = []
    refused: list[tuple[ModelSpec, str]] = []
    seed = first_seed
    limit = max_tries if max_tries is not None else 3 * count
    while len(models) < count and seed - first_seed < limit:
        spec = generate(seed)
        seed += 1
        try:
            programs = lower_variants(spec, variants)
        except Exception as exc:  # noqa: BLE001 - ExecuTorch refusing a model is data here
            refused.append((spec, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"))
            continue
        models.append((spec, programs))
    return models, refused


# --------------------------------------------------------------------------- ground truth


def _is(node: torch.fx.Node, name: str) -> bool:
    return node.op == "call_function" and name in str(node.target)


def _spec_device(node: torch.fx.Node) -> tuple[str, int]:
    spec = node.meta["spec"]
    return (spec.device.name, int(spec.device_index or 0))


@dataclass(frozen=True)
class CopyCounts:
    """What ExecuTorch's final graph holds, read from its TensorSpecs (node names)."""

    h2d: tuple[str, ...]  # et_copy._h2d_copy nodes
    d2h: tuple[str, ...]  # et_copy._d2h_copy nodes
    same_device_pairs: tuple[tuple[str, str], ...]  # (d2h, h2d) of h2d(d2h(x)), x on the H2D's device
    cross_device_pairs: tuple[tuple[str, str], ...]  # (d2h, h2d) of h2d(d2h(x)), x on another device
    dead_d2h: tuple[str, ...]  # d2h nodes with no users (so not an output either)


def copy_counts(program: Any) -> CopyCounts:
    """The copies in the top-level graph of a lowered program (ExecutorchProgramManager, or
    an EdgeProgramManager that has copies)."""
    graph = program.exported_program().graph_module.graph
    nodes = list(graph.nodes)
    h2ds = [n for n in nodes if _is(n, "_h2d_copy")]
    d2hs = [n for n in nodes if _is(n, "_d2h_copy")]
    same: list[tuple[str, str]] = []
    cross: list[tuple[str, str]] = []
    for h2d in h2ds:
        src = h2d.args[0] if h2d.args else h2d.kwargs.get("self")
        if not (isinstance(src, torch.fx.Node) and _is(src, "_d2h_copy")):
            continue
        x = src.args[0]
        (same if _spec_device(x) == _spec_device(h2d) else cross).append((src.name, h2d.name))
    dead = tuple(n.name for n in d2hs if not n.users)
    return CopyCounts(tuple(n.name for n in h2ds), tuple(n.name for n in d2hs), tuple(same), tuple(cross), dead)
