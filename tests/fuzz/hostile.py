"""A seeded fuzz of hostile inputs across every reader and command, reported per kind.

Where ``fuzzlib`` mutates bytes and JSON leaves, this adds the inputs that crashed the readers before
they were bounded: deep nesting (``[[[[...``, ``{a={a=...``, dotted keys ``a.a.a...``), huge integers
(101 to 100,000 digits; CPython refuses more than 4,300), thousands of ``[[segments]]``, 200 kB strings,
NUL bytes and 5,000-character names in paths, key files in the wrong format, and plain byte damage. Each
input must be accepted or refused with one line (an EqtuneError / exit 2), within 10 s: anything else is
a ``traceback``, a timeout is a ``hang``.

``run(count, seed)`` generates ``count`` inputs spread over the kinds (round robin) with ``random.Random(seed)``
and returns per-kind counts. ``tests/fuzz/test_fuzz_hostile.py`` runs a subset in CI; the full run is
``python benchmarks/fuzz_hostile.py --count 5000`` (prints the table).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.errors import EqtuneError
from tests.fuzz.fuzzlib import time_limit

NASTY_NUMBERS = ["nan", "inf", "-1", "0", "1e400", "1e-320", "99999999999999999999", '"x"', "true", "[]", "{}"]
DEPTHS = [65, 300, 5_000, 60_000]
DIGITS = [101, 4_301, 5_000, 100_000]


# ---------------------------------------------------------------------------------------------
# mutations (text in, text out)
# ---------------------------------------------------------------------------------------------
def _numbers(text: str) -> list[tuple[int, int]]:
    import re

    return [m.span() for m in re.finditer(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]


def deep_toml(rng: random.Random, text: str) -> str:
    n = rng.choice(DEPTHS)
    form = rng.choice(["array", "inline", "dotted", "value"])
    if form == "array":
        line = "deep = " + "[" * n + "]" * n
    elif form == "inline":
        line = "deep = " + "{a = " * n + "1" + "}" * n
    elif form == "dotted":
        line = "a" + ".a" * min(n, 20_000) + " = 1"
    else:  # replace an existing value with a deep array
        spans = _numbers(text)
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + "[" * n + "1" + "]" * n + text[b:]
        line = "deep = " + "[" * n + "]" * n
    lines = text.split("\n")
    at = rng.randrange(0, len(lines) + 1) if rng.random() < 0.5 else 0
    return "\n".join(lines[:at] + [line] + lines[at:])


def big_number(rng: random.Random, text: str) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(20)) * (rng.choice(DIGITS) // 20 + 1)
    digits = "9" + digits[:rng.choice(DIGITS) - 1]
    spans = _numbers(text)
    if not spans:
        return text + "\nbig = " + digits + "\n"
    a, b = rng.choice(spans)
    return text[:a] + (digits if rng.random() < 0.8 else digits[:50] + "." + digits[50:]) + text[b:]


def many_tables(rng: random.Random, text: str, table: str = "segments") -> str:
    n = rng.choice([MAX + 1 for MAX in (256, 64)] + [2_000, 20_000])
    block = f'\n[[{table}]]\ntype = "line"\ndelay_ps = 1\n' if table == "segments" else \
        f'\n[[{table}]]\nname = "x"\nfile = "x.s4p"\n'
    return text + block * n


def huge_string(rng: random.Random, text: str) -> str:
    s = rng.choice(["x", "\u00e9", "\\u0000", "\\\\"]) * rng.choice([10_000, 200_000])
    return text + f'\nhuge = "{s}"\n'


def byte_damage(rng: random.Random, text: str) -> str:
    data = list(text)
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        op = rng.choice(["number", "number", "flip", "insert", "delete", "truncate"])
        if op == "number":
            spans = _numbers("".join(data))
            if spans:
                a, b = rng.choice(spans)
                data[a:b] = list(rng.choice(NASTY_NUMBERS))
        elif op == "flip":
            data[rng.randrange(len(data))] = chr(rng.randrange(1, 0x250))
        elif op == "insert":
            i = rng.randrange(len(data) + 1)
            data[i:i] = list(rng.choice(["[", "]", "{", "}", "=", ",", '"', "\n", "#", "\x00", "\\", "'''"]))
        elif op == "delete":
            i = rng.randrange(len(data))
            del data[i:i + rng.randint(1, 16)]
        else:
            del data[rng.randrange(len(data)):]
    return "".join(data)


def deep_json(rng: random.Random, text: str) -> str:
    n = rng.choice(DEPTHS)
    spans = _numbers(text)
    nest = rng.choice(["[" * n + "]" * n, '{"a":' * n + "1" + "}" * n])
    if not spans:
        return nest
    a, b = rng.choice(spans)
    return text[:a] + nest + text[b:]


TOML_MUTATIONS: list[Callable[[random.Random, str], str]] = [deep_toml, big_number, huge_string, byte_damage,
                                                              byte_damage]
JSON_MUTATIONS: list[Callable[[random.Random, str], str]] = [deep_json, big_number, huge_string, byte_damage]


# ---------------------------------------------------------------------------------------------
# outcome of one input
# ---------------------------------------------------------------------------------------------
@dataclass
class Tally:
    inputs: int = 0
    accepted: int = 0
    refused: int = 0
    tracebacks: int = 0
    hangs: int = 0
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)

    def row(self, kind: str) -> str:
        return (f"| {kind} | {self.inputs} | {self.accepted} | {self.refused} | {self.tracebacks} | {self.hangs} | "
                f"{self.seconds:.1f} |")


def _one_line(msg: str) -> bool:
    return bool(msg.strip()) and "\n" not in msg.strip() and "Traceback" not in msg


def _call(fn: Callable[[], Any]) -> tuple[str, str]:
    """('accepted'|'refused'|'traceback'|'hang', detail)."""
    try:
        with time_limit(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except TimeoutError as exc:
        return "hang", str(exc)
    except EqtuneError as exc:
        return ("refused", "") if _one_line(str(exc)) else ("traceback", f"multi-line error: {str(exc)[:200]!r}")
    except Exception as exc:  # noqa: BLE001 - anything else is what this fuzz looks for
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return "traceback", f"{type(exc).__name__}: {str(exc)[:160]} | {tb[-2].strip()[:200] if len(tb) > 1 else ''}"
    return "accepted", ""


def _cli(args: list[str]) -> tuple[str, str]:
    from click.testing import CliRunner

    from eqtune.cli import main

    try:
        with time_limit(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = CliRunner().invoke(main, args)
    except TimeoutError as exc:
        return "hang", f"{exc} ({' '.join(args)[:120]})"
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        if isinstance(r.exception, TimeoutError):
            return "hang", f"{r.exception} ({' '.join(args)[:120]})"
        return "traceback", f"{type(r.exception).__name__}: {str(r.exception)[:160]} ({' '.join(args)[:120]})"
    out = r.output or ""
    if "Traceback" in out or r.exit_code not in (0, 2):
        return "traceback", f"exit {r.exit_code}: {out[-200:]!r}"
    if r.exit_code == 0:
        return "accepted", ""
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    if not err:  # --json: the error is one JSON document on stdout
        try:
            doc = json.loads(r.stdout)
            ok = _one_line(doc["error"]["message"])
        except (ValueError, KeyError, TypeError):
            ok = False
        return ("refused", "") if ok else ("traceback", f"--json error is not one document: {r.stdout[:200]!r}")
    return ("refused", "") if len(err) == 1 and err[0].startswith("eqtune: error: ") else \
        ("traceback", f"not one line: {r.stderr[:200]!r}")


# ---------------------------------------------------------------------------------------------
# kinds
# ---------------------------------------------------------------------------------------------
class Corpus:
    """Seed files and a scratch folder (one new file per input: loaders cache by path)."""

    def __init__(self, root: Path):
        from eqtune.resources import channels_dir, serdes_profiles_dir

        self.root = root
        self.n = 0
        self.chdir = root / "channels"
        self.chdir.mkdir()
        for f in channels_dir().glob("*.s4p"):
            shutil.copy(f, self.chdir / f.name)
        self.channel_toml = (channels_dir() / "c2m-4in.toml").read_text()
        self.serdes = (serdes_profiles_dir() / "host-lr-112g.toml").read_text()
        self.study = (channels_dir() / "studies" / "example.toml").read_text()
        self.fleet = (channels_dir() / "studies" / "fleet-example.csv").read_text()
        self.driver = (Path(__file__).resolve().parents[2] / "drivers" / "generic_scpi_bert.toml").read_text()
        self.s2p = self._s2p()
        self.profile = self._profile()
        self.sessions = root / "sessions"
        self.journal = self._journal()

    @staticmethod
    def _s2p() -> str:
        import numpy as np

        lines = ["! small 2-port channel", "# GHz S RI R 50"]
        for f in np.linspace(0.01, 60.0, 12):
            a = 10 ** (-f / 40)
            lines.append(f"{f:.4f} 0.05 0.01 {a:.4f} -0.1 {a:.4f} -0.1 0.05 0.01")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _profile() -> str:
        from eqtune.session.profile import Profile

        ident = {"vendor": "ACME", "pn": "OSFP-800G-DR8", "sn": "SN123", "rev": "A1", "firmware": "5.2"}
        return Profile.from_identity(ident, {1: {"rx_pre": 1, "rx_post": 3}, 2: {"tx_eq": 4}}).dumps()

    def _journal(self) -> str:
        from eqtune.session.live import LiveConfig, LiveTuner

        res = "emu:c2m-10in?seed=7&settle_ms=0&fast=1&name=hostile-seed"
        t = LiveTuner.create(LiveConfig(module=res, lanes=[1], dwell_s=0.01, budget=4, seed=1),
                             sessions_dir=self.sessions, session_id="seed")
        t.run()
        return (self.sessions / "seed" / "journal.jsonl").read_text()

    def fresh(self, name: str, text: str | bytes, where: Path | None = None) -> Path:
        self.n += 1
        d = (where or self.root) / f"i{self.n}"
        d.mkdir(parents=True)
        p = d / name
        p.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        return p


def _mutate(rng: random.Random, text: str, muts: list[Callable[[random.Random, str], str]]) -> str:
    return rng.choice(muts)(rng, text)


def k_channel_toml(c: Corpus, rng: random.Random) -> tuple[str, str]:
    from eqtune.channel.library import load_channel

    op = rng.random()
    if op < 0.15:
        text = many_tables(rng, c.channel_toml, rng.choice(["segments", "aggressors"]))
    elif op < 0.25:  # a file path with a NUL byte, a 5,000-character name, a folder
        bad = rng.choice(["a\\u0000b.s4p", "x" * 5000 + ".s4p", "/" * 3 + "y" * 300, ".", "\\u0000"])
        text = c.channel_toml + f'\n[[segments]]\ntype = "touchstone"\nfile = "{bad}"\n'
    else:
        text = _mutate(rng, c.channel_toml, TOML_MUTATIONS)
    c.n += 1
    p = c.chdir / f"c{c.n}.toml"
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    return _call(lambda: load_channel(p))


def k_serdes(c: Corpus, rng: random.Random) -> tuple[str, str]:
    from eqtune.serdes.profile import load_profile

    p = c.fresh("serdes.toml", _mutate(rng, c.serdes, TOML_MUTATIONS))
    return _call(lambda: load_profile(str(p)))


def k_study(c: Corpus, rng: random.Random) -> tuple[str, str]:
    from eqtune.study.spec import load_spec

    p = c.fresh("example.toml", _mutate(rng, c.study, TOML_MUTATIONS))
    (p.parent / "fleet-example.csv").write_text(c.fleet)
    return _call(lambda: load_spec(p))


def k_driver(c: Corpus, rng: random.Random) -> tuple[str, str]:
    from eqtune.drivers.definition import load_definition

    p = c.fresh("drv.toml", _mutate(rng, c.driver, TOML_MUTATIONS))
    return _call(lambda: load_definition(p))


def k_touchstone(c: Corpus, rng: random.Random) -> tuple[str, str]:
    from eqtune.channel.library import load_channel

    name = rng.choice(["ch.s2p", "ch.ts", "ch.dat"])
    text = c.s2p
    if name != "ch.s2p" or rng.random() < 0.2:  # a Touchstone 2.0 header, possibly hostile
        ports = rng.choice(["2", "4", "0", "99999999999", "x", "2 2", "-1"])
        text = f"[Version] 2.0\n# GHz S RI R 50\n[Number of Ports] {ports}\n[Two-Port Data Order] 21_12\n" \
               f"[Number of Frequencies] 12\n[Network Data]\n" + "\n".join(c.s2p.splitlines()[2:]) + "\n[End]\n"
    if rng.random() < 0.3:  # band-limited data (a 20 GHz VNA)
        text = "\n".join(ln for ln in text.splitlines() if not ln[:1].isdigit() or float(ln.split()[0]) < 20) + "\n"
    if rng.random() < 0.5:
        text = byte_damage(rng, text)
    p = c.fresh(name, text)
    return _call(lambda: load_channel(p, extrapolate=rng.choice([None, "loss-fit", "hold"])))


def k_profile(c: Corpus, rng: random.Random) -> tuple[str, str]:
    p = c.fresh("p.json", _mutate(rng, c.profile, JSON_MUTATIONS))
    return _cli(["profile", "show", str(p)] + (["--json"] if rng.random() < 0.5 else []))


def _journal_dir(c: Corpus, text: str) -> tuple[Path, str]:
    c.n += 1
    sid = f"j{c.n}"
    root = c.root / "journals" / sid  # a sessions folder per input: `session list` reads every journal in it
    (root / sid).mkdir(parents=True)
    (root / sid / "journal.jsonl").write_text(text, encoding="utf-8", errors="surrogatepass")
    return root, sid


def k_journal(c: Corpus, rng: random.Random) -> tuple[str, str]:
    lines = c.journal.splitlines()
    i = rng.randrange(len(lines))
    lines[i] = _mutate(rng, lines[i], JSON_MUTATIONS)
    root, sid = _journal_dir(c, "\n".join(lines) + "\n")
    cmd = rng.choice([["session", "show", sid], ["session", "report", sid, "--out", str(root / f"{sid}.html")],
                      ["profile", "save", sid, "--out", str(root / f"{sid}.json"), "--tuned"],
                      ["session", "resume", sid, "--quiet"], ["session", "show", sid, "--json"], ["session", "list"]])
    return _cli(cmd + ["--sessions", str(root)])


def k_key_file(c: Corpus, rng: random.Random) -> tuple[str, str]:
    from eqtune.session.signing import load_key

    kind = rng.choice(["ssh-pub", "ssh-priv", "der", "utf16", "pem-pub", "pem-priv", "short", "random", "huge",
                       "encrypted", "rsa-ish"])
    body = {
        "ssh-pub": b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOn0bF0w0f6y4Uu7yJr3s6i2B0kKxw5b7Hn1mLkDzA9T user@host\n",
        "ssh-priv": b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        "der": bytes([0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]) + bytes(range(32)),
        "utf16": "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n".encode("utf-16"),
        "pem-pub": b"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA" + bytes(rng.choice(b"AB+/=") for _ in range(40))
                   + b"\n-----END PUBLIC KEY-----\n",
        "pem-priv": b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n",
        "short": b"secret",
        "random": bytes(rng.randrange(256) for _ in range(rng.choice([16, 32, 64]))),
        "huge": b"k" * 200_000,
        "encrypted": b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIGb\n-----END ENCRYPTED PRIVATE KEY-----\n",
        "rsa-ish": b"-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n",
    }[kind]
    p = c.fresh("k.key", body)
    role = rng.choice(["any", "private", "public"])
    return _call(lambda: load_key(p, role=role))


def k_names(c: Corpus, rng: random.Random) -> tuple[str, str]:
    """Long names, NUL bytes and odd characters where a command takes a name or path."""
    name = rng.choice(["x" * 5000, "a\x00b", "x" * 300, "../" * 2000, "\u202e" * 100, "c2m-10in" + "?" * 3000,
                       "x" * 255, "", " "])
    cmd = rng.choice([["channel", "show", name], ["module", "show", f"emu:{name}"],
                      ["profile", "keygen", str(c.root / "keys" / name)], ["eye", name, "--json"],
                      ["session", "show", name], ["profile", "show", name], ["tune", name, "--budget", "6"]])
    (c.root / "keys").mkdir(exist_ok=True)
    return _cli(cmd)


def k_lane_option(c: Corpus, rng: random.Random) -> tuple[str, str]:
    text = rng.choice(["1-99999999999", "1,,2", "\uff11", "4-1", "0", "65", "1_0", "-1", "all", " ", "1" * 5000,
                       "2", "1,2", "nan"])
    # eye and tune only with texts that must be refused (an accepted lane runs a whole eye or tune, seconds
    # of legitimate work on a loaded machine, not what this kind looks for)
    refused = text not in ("2", "all", "1,2")
    cmd = rng.choice([["channel", "show", "c2m-10in", "--lane", text]] + (
        [["eye", "c2m-10in", "--lane", text, "--json"], ["tune", "c2m-10in", "--lane", text, "--budget", "6", "--json"]]
        if refused else []))
    return _cli(cmd)


KINDS: dict[str, Callable[[Corpus, random.Random], tuple[str, str]]] = {
    "channel TOML": k_channel_toml, "SerDes profile": k_serdes, "study spec": k_study,
    "driver definition": k_driver, "Touchstone (v1/v2, band)": k_touchstone, "tuning profile (CLI)": k_profile,
    "journal (CLI)": k_journal, "key file": k_key_file, "names and paths (CLI)": k_names,
    "lane option (CLI)": k_lane_option,
}


def run(count: int, seed: int = 34, kinds: list[str] | None = None, log: Callable[[str], None] | None = None
        ) -> dict[str, Tally]:
    """``count`` inputs over ``kinds`` (default all), round robin, seeded; per-kind tallies."""
    names = kinds or list(KINDS)
    rng = random.Random(seed)
    out = {k: Tally() for k in names}
    with tempfile.TemporaryDirectory(prefix="eqtune-hostile-") as tmp, contextlib.redirect_stderr(io.StringIO()):
        corpus = Corpus(Path(tmp))
        for i in range(count):
            kind = names[i % len(names)]
            t0 = time.perf_counter()
            verdict, detail = KINDS[kind](corpus, rng)
            tally = out[kind]
            tally.seconds += time.perf_counter() - t0
            tally.inputs += 1
            if verdict == "accepted":
                tally.accepted += 1
            elif verdict == "refused":
                tally.refused += 1
            elif verdict == "hang":
                tally.hangs += 1
                tally.examples.append(detail)
            else:
                tally.tracebacks += 1
                tally.examples.append(detail)
            if log and verdict in ("hang", "traceback"):
                log(f"{kind}: {verdict}: {detail}")
    return out


def table(tallies: dict[str, Tally]) -> str:
    rows = ["| kind | inputs | accepted | refused (one line) | tracebacks | hangs | s |", "|---|---|---|---|---|---|---|"]
    rows += [t.row(k) for k, t in tallies.items()]
    tot = Tally(*(sum(getattr(t, a) for t in tallies.values()) for a in ("inputs", "accepted", "refused",
                                                                          "tracebacks", "hangs", "seconds")))
    rows.append(tot.row("**total**"))
    return "\n".join(rows)
