"""Fuzz every file type eqtune reads: Touchstone, channel TOML, SerDes profile, study spec,
fleet CSV, tuning profile, session journal, driver definition. Each input is a mutation of a valid
file (nasty numbers, flipped/inserted/deleted bytes, non-UTF-8, truncation, type-confused JSON), run
at a fixed seed; each must be accepted or refused with a one-line EqtuneError (the CLI's exit 2), never
a traceback or a hang. 2,020 inputs here (1,650 through the loaders, whose EqtuneError is what the CLI
prints as one line with exit 2; 370 through the CLI itself), 400 more in test_fuzz_cli.py."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from eqtune.cli import main
from eqtune.resources import channels_dir, serdes_profiles_dir
from tests.fuzz.fuzzlib import cli_contract, fuzz, meets_contract, mutated_bytes, mutated_json, time_limit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_counter = itertools.count()


def _fresh(tmp: Path, name: str, data: bytes) -> Path:
    """A new file per input (loaders cache by path)."""
    d = tmp / f"i{next(_counter)}"
    d.mkdir()
    p = d / name
    p.write_bytes(data)
    return p


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _s2p_seed() -> bytes:
    lines = ["! small 2-port channel", "# GHz S RI R 50"]
    for f in np.linspace(0.01, 60.0, 12):
        a = 10 ** (-f / 40)
        lines.append(f"{f:.4f} 0.05 0.01 {a:.4f} -0.1 {a:.4f} -0.1 0.05 0.01")
    return ("\n".join(lines) + "\n").encode()


S2P = _s2p_seed()


@fuzz(250)
@given(data=mutated_bytes(S2P))
def test_touchstone(work, data):
    from eqtune.channel.library import load_channel

    p = _fresh(work, "ch.s2p", data)
    meets_contract(lambda: load_channel(p))


CHANNEL_TOML = (channels_dir() / "c2m-4in.toml").read_bytes()


@pytest.fixture(scope="module")
def channel_dir(work) -> Path:
    d = work / "channel-files"
    d.mkdir()
    for f in channels_dir().glob("*.s4p"):
        shutil.copy(f, d / f.name)
    return d


@fuzz(200)
@given(data=mutated_bytes(CHANNEL_TOML))
def test_channel_toml(channel_dir, data):
    from eqtune.channel.library import load_channel

    p = channel_dir / f"c{next(_counter)}.toml"
    p.write_bytes(data)
    meets_contract(lambda: load_channel(p))


SERDES = (serdes_profiles_dir() / "host-lr-112g.toml").read_bytes()


@fuzz(250)
@given(data=mutated_bytes(SERDES))
def test_serdes_profile(work, data):
    from eqtune.serdes.profile import load_profile

    p = _fresh(work, "serdes.toml", data)
    meets_contract(lambda: load_profile(str(p)))


STUDY = (channels_dir() / "studies" / "example.toml").read_bytes()
FLEET_CSV = (channels_dir() / "studies" / "fleet-example.csv").read_bytes()


@fuzz(200)
@given(data=mutated_bytes(STUDY))
def test_study_spec(work, data):
    from eqtune.study.spec import load_spec

    d = work / f"s{next(_counter)}"
    d.mkdir()
    (d / "fleet-example.csv").write_bytes(FLEET_CSV)
    p = d / "example.toml"
    p.write_bytes(data)
    meets_contract(lambda: load_spec(p))


@fuzz(200)
@given(data=mutated_bytes(FLEET_CSV))
def test_fleet_csv(work, data):
    from eqtune.study.fleet import parse_fleet_table

    p = _fresh(work, "fleet.csv", data)
    meets_contract(lambda: parse_fleet_table({"csv": p.name}, base_dir=p.parent))


DRIVER = (Path(__file__).resolve().parents[2] / "drivers" / "generic_scpi_bert.toml").read_bytes()


@fuzz(200)
@given(data=mutated_bytes(DRIVER))
def test_driver_definition(work, data):
    from eqtune.drivers.definition import load_definition

    p = _fresh(work, "drv.toml", data)
    meets_contract(lambda: load_definition(p))


# -- tuning profiles ----------------------------------------------------------------------------
def _profile_doc() -> dict:
    from eqtune.session.profile import Profile

    ident = {"vendor": "ACME", "pn": "OSFP-800G-DR8", "sn": "SN123", "rev": "A1", "firmware": "5.2"}
    prof = Profile.from_identity(ident, {1: {"rx_pre": 1, "rx_post": 3, "rx_amp": 2}, 2: {"tx_eq": 4}})
    return json.loads(prof.dumps())


PROFILE_DOC = _profile_doc()
PROFILE_BYTES = json.dumps(PROFILE_DOC, indent=2).encode()


@fuzz(150)
@given(data=mutated_bytes(PROFILE_BYTES))
def test_profile_bytes_cli(work, data):
    p = _fresh(work, "p.json", data)
    with time_limit():
        cli_contract(CliRunner().invoke(main, ["profile", "show", str(p)]))


@fuzz(150)
@given(doc=mutated_json(PROFILE_DOC))
def test_profile_type_confused_with_valid_digest(doc):
    """Past the digest: the document re-digested after the edit, so the schema checks must hold."""
    from eqtune.session.profile import Profile, content_digest, render

    def load():
        if isinstance(doc.get("digest"), dict):
            doc["digest"]["value"] = content_digest(doc)
        text = render(doc)
        Profile.loads(text).summary()

    meets_contract(load)


# -- session journals ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def journal_seed(tmp_path_factory) -> list[dict]:
    """A real, finished live session on the emulated module (every record type a session writes)."""
    from eqtune.session.journal import read_journal
    from eqtune.session.live import LiveConfig, LiveTuner

    d = tmp_path_factory.mktemp("seed-sessions")
    res = "emu:c2m-10in?seed=7&settle_ms=0&fast=1&name=fuzz-seed"
    tuner = LiveTuner.create(LiveConfig(module=res, lanes=[1, 2], dwell_s=0.01, budget=4, seed=1),
                             sessions_dir=d, session_id="seed")
    tuner.run()
    return read_journal(d / "seed" / "journal.jsonl").records


def _write_journal(root: Path, records: list, *, seal: bool = True) -> str:
    from eqtune.session.journal import seal as seal_line

    sid = f"j{next(_counter)}"
    (root / sid).mkdir(parents=True)
    lines = []
    for r in records:
        body = json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()
        lines.append(seal_line(body) if seal and body.startswith(b"{") else body)
    (root / sid / "journal.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return sid


@fuzz(200)
@given(data=st.data())
def test_journal_type_confused_records(work, journal_seed, data):
    """Records with type-confused fields, re-sealed so the checksum passes: show, report and the
    resume checks must refuse them in one line (or cope), never raise anything else."""
    import eqtune.session.report as report
    from eqtune.session.live import load_session

    recs = data.draw(mutated_json(journal_seed))
    draw_plots = data.draw(st.integers(0, 9)) == 0  # matplotlib costs ~0.3 s: every 10th input
    root = work / "journals"
    sid = _write_journal(root, recs)

    def use():
        view = load_session(sid, root)
        view.lane_results()
        view.config.check()
        report.render_report(view, session_id=sid)

    plots = report._plots
    if not draw_plots:
        report._plots = lambda view, lanes: []
    try:
        meets_contract(use)
    finally:
        report._plots = plots


@fuzz(100)
@given(data=st.data())
def test_journal_bytes_cli(work, journal_seed, data):
    root = work / "journals-cli"
    seed = b"\n".join(json.dumps(r, separators=(",", ":")).encode() for r in journal_seed) + b"\n"
    raw = data.draw(mutated_bytes(seed))
    sid = f"b{next(_counter)}"
    (root / sid).mkdir(parents=True)
    (root / sid / "journal.jsonl").write_bytes(raw)
    with time_limit():
        cli_contract(CliRunner().invoke(main, ["session", "show", sid, "--sessions", str(root)]))


@fuzz(60)
@given(data=mutated_bytes(S2P))
def test_touchstone_cli(work, data):
    """The same mutations through `eqtune channel show` (exit 0, or exit 2 with one line)."""
    p = _fresh(work, "cli.s2p", data)
    with time_limit():
        cli_contract(CliRunner().invoke(main, ["channel", "show", str(p), "--json"]))


@fuzz(60)
@given(data=mutated_bytes(CHANNEL_TOML))
def test_channel_toml_cli(channel_dir, data):
    p = channel_dir / f"cli{next(_counter)}.toml"
    p.write_bytes(data)
    with time_limit():
        cli_contract(CliRunner().invoke(main, ["channel", "show", str(p), "--json", "--no-aggressors"]))
