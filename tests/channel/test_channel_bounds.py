"""Bounds on a channel file's lists, and memory that does not grow with the number of segments.

Before the bound, 20,000 ``[[segments]]`` took 7.7 GB before failing: every segment's block was kept
until the cascade (64 bytes per grid point each, ~0.68 MB on the default grid). Now the blocks are
cascaded as they are built and the lists are bounded (``MAX_SEGMENTS``, ``MAX_AGGRESSORS``).
"""

from __future__ import annotations

import tracemalloc

import pytest

from eqtune.channel.library import MAX_AGGRESSORS, MAX_SEGMENTS, channel_from_definition
from eqtune.errors import ConfigError

SEG = {"type": "line", "delay_ps": 5.0, "loss_db": 0.01}


def _peak_bytes(n: int) -> int:
    doc = {"segments": [dict(SEG) for _ in range(n)]}
    tracemalloc.start()
    try:
        channel_from_definition(doc)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_segment_count():
    one, many = _peak_bytes(1), _peak_bytes(48)
    block = 10_626 * 4 * 16  # one 2x2 complex block on the default 0..106 GHz grid
    # kept blocks would add 47 blocks (~32 MB); cascading as they come adds at most a few temporaries
    assert many - one < 4 * block, (one, many)


@pytest.mark.parametrize("key,n,bound", [("segments", MAX_SEGMENTS + 1, MAX_SEGMENTS),
                                         ("aggressors", MAX_AGGRESSORS + 1, MAX_AGGRESSORS)])
def test_too_many_segments_or_aggressors_is_one_line(key, n, bound):
    doc = {"segments": [dict(SEG)]}
    doc[key] = [dict(SEG) if key == "segments" else {"file": "x.s4p"} for _ in range(n)]
    with pytest.raises(ConfigError, match=str(bound)) as ei:
        channel_from_definition(doc)
    assert "\n" not in str(ei.value)
