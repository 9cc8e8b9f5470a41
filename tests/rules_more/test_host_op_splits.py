"""XF005 host-op-splits-partition on real lowered programs, and against an oracle that reads
random models' specs (which op runs where), never xferlint's view."""

from __future__ import annotations

import pytest

from xferlint.api import lint, lint_report

XF005 = ["XF005"]


def _xf005(program):
    return lint(program, select=XF005)


def test_a_host_op_between_two_delegates_is_one_split(program):
    [finding] = _xf005(program("split"))
    # the path, in order: producer, D2H, the host op, H2D, the consumer delegate
    roles = [s.role for s in finding.steps]
    assert roles == ["producer", "d2h", "host-op", "h2d", "consumer"]
    host = finding.steps[2]
    assert host.target.startswith("aten.cumsum") and host.device == "cpu"
    assert finding.steps[1].target.startswith("et_copy._d2h_copy")
    assert finding.steps[3].target.startswith("et_copy._h2d_copy") and finding.steps[3].device == "cuda:0"
    # 8x8 float32 leaves and comes back: 256 B each way
    assert finding.bytes == 512
    assert "`aten.cumsum`" in finding.detail
    assert "256 B to host and 256 B back" in finding.detail
    assert "cuda:0" in finding.message and "move the op off the hot path" in finding.detail
    assert finding.message.endswith("host op aten.cumsum splits a cuda:0 partition: 512 B per call")
    assert finding.severity.value == "warning" and not finding.fixable


def test_the_finding_points_at_the_host_op_line(repo_root):
    """A sample carries source lines: the finding is located at the host op itself, and
    the message quotes the lines of the host op and of the delegates on either side."""
    import os

    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    sample = os.path.join(repo_root, "sample_models", "host_op_splits_partition.py")
    run = check_paths([sample], select_rules(select=XF005))
    [finding] = run.findings
    loc = finding.location
    assert loc is not None and loc.code.startswith("h = torch.cumsum(h, dim=0)")
    assert f"line {loc.line}: `h = torch.cumsum(h, dim=0)" in finding.detail
    assert f"line {loc.line - 1}: `h = torch.mm(x, self.weight)" in finding.detail  # the delegate before
    assert f"line {loc.line + 1}: `return torch.sin(h)" in finding.detail  # the delegate after


def test_values_that_come_from_method_inputs_are_not_a_split(program):
    assert _xf005(program("host-first")) == []


def test_a_value_that_goes_on_to_another_device_is_not_a_split(program):
    report = lint_report(program("split-two-devices"))
    assert report.summary.by_code.get("XF005") is None


def test_other_device_indices_split_too(program):
    [finding] = _xf005(program("split-cuda1"))
    assert "cuda:1" in finding.message and finding.steps[3].device == "cuda:1"


def test_a_direct_round_trip_is_xf001_not_xf005(program):
    report = lint_report(program("round-trip"))
    assert report.summary.by_code == {"XF001": 1}


def test_fan_in_is_one_segment_with_both_d2hs(program):
    [finding] = _xf005(program("fan-in"))
    d2hs = [s for s in finding.steps if s.role == "d2h"]
    assert len(d2hs) == 2
    assert [s.target.split(".")[1] for s in finding.steps if s.role == "host-op"] == ["mul"]
    assert "2 D2H, 1 H2D" in finding.detail
    assert finding.bytes == 3 * 64


def test_fan_out_is_one_segment_with_both_h2ds(program):
    [finding] = _xf005(program("fan-out"))
    assert len([s for s in finding.steps if s.role == "h2d"]) == 2
    assert len([s for s in finding.steps if s.role == "consumer"]) == 2
    assert "1 D2H, 2 H2D" in finding.detail


def test_two_host_paths_from_one_d2h_are_two_findings(program):
    findings = _xf005(program("two-paths"))
    ops = sorted(s.target.split(".")[1] for f in findings for s in f.steps if s.role == "host-op")
    assert ops == ["cos", "relu"]
    assert len(findings) == 2


def test_a_chain_of_host_ops_is_one_segment_naming_each_op(program):
    [finding] = _xf005(program("chain"))
    ops = [s.target.split(".")[1] for s in finding.steps if s.role == "host-op"]
    assert ops == ["cumsum", "cos", "relu"]
    for op in ops:
        assert f"`aten.{op}`" in finding.detail


def test_only_the_d2h_from_the_returning_device_is_part_of_the_split(program):
    """add on cuda:0 and sin on cuda:1 meet in a host mul whose result goes to cuda:0:
    a cuda:0 split (the cuda:1 value is a cross-device move, not a return)."""
    [finding] = _xf005(program("mixed-devices"))
    producers = [s for s in finding.steps if s.role == "producer"]
    assert [p.device for p in producers] == ["cuda:0"]
    assert len([s for s in finding.steps if s.role == "d2h"]) == 1


# --------------------------------------------------------------------------- random models


def expected_splits(spec) -> list[tuple[str, tuple[str, ...]]]:
    """The host segments of a random model, from its spec alone: (device, sorted host-op
    kinds) per segment. Each delegable op with a device is its own delegate; every other op
    runs on host. A segment for D: host ops on a path from a value a D op produced to an
    argument of a D op, through host ops only, grouped when one reads another."""
    from randmodels import DEVICE_OPS

    n_in = spec.num_inputs
    devices = iter(spec.devices)
    where = {}  # value index -> device or None (host); inputs are host
    for i, op in enumerate(spec.ops):
        where[n_in + i] = next(devices) if op.op in DEVICE_OPS else None
    host = {n_in + i for i, _ in enumerate(spec.ops) if where[n_in + i] is None}
    args = {n_in + i: op.args for i, op in enumerate(spec.ops)}
    readers: dict[int, list[int]] = {}
    for v, a in args.items():
        for u in a:
            readers.setdefault(u, []).append(v)
    result = []
    for device in sorted({d for d in spec.devices if d}):
        start = [r for v, d in where.items() if d == device for r in readers.get(v, []) if r in host]
        forward: set[int] = set()
        while start:
            v = start.pop()
            if v not in forward:
                forward.add(v)
                start.extend(r for r in readers.get(v, []) if r in host)
        start = [u for v, d in where.items() if d == device for u in args[v] if u in host]
        backward: set[int] = set()
        while start:
            v = start.pop()
            if v not in backward:
                backward.add(v)
                start.extend(u for u in args[v] if u in host)
        split = forward & backward
        parent = {v: v for v in split}

        def find(v):
            while parent[v] != v:
                v = parent[v]
            return v

        for v in split:
            for u in args[v]:
                if u in split:
                    parent[find(v)] = find(u)
        groups: dict[int, list[int]] = {}
        for v in split:
            groups.setdefault(find(v), []).append(v)
        for members in groups.values():
            kinds = tuple(sorted(spec.ops[v - n_in].op for v in members))
            result.append((device, kinds))
    return sorted(result)


def _found_splits(findings) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for f in findings:
        if f.code != "XF005":
            continue
        h2d = next(s for s in f.steps if s.role == "h2d")
        kinds = tuple(sorted(s.target.split(".")[1] for s in f.steps if s.role == "host-op"))
        out.append((h2d.device, kinds))
    return sorted(out)


@pytest.fixture(scope="module")
def random_programs(lowered_once):
    """Random models on one and two devices that ExecuTorch lowers (stock 1.5.1), with
    host ops between delegates biased in: more host ops, fewer host-placed delegable ops."""
    from randmodels import generate, lower_spec

    out = []
    seed = 500
    while len(out) < 8 and seed < 540:
        spec = generate(seed, min_ops=5, max_ops=9, device_weights=(1, 4, 2 if seed % 2 else 0))
        seed += 1
        try:
            built = lowered_once(f"rules_more:random:{spec.seed}", lambda spec=spec: lower_spec(spec))
        except Exception:  # noqa: BLE001 - a model ExecuTorch refuses is not one to check
            continue
        out.append((spec, built))
    assert len(out) >= 6
    return out


def test_random_models_split_exactly_where_values_return_through_host_ops(random_programs):
    total = 0
    for spec, built in random_programs:
        expected = expected_splits(spec)
        report = lint_report(built, select=["XF005", "XF007"])
        assert _found_splits(report.findings) == expected, spec.describe()
        assert "XF007" not in report.summary.by_code, spec.describe()
        total += len(expected)
    assert total > 0, "the random models should contain splits"
