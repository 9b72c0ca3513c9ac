"""Touchstone (.sNp, v1 and v2) loading through scikit-rf, reduced to one differential 2-port.

scikit-rf parses the file (no hand-written parser here). This module only

* wraps every parse failure in :class:`~eqtune.errors.TouchstoneError` naming the file and, where it
  can be found by a light re-scan of the text, the line;
* checks what scikit-rf accepts but a channel cannot use (non-monotonic frequency, port count);
* warns when the file is not passive (max singular value of S above 1, by how much);
* picks the lane's four ports, detects their order and converts to SDD (see ``mixedmode``).

A ``.s2p`` is taken as an already-differential 2-port (its S21 is SDD21).

``load_sdd`` keeps a small per-process cache of its results (a study loads the same connector and
aggressor files for every combination): keyed by the resolved path, the file's size, modification
time (ns), inode and device, and every option. A file rewritten in place gets a new key and is parsed
again; the cached arrays are read-only. Below it, the parsed network itself is cached by the file's
identity alone: a crosstalk aggressor is loaded with the victim's delay as an option (its port order
is detected from it), so a length sweep asks for the same file with a new option at every length and
would otherwise parse it every time. ``clear_cache()`` empties both; ``load_sdd(..., cache=False)``
bypasses both.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from eqtune.channel.mixedmode import PORT_ORDERS, lane_ports, resolve_port_order, sdd_from_se
from eqtune.errors import TouchstoneError

if TYPE_CHECKING:  # scikit-rf is imported lazily (eqtune --help stays fast)
    import skrf

PASSIVITY_TOL = 1e-4  # max singular value above 1 + this -> warning (measured files sit near 1e-5)
# |S| above this (20 dB of gain) is not a slightly non-passive measurement but a wrong file (e.g. DB values read
# as MA, a corrupted record): refused, not warned about (and the passivity screen's products cannot overflow)
MAX_S_MAGNITUDE = 10.0
_EXT = re.compile(r"\.s(\d+)p$", re.IGNORECASE)
CACHE_MAX = 32  # parsed files kept per process (a 4-port file of a few thousand points is ~1 MB)


@dataclass(frozen=True)
class DiffSParams:
    """A differential 2-port on the file's own frequency points (ascending, DC not guaranteed)."""

    freqs_hz: np.ndarray
    s: np.ndarray  # (n, 2, 2) complex, 100 ohm differential reference; port 1 = TX side
    source: str
    nports: int
    port_order: str | None = None  # None for a 2-port file
    port_order_detected: bool = False
    max_singular_value: float = 1.0


def _nports_from_name(path: Path) -> int | None:
    m = _EXT.search(path.name)
    return int(m.group(1)) if m else None


_KEYWORD = re.compile(r"^\s*\[([A-Za-z -]+)\]\s*(.*)$")
SNIFF_BYTES = 1 << 16  # the Touchstone 2.0 keywords precede [Network Data]


@dataclass(frozen=True)
class Header:
    """The Touchstone 2.0 keywords that decide how a file is read (Touchstone 2.0 spec, IBIS Open Forum
    2009, sections on [Version], [Number of Ports], [Mixed-Mode Order])."""

    version: str | None  # "2.0", "2.1" ... (None: a version 1 file)
    nports: int | None  # [Number of Ports]
    mixed_mode: bool  # a [Mixed-Mode Order] keyword: the data are already modal (D/C), not single-ended


def sniff_header(path: Path) -> Header:
    """[Version], [Number of Ports] and [Mixed-Mode Order] from the start of the file (before the data)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        raise TouchstoneError(f"{path}: cannot be read ({exc.strerror})") from None
    version = nports = None
    mixed = False
    for raw in head.splitlines():
        m = _KEYWORD.match(raw.split("!", 1)[0])
        if not m:
            continue
        key, val = m.group(1).strip().lower(), m.group(2).strip()
        if key == "version":
            version = val.split()[0] if val else ""
        elif key == "number of ports":
            tok = val.split()[0] if val else ""
            if not (tok.isascii() and tok.isdigit() and 1 <= len(tok) <= 4 and int(tok) >= 1):
                raise TouchstoneError(f"{path}: [Number of Ports] {val[:20]!r} is not a port count")
            nports = int(tok)
        elif key == "mixed-mode order":
            mixed = True
        elif key in ("network data", "noise data"):
            break
    return Header(version, nports, mixed)


def _scan_problem(path: Path, nports: int | None) -> tuple[int | None, str]:
    """Find the first line that explains why a Touchstone file does not parse (error path only)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    seen_option = False
    per_record = 1 + 2 * nports * nports if nports else None
    count = 0
    last_line = None
    for no, raw in enumerate(lines, start=1):
        text = raw.split("!", 1)[0].strip()
        if not text:
            continue
        if text.startswith("#"):
            seen_option = True
            continue
        if text.startswith("["):
            if text.lower().startswith("[end]"):
                break
            if not text.lower().startswith(("[network data]", "[noise data]")):
                continue
            continue
        for tok in text.split():
            try:
                float(tok)
            except ValueError:
                return no, f"'{tok}' is not a number; fix or remove that line"
        count += len(text.split())
        last_line = no
    if not seen_option:
        return None, "has no option line ('# Hz S RI R 50'); add one before the data"
    if per_record and count % per_record:
        return last_line, (f"ends in the middle of a frequency record ({count % per_record} of {per_record} "
                           f"numbers); the file is truncated or is not a {nports}-port file")
    if count == 0:
        return None, "has no data"
    return None, ""


def _first_nonincreasing(path: Path, nports: int) -> tuple[int | None, float, float] | None:
    """(line, previous f, f) of the first frequency record that does not increase (error path only).

    Frequencies are in the file's unit; assumes the v1 / v2-full layout of 1 + 2 N^2 numbers a record.
    """
    per_record = 1 + 2 * nports * nports
    count, prev = 0, None
    for no, raw in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        text = raw.split("!", 1)[0].strip()
        if not text or text.startswith(("#", "[")):
            continue
        toks = text.split()
        for k, tok in enumerate(toks):
            if (count + k) % per_record == 0:
                try:
                    f = float(tok)
                except ValueError:
                    return None
                if prev is not None and f <= prev:
                    return no, prev, f
                prev = f
        count += len(toks)
    return None


MAX_FREQ_HZ = 10e12  # 10 THz: no electrical channel data goes there; a Hz/GHz unit mix-up does (1e18+)


def read_network(path: str | Path) -> skrf.Network:
    """Parse ``path`` with scikit-rf; every failure becomes a :class:`TouchstoneError`."""
    import skrf

    from eqtune.readers import check_path

    p = check_path(path, "Touchstone file", error=TouchstoneError)
    if not p.is_file():
        raise TouchstoneError(f"{p}: no such Touchstone file; check the path (relative paths in a channel "
                              "TOML are relative to the TOML file)")
    head = sniff_header(p)
    n_name = head.nports if head.version is not None and head.nports else _nports_from_name(p)
    if n_name is None:
        raise TouchstoneError(f"{p}: not a Touchstone file: the name is not .sNp (e.g. .s4p) and the file has no "
                              "Touchstone 2.0 [Version] and [Number of Ports] keywords")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if _nports_from_name(p) is None and p.suffix.lower() != ".ts":
                # Touchstone 2.0 under another name: scikit-rf reads it from a file object named .ts
                import io

                fh = io.StringIO(p.read_text(encoding="utf-8", errors="replace"))
                fh.name = p.with_suffix(".ts").name
                net = skrf.Network(fh)
            else:
                net = skrf.Network(str(p))
    except Exception as exc:  # noqa: BLE001 - scikit-rf raises many types for bad text
        line, why = _scan_problem(p, n_name)
        where = f"{p}:{line}" if line else f"{p}"
        said = " ".join(str(exc).split())[:200]  # one line: scikit-rf messages may end in newlines
        detail = why or f"scikit-rf cannot parse it ({type(exc).__name__}: {said})"
        raise TouchstoneError(f"{where}: {detail}") from None
    f = np.asarray(net.f, dtype=float)
    s = np.asarray(net.s)
    if f.size == 0 or s.ndim != 3:
        raise TouchstoneError(f"{p}: has no frequency points; it needs at least two")
    if s.shape[1] != n_name:
        said = "its [Number of Ports] says" if head.version is not None and head.nports else "its name says"
        raise TouchstoneError(f"{p}: holds {s.shape[1]}-port data but {said} {n_name} ports; "
                              "rename it or fix the data")
    if not np.all(np.isfinite(s)) or not np.all(np.isfinite(f)):
        raise TouchstoneError(f"{p}: contains NaN or infinite values; fix the data")
    big = float(np.max(np.abs(s)))
    if big > MAX_S_MAGNITUDE:
        raise TouchstoneError(f"{p}: an S-parameter magnitude reaches {big:.3g} ({20 * np.log10(big):.0f} dB of gain); "
                              "a passive interconnect stays near 1 or below: check the format on the '#' option "
                              "line (MA, DB or RI) and the data")
    monotonic_warned = any("monoton" in str(w.message).lower() for w in caught)
    # a 2-port's frequency going down starts a noise block (Touchstone 1.1): for a channel it is an error
    if monotonic_warned or np.any(np.diff(f) <= 0) or bool(getattr(net, "noisy", False)):
        bad = _first_nonincreasing(p, n_name)
        if bad is not None:
            line, f0, f1 = bad
            raise TouchstoneError(f"{p}:{line}: frequency {f1:g} does not increase (previous {f0:g}, in the "
                                  "file's unit); frequencies must be strictly increasing: sort the records (or remove a 2-port "
                                  "noise block)")
        raise TouchstoneError(f"{p}: frequencies are not strictly increasing; sort the records")
    if f.size < 2:
        raise TouchstoneError(f"{p}: has only one frequency point; a channel needs a frequency sweep")
    if f[-1] > MAX_FREQ_HZ:
        raise TouchstoneError(f"{p}: frequencies reach {f[-1]:.3g} Hz (above {MAX_FREQ_HZ / 1e12:g} THz): the unit on "
                              "the '#' option line (e.g. GHz) does not match the values (in Hz?); fix the option line")
    return net


def max_singular_value(s: np.ndarray) -> float:
    """max over frequency of the largest singular value of S (passive <=> <= 1).

    Screens with the bound ||S||_2 <= sqrt(||S||_1 ||S||_inf) (Golub & Van Loan, Matrix Computations,
    2.3.2) and runs the SVD only where that bound exceeds 1 (typically the low-frequency points); the
    value is exact whenever it exceeds 1.
    """
    a = np.abs(s)
    bound = np.sqrt(a.sum(axis=1).max(axis=1) * a.sum(axis=2).max(axis=1))
    need = bound > 1.0
    best = float(bound[~need].max()) if np.any(~need) else 0.0
    if np.any(need):
        best = float(np.linalg.norm(s[need], ord=2, axis=(1, 2)).max())
    return best


_CACHE: OrderedDict[tuple[object, ...], DiffSParams] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_STATS = {"hits": 0, "misses": 0}
_PARSED: OrderedDict[tuple[object, ...], skrf.Network] = OrderedDict()  # file identity -> parsed network


def clear_cache() -> None:
    """Forget every cached ``load_sdd`` result (and reset the hit/miss counters)."""
    with _CACHE_LOCK:
        _CACHE.clear()
        _PARSED.clear()
        _CACHE_STATS.update(hits=0, misses=0)


def cache_info() -> dict[str, int]:
    """``{"hits", "misses", "size"}`` of the ``load_sdd`` cache in this process."""
    with _CACHE_LOCK:
        return {**_CACHE_STATS, "size": len(_CACHE)}


def _file_key(p: Path) -> tuple[object, ...] | None:
    """Identity of a file's current contents: resolved path, size, mtime (ns), inode, device."""
    try:
        st = p.stat()
        return (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
    except OSError:
        return None  # missing/unreadable: let the loader raise its own error


def _readonly(d: DiffSParams) -> DiffSParams:
    for a in (d.freqs_hz, d.s):
        a.setflags(write=False)
    return d


def _passivity_warning(p: Path, smax: float, stacklevel: int) -> None:
    if smax > 1.0 + PASSIVITY_TOL:
        warnings.warn(f"{p}: not passive: max singular value of S is {smax:.6f} "
                      f"(exceeds 1 by {smax - 1:.2e}); results may be optimistic", stacklevel=stacklevel)


def load_sdd(path: str | Path, *, port_order: str | None = None, lane: int | None = None,
             ports: tuple[int, int, int, int] | None = None, fallback_order: str | None = None,
             check_passivity: bool = True, cache: bool = True, crosstalk: bool = False,
             thru_delay_s: float | None = None) -> DiffSParams:
    """Load a Touchstone file as a differential 2-port.

    ``port_order``: None/"auto" detects (4-port groups), or "1-2/3-4" / "1-3/2-4".
    ``lane``: for files with more than 4 ports, the 1-based lane; lane k = ports 4k-3..4k.
    ``ports``: explicit 1-based single-ended ports (TX+, TX-, RX+, RX-) for any other multi-lane layout.
    ``fallback_order``: used when detection is ambiguous (e.g. the victim's order for crosstalk).
    ``crosstalk``: the file is a FEXT/NEXT aggressor: its order is detected from the coupling's delay
    (``thru_delay_s``: the victim's delay, if known), not from the strongest LF transmission; an
    ambiguous file warns and takes ``fallback_order`` (see ``mixedmode.detect_crosstalk_port_order``).
    ``cache``: reuse this process's earlier result for the same file contents and options (see the
    module docstring; the passivity warning is repeated on a hit). The arrays are then read-only.
    """
    p = Path(path)
    fkey = _file_key(p) if cache else None
    if fkey is None:
        return _load_sdd(p, port_order=port_order, lane=lane, ports=ports, fallback_order=fallback_order,
                         check_passivity=check_passivity, crosstalk=crosstalk, thru_delay_s=thru_delay_s)
    key = (fkey, port_order, None if lane is None else int(lane), None if ports is None else tuple(ports),
           fallback_order, bool(check_passivity), bool(crosstalk),
           None if thru_delay_s is None else round(float(thru_delay_s), 13))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            _CACHE_STATS["hits"] += 1
    if hit is not None:
        if check_passivity:
            _passivity_warning(p, hit.max_singular_value, 3)
        return hit
    d = _readonly(_load_sdd(p, port_order=port_order, lane=lane, ports=ports, fallback_order=fallback_order,
                            check_passivity=check_passivity, crosstalk=crosstalk, thru_delay_s=thru_delay_s,
                            file_key=fkey))
    if _file_key(p) == fkey:  # not rewritten while it was being parsed
        with _CACHE_LOCK:
            _CACHE_STATS["misses"] += 1
            _CACHE[key] = d
            while len(_CACHE) > CACHE_MAX:
                _CACHE.popitem(last=False)
    return d


def _load_sdd(p: Path, *, port_order: str | None, lane: int | None, ports: tuple[int, int, int, int] | None,
              fallback_order: str | None, check_passivity: bool, crosstalk: bool = False,
              thru_delay_s: float | None = None, file_key: tuple[object, ...] | None = None) -> DiffSParams:
    net = _parsed_network(p, file_key)
    f = np.asarray(net.f, dtype=float)
    s = np.asarray(net.s)
    n = s.shape[1]
    raw_modes = getattr(net, "port_modes", None)
    modes = [] if raw_modes is None else [str(m).upper() for m in np.asarray(raw_modes, dtype=object).ravel()]
    if "D" in modes:
        sdd = _mixed_mode_sdd(p, net, s, modes, lane, ports, port_order)
        smax = max_singular_value(s) if check_passivity else 1.0
        if check_passivity:
            _passivity_warning(p, smax, 4)
        return DiffSParams(freqs_hz=f, s=np.ascontiguousarray(sdd), source=str(p), nports=n, port_order=None,
                           port_order_detected=False, max_singular_value=smax)
    if ports is not None:
        idx = tuple(int(x) - 1 for x in ports)
        if len(idx) != 4 or len(set(idx)) != 4 or min(idx) < 0 or max(idx) >= n:
            raise TouchstoneError(f"{p}: ports {list(ports)} must be 4 distinct port numbers 1..{n} "
                                  "(TX+, TX-, RX+, RX-)")
        sdd, order, detected = sdd_from_se(s, idx), None, False
    elif n == 2:
        if lane not in (None, 1):
            raise TouchstoneError(f"{p}: a 2-port file has one lane; drop lane={lane}")
        sdd, order, detected = s, None, False
    elif n % 4 == 0:
        nlanes = n // 4
        if lane is None:
            if nlanes > 1:
                raise TouchstoneError(f"{p}: {n}-port file holds {nlanes} lanes; choose one with --lane K (or "
                                      f"lane = K in a channel TOML), K = 1..{nlanes} (lane k = ports 4k-3..4k)")
            lane = 1
        if not 1 <= int(lane) <= nlanes:
            raise TouchstoneError(f"{p}: lane {lane} does not exist; this {n}-port file has lanes 1..{nlanes}")
        base = 4 * (int(lane) - 1)
        sub = s[:, base:base + 4, base:base + 4]
        order, detected = resolve_port_order(f, sub, port_order, fallback=fallback_order, where=str(p),
                                             crosstalk=crosstalk, thru_delay_s=thru_delay_s)
        sdd = sdd_from_se(s, lane_ports(n, int(lane), order))
    else:
        raise TouchstoneError(f"{p}: a {n}-port file cannot be a differential channel; use a .s2p "
                              "(differential), a .s4p or a multiple of 4 ports (one lane = 4 ports)")
    smax = 1.0
    if check_passivity:
        smax = max_singular_value(s)
        _passivity_warning(p, smax, 4)  # -> the caller of load_sdd
    assert order is None or order in PORT_ORDERS
    return DiffSParams(freqs_hz=f, s=np.ascontiguousarray(sdd), source=str(p), nports=n, port_order=order,
                       port_order_detected=detected, max_singular_value=smax)


def _parsed_network(p: Path, file_key: tuple[object, ...] | None) -> skrf.Network:
    """``read_network(p)``, reused for the same file identity (``_file_key``; None = not cached). The
    network is only read from here (its f, s, port modes and z0), never modified."""
    if file_key is None:
        return read_network(p)
    with _CACHE_LOCK:
        net = _PARSED.get(file_key)
        if net is not None:
            _PARSED.move_to_end(file_key)
            return net
    net = read_network(p)
    if _file_key(p) == file_key:  # not rewritten while it was being parsed
        with _CACHE_LOCK:
            _PARSED[file_key] = net
            while len(_PARSED) > CACHE_MAX:
                _PARSED.popitem(last=False)
    return net


def _mixed_mode_sdd(p: Path, net: skrf.Network, s: np.ndarray, modes: list[str], lane: int | None,
                    ports: tuple[int, int, int, int] | None, port_order: str | None) -> np.ndarray:
    """SDD of a Touchstone 2.0 mixed-mode file ([Mixed-Mode Order]): its differential (D) ports, taken
    in file order (lane k = the k-th pair of D ports: TX side first), renormalised to 100 ohm."""
    if ports is not None or port_order not in (None, "auto"):
        raise TouchstoneError(f"{p}: a mixed-mode file ([Mixed-Mode Order]) is already differential; drop "
                              "ports / port_order")
    d_idx = [i for i, m in enumerate(modes) if m == "D"]
    if len(d_idx) % 2:
        raise TouchstoneError(f"{p}: [Mixed-Mode Order] names {len(d_idx)} differential ports; a channel lane "
                              "needs a pair (TX, RX)")
    nlanes = len(d_idx) // 2
    if lane is None:
        if nlanes > 1:
            raise TouchstoneError(f"{p}: mixed-mode file holds {nlanes} lanes; choose one with lane = 1..{nlanes} "
                                  "(--lane K)")
        lane = 1
    if not 1 <= int(lane) <= nlanes:
        raise TouchstoneError(f"{p}: lane {lane} does not exist; this mixed-mode file has lanes 1..{nlanes}")
    idx = d_idx[2 * (int(lane) - 1): 2 * int(lane)]
    sdd = s[:, idx][:, :, idx]
    z0 = np.asarray(net.z0)[:, idx]
    if not np.allclose(z0, 100.0, rtol=1e-6):
        from skrf.network import renormalize_s

        sdd = renormalize_s(sdd, z0, 100.0)
    return sdd
