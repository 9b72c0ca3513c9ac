"""The study report of a large study lists the worst links, not every row (those stay in the store)."""

from __future__ import annotations

from eqtune.study import load_spec, run_study
from eqtune.study.synthetic import synthetic


def test_the_ranked_table_holds_the_worst_table_max_links(synth_spec_path, tmp_path, monkeypatch):
    import eqtune.study.report as report

    spec = load_spec(synth_spec_path)
    monkeypatch.setattr(report, "TABLE_MAX", 5)
    res = run_study(spec, tmp_path / "big", compute=synthetic)
    page = res.report.read_text(encoding="utf-8")
    assert "The 5 worst of 24 links" in page and "All links, worst first" not in page
    assert "eqtune study query OUT --worst 50 --corner 85C" in page
    table = page.split("The 5 worst of 24 links", 1)[1].split("</table>", 1)[0]
    assert table.count("<tr") == 1 + 5  # the header and five links
    worst = sorted(float(r["robust_margin"]) for r in res.rows)[:5]
    assert f"{worst[0]:.2f}" in table and f"{worst[4]:.2f}" in table

    monkeypatch.setattr(report, "TABLE_MAX", 2000)
    small = run_study(spec, tmp_path / "small", compute=synthetic).report.read_text(encoding="utf-8")
    assert "All links, worst first" in small and "eqtune study query OUT" not in small
