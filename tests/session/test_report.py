"""The customer report: one self-contained HTML file per session."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from eqtune.cli import main


def test_demo_report_is_self_contained_with_margins_convergence_and_model_eye(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["demo", "--sessions", str(tmp_path), "--budget", "8", "--quiet"])
    assert res.exit_code == 0, res.output
    (session,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    html = (session / "report.html").read_text()
    assert session.name in html
    # self-contained: no external scripts, stylesheets or images
    assert not re.search(r"""(src|href)=["']https?://""", html)
    assert "<link " not in html and "<script src" not in html
    images = re.findall(r"data:image/png;base64,", html)
    assert len(images) >= 3, "margins, convergence and model-eye plots expected"
    assert "Model eye at the target BER" in html
    assert "keep" in html or "restore" in html  # the per-lane decision is stated


def test_report_of_an_unknown_session_is_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["session", "report", "no-such-session", "--sessions", str(tmp_path)])
    assert res.exit_code == 2
    assert "no-such-session" in res.output and "Traceback" not in res.output
