"""One pane per step of the on-site wizard, in order."""

from eqtune.tui.steps.baseline import BaselinePane
from eqtune.tui.steps.devices import DevicesPane
from eqtune.tui.steps.link import LinkPane
from eqtune.tui.steps.report import ReportPane
from eqtune.tui.steps.save import SavePane
from eqtune.tui.steps.session import SessionPane
from eqtune.tui.steps.tune import TunePane
from eqtune.tui.steps.verify import VerifyPane

PANES = (SessionPane, DevicesPane, LinkPane, BaselinePane, TunePane, VerifyPane, SavePane, ReportPane)

__all__ = ["PANES", "BaselinePane", "DevicesPane", "LinkPane", "ReportPane", "SavePane", "SessionPane",
           "TunePane", "VerifyPane"]
