"""The HTML report: parsed with html.parser (every finding listed and linked to the
timeline, one lane per device, every copy with its bytes between its lanes, no external
URL), deterministic, and rendered in headless Chromium with no console message."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from xferlint.cli import main

SAMPLES = ["sample_models/host_op_splits_partition.py", "sample_models/redundant_round_trip.py",
           "sample_models/cross_device_staging.py"]


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def by_id(self) -> dict:
        return {a["id"]: (t, a) for t, a in self.elements if "id" in a}

    def find(self, cls: str) -> list[dict]:
        return [a for _, a in self.elements if cls in (a.get("class") or "").split()]


@pytest.fixture(scope="session")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    main(["check", *SAMPLES, "--isolated", "--format", "json", "-o", str(out / "r.json")])
    main(["check", *SAMPLES, "--isolated", "--format", "html", "-o", str(out / "r.html")])
    return json.loads((out / "r.json").read_text()), (out / "r.html").read_text(), out / "r.html"


def test_every_finding_listed_and_linked(reports):
    data, text, _ = reports
    page = Page()
    page.feed(text)
    ids = page.by_id()
    items = page.find("finding")
    assert len(items) == len(data["findings"]) > 0
    for item, finding in zip(items, data["findings"]):
        assert item["data-code"] == finding["code"]
        link = next(a for _, a in page.elements if a.get("class") == "tl-link" and a.get("data-finding") == item["id"])
        column = ids[link["href"][1:]][1]
        assert item["id"] in column["data-findings"].split()
        assert any(a.get("href") == f"#{item['id']}" for a in page.find("marker"))
        assert f"{finding['location']['line']:>5} | " in text


def test_lanes_per_device_and_copies_with_bytes(reports):
    data, text, _ = reports
    page = Page()
    page.feed(text)
    lanes = {a["data-device"] for a in page.find("lane")}
    assert {"cpu", "cuda:0", "cuda:1"} <= lanes
    copies = page.find("copy")
    pairs = {(p["source"], p["target"]): p["bytes"] for p in data["summary"]["transfers"]["pairs"]}
    drawn: dict = {}
    for c in copies:
        key = (c["data-source"], c["data-target"])
        drawn[key] = drawn.get(key, 0) + int(c["data-bytes"])
    assert drawn == pairs
    assert len(copies) == sum(p["copies"] for p in data["summary"]["transfers"]["pairs"])


def test_each_rules_help_is_on_the_page_once_and_each_finding_opens_it(reports):
    """A finding's help names its rule and leads to the rule's sections, which the page holds
    once per rule (thousands of findings of one rule once carried thousands of copies)."""
    data, text, _ = reports
    page = Page()
    page.feed(text)
    ids = page.by_id()
    codes = {f["code"] for f in data["findings"]}
    helps = [a for t, a in page.elements if t == "details" and a.get("class") == "help"]
    assert [h["data-rule"] for h in helps] == [f["code"] for f in data["findings"]]
    links = {a["href"] for t, a in page.elements if t == "a" and a.get("href", "").startswith("#rule-")}
    assert links == {f"#rule-{code}" for code in codes}
    for code in codes:
        assert f"rule-{code}" in ids
        assert text.count(f'id="rule-{code}"') == 1
        assert text.count("<h4>What it does</h4>") == len(codes)  # the sections once per rule


def test_no_external_url_and_deterministic(reports, tmp_path):
    _, text, _ = reports
    assert not re.search(r"[a-z]+://", text, re.I)
    main(["check", *SAMPLES, "--isolated", "--format", "html", "-o", str(tmp_path / "again.html")])
    assert (tmp_path / "again.html").read_text() == text


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (.ci/run installs it)")
def test_renders_in_headless_chromium_without_console_messages(reports, tmp_path):
    _, _, path = reports
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert 'data-ready="1"' in done.stdout
    assert done.stdout.count('class="finding ') == len(reports[0]["findings"])


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (.ci/run installs it)")
def test_opening_a_findings_help_in_chromium_shows_the_rules_sections(reports, tmp_path):
    """The page's script copies a rule's sections into a finding's help when it is opened."""
    _, text, _ = reports
    probe = ("<script>setTimeout(function(){var d=document.querySelector('details.help');d.open=true;"
             "setTimeout(function(){document.body.setAttribute('data-probe',d.getAttribute('data-rule')+':'+"
             "d.querySelectorAll('h4').length);},200);},100);</script></body>")
    page = tmp_path / "probe.html"
    page.write_text(text.replace("</body>", probe))
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    code, shown = re.search(r'data-probe="([A-Z0-9]+):(\d+)"', done.stdout).groups()
    assert code == reports[0]["findings"][0]["code"] and int(shown) >= 3  # What it does, Why..., Use instead


def test_a_thousand_node_program_collapses_to_a_few_columns():
    from xferlint.analyzer.timeline import MethodTimeline, TimelineCopy, TimelineNode
    from xferlint.reporters.html_timeline import Mark, columns, render

    nodes, copies = [], []
    for i in range(1000):
        copy = i % 250 == 125
        device = "cuda:0" if (i // 250) % 2 else "cpu"
        nodes.append(TimelineNode(index=i, name=f"n{i}", kind="h2d" if copy else "compute",
                                  target="et_copy._h2d_copy.out" if copy else "aten.add.out", device=device))
        if copy:
            copies.append(TimelineCopy(index=i, node=f"n{i}", direction="h2d", source="cpu", target="cuda:0",
                                       nbytes=4096))
    timeline = MethodTimeline("big.py", "program", "forward", "graph", tuple(nodes), tuple(copies))
    cols = columns(timeline, frozenset({"n500"}))
    assert len(cols) <= 16
    assert sum(len(c.ops) for c in cols) == 1000
    svg, anchors = render(timeline, "m0", [Mark("f-1", 1, "warning", ("n500",), ())])
    assert anchors["f-1"] in svg and svg.count('data-bytes="4096"') == 4


def test_a_delegate_with_thousands_of_results_folds_its_getitems_in_linear_work(monkeypatch):
    # each getitem after a delegate once rebuilt the delegate's column with its members
    # tuple one longer: n getitems copied n**2 / 2 names
    from xferlint.analyzer.timeline import MethodTimeline, TimelineNode
    from xferlint.reporters import html_timeline

    built = []
    column = html_timeline.Column
    monkeypatch.setattr(html_timeline, "Column", lambda *fields: built.append(len(fields[3])) or column(*fields))

    def names_copied(results: int) -> int:
        nodes = [TimelineNode(index=0, name="call", kind="delegate", target="executorch_call_delegate",
                              device="cuda:0")]
        nodes += [TimelineNode(index=k + 1, name=f"getitem_{k}", kind="getitem", target="getitem",
                               device="cuda:0") for k in range(results)]
        built.clear()
        cols = html_timeline.columns(MethodTimeline("wide.py", "program", "forward", "graph", tuple(nodes), ()),
                                     frozenset())
        assert [c.members for c in cols] == [("call", *(f"getitem_{k}" for k in range(results)))]
        return sum(built)

    assert names_copied(2_000) / 2_000 < 1.25 * names_copied(200) / 200


def test_thousands_of_findings_find_their_columns_in_linear_work():
    # render once looked through every column for each finding (its anchor, its marks)
    from xferlint.analyzer.timeline import MethodTimeline, TimelineCopy, TimelineNode
    from xferlint.reporters.html_timeline import Mark, render
    from xferlint.testing.work import lines_run

    def lines(blocks: int) -> int:
        nodes, copies, marks = [], [], []
        for b in range(blocks):  # delegate on cuda:0, its result copied to the host, a host op
            i = 3 * b
            nodes += [TimelineNode(index=i, name=f"call_{b}", kind="delegate", target="executorch_call_delegate",
                                   device="cuda:0"),
                      TimelineNode(index=i + 1, name=f"d2h_{b}", kind="d2h", target="et_copy._d2h_copy.out",
                                   device="cpu"),
                      TimelineNode(index=i + 2, name=f"cos_{b}", kind="compute", target="aten.cos.out", device="cpu")]
            copies.append(TimelineCopy(index=i + 1, node=f"d2h_{b}", direction="d2h", source="cuda:0", target="cpu",
                                       nbytes=256))
            marks.append(Mark(f"f-{b}", b + 1, "warning", (f"call_{b}", f"cos_{b}"), (f"d2h_{b}",)))
        timeline = MethodTimeline("wide.py", "program", "forward", "graph", tuple(nodes), tuple(copies))
        anchors: dict[str, str] = {}
        count = lines_run(lambda: anchors.update(render(timeline, "m0", marks)[1]))
        assert len(anchors) == blocks and anchors["f-0"] == "m0-c1"  # each finding at its copy's column
        return count

    assert lines(1_000) / 1_000 < 1.25 * lines(100) / 100
