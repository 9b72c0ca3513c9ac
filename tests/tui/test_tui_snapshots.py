"""Snapshot tests of the main screens at 80x24 (pytest-textual-snapshot; SVGs in __snapshots__/).

Regenerate after an intended change with ``pytest tests/tui --snapshot-update`` and review the SVGs.
Only screens whose content is deterministic are snapshotted (no session ids or times on them).
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_textual_snapshot", reason="pytest-textual-snapshot is in the [test] extra")

from eqtune.tui.app import EqtuneApp  # noqa: E402


@pytest.mark.parametrize("keys", [(), ("2", "e"), ("3",), ("5",)], ids=["session", "devices", "link", "tune"])
def test_screen_snapshot(snap_compare, tmp_path, keys) -> None:
    assert snap_compare(EqtuneApp(str(tmp_path / "sessions")), press=keys, terminal_size=(80, 24))
