"""Baselines (`--baseline FILE`): what a hand-edited or merged file means. Findings come
from a real check of a synthetic `.pte` (no torch), matched by `xferlint.baseline`."""

from __future__ import annotations

import json

import pytest

from xferlint import baseline
from xferlint.errors import UsageError
from xferlint.pipeline import check_paths
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    path = tmp_path_factory.mktemp("baseline") / "ladder.pte"
    path.write_bytes(synthetic_pte.ladder(3))
    run = check_paths([str(path)], select_rules())
    return [f for f in run.findings if f.code == "XF001"], str(path.parent)


def _write(tmp_path, entries) -> str:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"version": baseline.VERSION, "entries": entries}))
    return str(path)


@pytest.mark.parametrize("count", [0, -5, 2.7, True, "3", None])
def test_a_count_that_is_no_whole_number_of_at_least_one_is_one_error(tmp_path, findings, count):
    found, root = findings
    row = baseline.entries_of(found[:1], root)[0]
    path = _write(tmp_path, [{"fingerprint": row.fingerprint, "code": row.code, "input": row.input, "count": count}])
    with pytest.raises(UsageError) as raised:
        baseline.read(path)
    assert str(raised.value) == (f"{path}: entry 0 has count {json.dumps(count)}; a count is a whole number of "
                                 "at least 1")


def test_one_fingerprint_listed_twice_accepts_both_counts(tmp_path, findings):
    """Two baselines merged by hand list one fingerprint twice: both counts are accepted,
    credited to the entries in order, and pruning keeps exactly what was used."""
    found, root = findings
    same = [found[0]] * 3  # three findings of one fingerprint (one expression flagged thrice)
    row = baseline.entries_of(same[:1], root)[0]
    entry = {"fingerprint": row.fingerprint, "code": row.code, "input": row.input}
    entries = baseline.read(_write(tmp_path, [{**entry, "count": 1}, {**entry, "count": len(same)}]))
    matched = baseline.apply(same, entries, root)
    assert len(matched.baselined) == len(same) and matched.new == []
    assert [e.count for e in matched.kept] == [1, len(same) - 1]
    assert matched.stale == [entries[1]]  # one finding's worth of it is left over
    exact = baseline.read(_write(tmp_path, [{**entry, "count": 1}, {**entry, "count": len(same) - 1}]))
    again = baseline.apply(same, exact, root)
    assert again.new == [] and again.stale == [] and sum(e.count for e in again.kept) == len(same)
