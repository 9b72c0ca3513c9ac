"""Step 2: the module (and optional BER instrument); after connecting, the module's identity, its
advertised capabilities (CMIS page 01h) and the codes every lane holds now (Active Control Set, 11h)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Input, Label, Static

from eqtune.tui.format import fmt_codes, parse_lanes
from eqtune.tui.steps.base import Field, StepPane
from eqtune.tui.tables import PagedTable

IDENTITY_COLUMNS = ("field", "value")
CAPABILITY_COLUMNS = ("capability", "value")
LANE_COLUMNS = ("lane", "tuning", "codes now (Active Control Set)", "Tx adaptive")


def fill_table(table: DataTable[str], labels: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Replace ``table``'s columns and rows, each column as wide as its widest cell (and its label when the
    header shows). Fixed widths, not DataTable's automatic ones: those are measured on the next idle
    message, and a row drawn before it (a busy machine) stays cut at the label's width ("Vendo  EQTUN")."""
    from rich.cells import cell_len

    table.clear(columns=True)
    for i, label in enumerate(labels):
        cells = [cell_len(str(r[i])) for r in rows]
        table.add_column(label, width=max([cell_len(label) if table.show_header else 1, *cells]))
    table.add_rows(rows)


IDENTITY_FIELDS = (("vendor", "Vendor"), ("pn", "Part number"), ("sn", "Serial"), ("rev", "Revision"),
                   ("firmware", "Firmware"), ("cmis_rev", "CMIS"), ("date_code", "Date code"),
                   ("module_state", "State"), ("form_factor", "Form factor"))


def capability_rows(caps: dict[str, Any], doctor: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The page 01h advertisement as (what, value) rows an FAE reads (ranges in codes and dB); with
    ``module doctor``'s report (eqtune/drivers/cmis_doctor.py) the Apply row says which trigger eqtune
    uses and whether traffic goes down, and one row per thing eqtune cannot do on this module."""
    rows: list[tuple[str, str]] = []
    if caps.get("lanes"):
        rows.append(("Lanes", str(caps["lanes"])))
    # CMIS 5.x Rx output EQ code meaning (staged set page 10h): pre-cursor code k = 0.5*k dB (0..7 = 0..3.5 dB),
    # post-cursor code k = k dB (0..7 = 0..7 dB); table numbers not re-checked here
    if caps.get("rx_pre_max") is not None:
        rows.append(("Rx pre-cursor", f"0..{caps['rx_pre_max']} ({caps['rx_pre_max'] * 0.5:g} dB max)"))
    if caps.get("rx_post_max") is not None:
        rows.append(("Rx post-cursor", f"0..{caps['rx_post_max']} ({caps['rx_post_max']:g} dB max)"))
    if caps.get("rx_amp_codes"):
        rows.append(("Rx amplitude", ",".join(map(str, caps["rx_amp_codes"]))))
    if caps.get("tx_eq_max") is not None:
        rows.append(("Tx input EQ", f"0..{caps['tx_eq_max']}" + (", adaptive" if caps.get("tx_adaptive") else "")))
    apply = (doctor or {}).get("apply") or {}
    if apply.get("supported"):
        rows.append(("Apply", ("TRAFFIC DOWN, " if apply.get("traffic_down") else "traffic up, ")
                              + f"{apply['trigger']}{' + DPDeinit' if apply.get('deinit') else ''}"))
    elif apply:
        rows.append(("Apply", "NOT SUPPORTED: codes can be read, not written"))
    else:
        rows.append(("Apply", "immediate" if caps.get("apply_immediate") else "on DP init"
                     + (" (stepped config only)" if caps.get("stepped_config_only") else "")))
    rows.append(("BER / VDM", f"{'PRBS checker' if caps.get('diagnostics') else 'no checker'}, "
                              f"{'VDM' if caps.get('vdm') else 'no VDM'}"))
    for what in (doctor or {}).get("cannot", []):
        rows.append(("Cannot", what))
    return rows


def traffic_note(caps: dict[str, Any], doctor: dict[str, Any] | None) -> str:
    """One line above the tables (never cut by a column): whether writing codes takes traffic down."""
    apply = (doctor or {}).get("apply") or {}
    if not apply.get("traffic_down"):
        return ""
    adv = caps.get("dp_init_max_s")
    return (f"TRAFFIC GOES DOWN on every write: {apply.get('trigger')}"
            f"{' after DPDeinit' if apply.get('deinit') else ''} re-initializes the data path"
            + (f" (up to {adv:g} s advertised)" if adv is not None else "")
            + ". Tuning asks first.")


class DevicesPane(StepPane):
    STEP, TITLE = "devices", "2 Devices"
    ABOUT = ("Type the module resource and the lanes (1,2 or 1-8 or all), press Enter to connect; read the "
             "module's identity and current codes, then Continue.")
    BINDINGS = [Binding("e", "emulators", "Emulators"), Binding("c", "connect", "Connect"),
                Binding("n", "continue", "Continue")]
    KEYS = [("Enter", "in a field: connect and read the module's identity and codes"),
            ("e", "use the emulated module (training, demos)"),
            ("c", "connect (outside a field)"),
            ("n / Enter on Continue", "go to step 3 once you have read the identity")]

    def compose(self) -> ComposeResult:
        for wid, label, value, example in (
                ("module-res", "Module", "", "e.g. i2c:1@0x50  optoe:/sys/...  net:host:port  emu:c2m-10in"),
                ("lanes", "Lanes", "1", "e.g. 1  1,2  1-8  all"),
                ("instrument-res", "Measure with", "", "empty: module's own BER; or TCPIP::host::port::SOCKET")):
            with Horizontal(classes="row"):
                yield Label(label)
                yield Field(value, id=wid, placeholder=example)
        with Horizontal(classes="buttons"):
            yield Button("Connect", id="connect", compact=True, variant="primary")
            yield Button("Use emulators", id="emulators", compact=True)
            yield Button("Continue to Link >", id="continue", compact=True, classes="continue")
        yield Static("", id="traffic-note", markup=False)
        with Horizontal(id="device-info"):
            yield PagedTable(id="identity", cursor_type="none", show_header=False)
            yield PagedTable(id="capabilities", cursor_type="none", show_header=False)
        yield PagedTable(id="lane-codes", cursor_type="row")

    def on_mount(self) -> None:
        fill_table(self.query_one("#identity", DataTable), IDENTITY_COLUMNS, [])
        fill_table(self.query_one("#capabilities", DataTable), CAPABILITY_COLUMNS, [])
        fill_table(self.query_one("#lane-codes", DataTable), LANE_COLUMNS, [])
        self.query_one("#continue", Button).display = False
        if getattr(self.app, "_start_with_emulators", False):
            self.query_one("#module-res", Input).value = self.ctl.module_resource

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.when_typed(lambda: self.action_connect())  # read the form once every typed key is in its field

    def action_emulators(self) -> None:
        self.ctl.use_emulators()
        self.query_one("#module-res", Input).value = self.ctl.module_resource
        self.query_one("#instrument-res", Input).value = ""
        self.status("emulated module selected (its own PRBS checker measures BER): Enter or c to connect")
        self.query_one("#connect", Button).focus()

    def action_connect(self) -> None:
        lanes = self.value("lanes")  # checked against the module's own lanes once it is open ("all" = its lanes)
        try:
            parse_lanes(lanes)  # a typo is caught before any I/O
        except Exception as exc:
            self.fail(exc)
            return
        res, inst = self.value("module-res"), self.value("instrument-res")

        def done(identity: dict[str, Any]) -> None:
            self.refresh_view()
            said = (f"connected {res}: {identity.get('vendor', '')} {identity.get('pn', '')} "
                    f"SN {identity.get('sn', '')}. Read the codes below, then Enter to continue")
            self.status(f"{said}. {self.ctl.link_warning}" if self.ctl.link_warning else said)
            self.focus_button("continue")

        self.run("connect", f"connecting to {res or '(no module)'}...",
                 lambda: self.ctl.connect_module(res, lanes, inst or None), done)

    def refresh_view(self) -> None:
        c = self.ctl
        self.query_one("#module-res", Input).value = c.module_resource
        self.query_one("#lanes", Input).value = ",".join(map(str, c.lanes))
        self.query_one("#instrument-res", Input).value = c.instrument_resource or ""
        fill_table(self.query_one("#identity", DataTable), IDENTITY_COLUMNS,
                   [(label, str(c.identity[key])) for key, label in IDENTITY_FIELDS if c.identity.get(key)])
        fill_table(self.query_one("#capabilities", DataTable), CAPABILITY_COLUMNS,
                   [tuple(row) for row in capability_rows(c.capabilities, c.doctor)])
        self.query_one("#traffic-note", Static).update(traffic_note(c.capabilities, c.doctor))
        adaptive = c.tx_adaptive or {}
        fill_table(self.query_one("#lane-codes", DataTable), LANE_COLUMNS,
                   [(str(ln), "yes" if ln in c.lanes else "", fmt_codes(lane_codes),
                     {True: "on", False: "off"}.get(adaptive.get(ln), "-"))
                    for ln, lane_codes in sorted((c.module_codes or {}).items())])
        self.query_one("#continue", Button).display = c.module is not None
