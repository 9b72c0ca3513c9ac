"""The disk fills in the middle of a live tune. The journal can no longer be written,
yet the original codes (and Tx input adaptive EQ, the restore point of a shipped module) must go back
onto the module, and the message must say that the journal could not record it.

The "disk" is a journal writer that fails with ENOSPC, as ``os.write`` does on a full file system."""

from __future__ import annotations

import errno
import os

import pytest

from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.errors import SessionError
from eqtune.session.journal import read_journal
from eqtune.session.live import LiveConfig, LiveTuner


def _full_disk_after(tuner: LiveTuner, evaluations: int):
    """An on_event hook: after ``evaluations`` evaluations every journal write fails with ENOSPC
    (a partial write first, as a file system that fills mid-record does)."""
    seen = {"n": 0}

    def full(fd: int, data) -> int:
        if len(data) > 4 and not seen.get("partial"):
            seen["partial"] = True
            return os.write(fd, bytes(data[:4]))  # a torn start of the record ...
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # ... then the disk is full

    def hook(ev) -> None:
        if ev.kind == "evaluation":
            seen["n"] += 1
            if seen["n"] == evaluations:
                tuner.journal._writer = full

    return hook


@pytest.mark.parametrize("adaptive", [0, 1])
def test_disk_full_mid_tune_restores_originals(tmp_path, adaptive):
    res = f"emu:c2m-10in?seed=41&settle_ms=0&fast=1&name=t-diskfull-{adaptive}&adaptive={adaptive}"
    emu = emulator_for(parse_resource(res))
    before = {ln: emu.link.active_codes(ln) for ln in (1, 2)}
    adaptive_before = {ln: emu.link.tx_adaptive(ln) for ln in (1, 2)}
    cfg = LiveConfig(module=res, lanes=[1, 2], dwell_s=0.01, budget=12, seed=5)
    events: list = []
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path)
    hook = _full_disk_after(tuner, 3)
    tuner.on_event = lambda ev: (events.append(ev), hook(ev))
    with pytest.raises(SessionError, match="cannot write journal"):
        tuner.run()
    # the module holds its original codes (and adaptive EQ state) again
    for ln in (1, 2):
        assert emu.link.active_codes(ln) == before[ln], ln
        assert emu.link.tx_adaptive(ln) == adaptive_before[ln], ln
    text = " ".join(e.data.get("text", "") for e in events)
    assert "original codes restored" in text and "journal could not record it" in text
    # the journal on disk is still readable: the partial record was cut off, not left before others
    contents = read_journal(tmp_path / tuner.session_id / "journal.jsonl")
    assert contents.torn is None and not contents.bad_checksums
    assert any(r["type"] == "measure" for r in contents.records)
