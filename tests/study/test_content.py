"""Channels travel to workers by content hash: a worker computes a combination whose files it has
never seen on its own filesystem, asking for their bytes once, and rejects a damaged copy."""

from __future__ import annotations

import shutil

import pytest

from eqtune.resources import channels_dir
from eqtune.study import content
from eqtune.study.compute import simulate
from eqtune.study.runner import StudyTask, run_one
from eqtune.study.spec import parse_spec
from eqtune.study.store import comparable


@pytest.fixture
def own_content_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EQTUNE_STUDY_CONTENT", str(tmp_path / "worker-content"))
    monkeypatch.setattr(content, "_VERIFIED", set())
    monkeypatch.setattr(content, "_CHANNELS", {})
    return tmp_path / "worker-content"


def test_a_worker_needs_only_the_content_not_the_path(tmp_path, own_content_dir):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(channels_dir() / "c2m-10in-xtalk.toml", site / "board.toml")
    for f in ("osfp-connector.s4p", "c2m-10in-fext1.s4p", "c2m-10in-fext2.s4p", "c2m-10in-next1.s4p"):
        shutil.copy(channels_dir() / f, site / f)
    spec = parse_spec({"channels": [{"base": str(site / "board.toml"), "sweep": {"length_in": [6]}}],
                       "tune": {"knobs": ["rx_amp"]}, "study": {"ber_floor": [1e-12]}}, base_dir=tmp_path)
    (combo,) = spec.combinations
    expected = run_one(simulate, combo)  # from the files, where they are
    assert expected["status"] == "ok", expected["error"]

    packer = content.ContentPacker()
    item = packer.item(combo)
    assert len(item.channel.files) == 4 and item.channel.definition is not None
    site.rename(tmp_path / "gone")  # the worker cannot read the coordinator's paths
    task = StudyTask(simulate, prepare=False)
    asked = task(item)
    assert sorted(asked[content.NEED_CONTENT]) == sorted(f.digest for _r, f in item.channel.files)
    row = task(item.with_payload(packer.payload(asked[content.NEED_CONTENT])))
    assert row["status"] == "ok", row["error"]
    assert comparable([row]) == comparable([expected])  # the same figures, from the content
    again = task(item)  # the content is on this host now: no second request
    assert content.NEED_CONTENT not in again and comparable([again]) == comparable([expected])

    # a damaged copy on the worker is not used: it asks for the file again
    victim = next(own_content_dir.glob("*/osfp-connector.s4p"))
    victim.write_bytes(victim.read_bytes()[:-10] + b"0000000000")
    content._VERIFIED.clear()
    assert task(item)[content.NEED_CONTENT] == [item.channel.files[[r for r, _f in item.channel.files].index(
        "osfp-connector.s4p")][1].digest]


def test_bytes_that_do_not_match_their_digest_are_refused(tmp_path, own_content_dir):
    from eqtune.errors import ConfigError

    (tmp_path / "a.s4p").write_bytes(b"! not really touchstone\n")
    ref = content.ContentPacker().file(tmp_path / "a.s4p")
    with pytest.raises(ConfigError, match="do not match their digest"):
        content._write(ref, b"other bytes")
    assert not (own_content_dir / ref.digest / "a.s4p").exists()


def test_a_chunk_asks_once_for_the_files_of_all_its_combinations(tmp_path, own_content_dir):
    from eqtune.study.runner import TaskChunk
    from eqtune.study.synthetic import synthetic

    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(channels_dir() / "c2m-10in-xtalk.toml", site / "board.toml")
    for f in ("osfp-connector.s4p", "c2m-10in-fext1.s4p", "c2m-10in-fext2.s4p", "c2m-10in-next1.s4p"):
        shutil.copy(channels_dir() / f, site / f)
    spec = parse_spec({"channels": [{"base": str(site / "board.toml"), "sweep": {"length_in": [4, 6, 8]}},
                                    {"library": "c2m-4in"}], "tune": {"knobs": ["rx_amp"]}}, base_dir=tmp_path)
    packer = content.ContentPacker()
    chunk = TaskChunk(tuple(packer.item(c) for c in spec.combinations))
    expected = [run_one(synthetic, c) for c in spec.combinations]
    site.rename(tmp_path / "gone")
    task = StudyTask(synthetic, prepare=False)
    asked = task(chunk)
    want = sorted({f.digest for it in chunk.items for _r, f in it.channel.files})
    assert isinstance(asked, dict) and asked[content.NEED_CONTENT] == want  # each file once
    rows = task(chunk.with_payload(packer.payload(asked[content.NEED_CONTENT])))
    assert [r["id"] for r in rows] == [c.id for c in spec.combinations]
    assert comparable(rows) == comparable(expected)
    assert comparable(task(chunk)) == comparable(expected)  # on this host now: computed at once
