"""The ``eqtune com --plot`` figure: the equalized pulse of the worse package case and the noise budget.

matplotlib is imported here, lazily (``eqtune --help`` stays fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from eqtune.channel.model import Channel
    from eqtune.eye.com import ComReport


def plot_com(channel: Channel, rep: ComReport, path: str, *, samples_per_ui: int = 32) -> None:
    """One PNG: left, the equalized pulse response (mV vs UI from the cursor, cursors marked) of the worse
    case at its EQ; right, A_s, A_ni and the sigma terms (mV) of every package case."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eqtune.eye.engine import EyeEngine
    from eqtune.eye.plot import save_figure

    w = rep.worst
    eng = EyeEngine(channel, rep.profile, direction="serdes", package_case=w.package_case,
                    samples_per_ui=samples_per_ui, tx_noise=str(rep.settings["tx_noise"]),
                    floating_taps=bool(rep.settings["floating_taps"]))
    pr = eng.pulse_response(w.eq)
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    t_ui = (pr.t_s - pr.t_s[pr.cursor_index]) / eng.ui_s
    ax[0].plot(t_ui, pr.pulse_v * 1e3, lw=1)
    k = pr.cursor_index % pr.samples_per_ui
    ax[0].plot(t_ui[k::pr.samples_per_ui], pr.pulse_v[k::pr.samples_per_ui] * 1e3, "o", ms=3)
    ax[0].axhline(0, color="k", lw=0.5)
    ax[0].set(title=f"equalized pulse, package case {w.package_case}", xlabel="UI from cursor", ylabel="mV",
              xlim=(-eng.n_pre, min(eng.n_post, 60)))
    labels = ["A_s", "A_ni", "ISI", "jitter", "crosstalk", "TX", "RX"]
    width = 0.8 / max(len(rep.cases), 1)
    x = np.arange(len(labels))
    for i, c in enumerate(rep.cases):
        vals = [c.a_s_mv, c.a_ni_mv, c.sigma_isi_mv, c.sigma_jitter_mv, c.sigma_xt_mv, c.sigma_tx_mv, c.sigma_rx_mv]
        ax[1].bar(x + i * width, vals, width, label=f"case {c.package_case}: COM {c.com_db:.2f} dB")
    ax[1].set_xticks(x + width * (len(rep.cases) - 1) / 2, labels)
    ax[1].set(title="signal, A_ni and noise sigmas (mV)", ylabel="mV")
    ax[1].legend(fontsize=8)
    fig.suptitle(f"{rep.channel} / {rep.profile}: COM {rep.com_db:.2f} dB "
                 f"({'PASS' if rep.passed else 'FAIL'}, case {rep.worst_case})")
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
