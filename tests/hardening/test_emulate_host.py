"""`eqtune emulate --host 0.0.0.0` warns that the bridge takes unauthenticated register
writes; the loopback default does not."""

from __future__ import annotations

import warnings

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.emulate.bridge import NetBridgeServer, is_loopback


def test_is_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.168.1.10")


@pytest.mark.parametrize(("host", "warned"), [("127.0.0.1", False), ("0.0.0.0", True)])
def test_emulate_warns_on_non_loopback(host, warned):
    r = CliRunner().invoke(main, ["emulate", "--host", host, "--port", "0", "--module-port", "0",
                                  "--duration", "0.1", "--instrument", "keysight-m8040a"])
    assert r.exit_code == 0, r.output
    assert ("not a loopback address" in r.stderr and "unauthenticated" in r.stderr) == warned, r.stderr


def test_bridge_api_warns():
    from eqtune.emulate.module import EmulatedModule

    mod = EmulatedModule(channel="c2m-10in", settle_s=0.0, name="bridge-warn")
    with pytest.warns(UserWarning, match="unauthenticated"):
        NetBridgeServer(mod, "0.0.0.0", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NetBridgeServer(mod, "127.0.0.1", 0)
