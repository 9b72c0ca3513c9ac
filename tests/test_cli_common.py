"""The CLI's JSON output is strict JSON: numpy values converted, NaN/inf become null."""

from __future__ import annotations

import json

import numpy as np

from eqtune.cli._common import echo_json


def test_echo_json_is_strict(capsys) -> None:
    echo_json({"a": float("nan"), "b": np.float64(np.inf), "c": np.arange(3), "d": (1, 2), "e": 1.5})
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out
    assert json.loads(out) == {"a": None, "b": None, "c": [0, 1, 2], "d": [1, 2], "e": 1.5}


def test_help_lists_every_command_without_importing_numpy() -> None:
    import subprocess
    import sys

    code = ("import sys; from eqtune.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('NUMPY' if 'numpy' in sys.modules else 'LIGHT')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("LIGHT")
    for name in ("channel", "eye", "tune", "drivers", "module", "measure", "emulate", "session", "profile",
                 "study", "tui", "demo"):
        assert name in out
