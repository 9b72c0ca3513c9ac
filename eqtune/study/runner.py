"""Run a study: every combination once, through one executor code path, written as it finishes.

``run_study(spec, out_dir)`` computes every combination not yet in ``out_dir/results.sqlite`` with a
per-combination function (``compute``, default: the eye-engine simulation), stores one row per
finished combination as it arrives (``eqtune.study.store``), and finally exports ``results.csv`` and
writes ``summary.json``, ``report.html`` and, for fleet
studies, one profile per module. Interrupted (Ctrl-C, SIGKILL, a lost dask worker), the same call
with ``resume=True`` computes exactly the missing combinations.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import socket
import statistics
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None  # type: ignore[assignment]

from eqtune.errors import EqtuneError, InputError
from eqtune.study.content import NEED_CONTENT, ContentPacker, StudyItem
from eqtune.study.executors import StopFlag, open_executor, run_tasks
from eqtune.study.spec import Combination, StudySpec
from eqtune.study.store import SUMMARY, ResultStore, parse_float, write_json_atomic


class StudyError(InputError):
    """The study could not be completed (executor failure); finished rows are kept for --resume."""


Compute = Callable[[Combination], Mapping[str, Any]]
Progress = Callable[[Mapping[str, Any], int, int], None]


@dataclass
class StudyResult:
    out_dir: Path
    rows: list[dict[str, str]]
    summary: dict[str, Any]
    computed: int  # combinations computed in this run
    skipped: int  # combinations already in results.csv (resume)
    report: Path | None = None
    profiles: list[Path] = field(default_factory=list)
    interrupted: bool = False


def run_one(compute: Compute, combo: Combination, work: Combination | None = None) -> dict[str, Any]:
    """Compute one combination -> a results row. Never raises for a bad combination: the row says why.

    ``work``: the combination as the worker computes it (channel and profile by content,
    ``eqtune.study.content``); the row describes ``combo``, as the study spec names it."""
    t0, c0, f0 = time.perf_counter(), time.thread_time(), _minor_faults()
    row: dict[str, Any] = {"id": combo.id, "index": combo.index, "channel": combo.channel.label,
                           "profile": combo.profile or "", "link": combo.link_dict() or None}
    try:
        row.update(compute(work or combo))
        row.setdefault("status", "ok")
    except EqtuneError as exc:
        row.update(status="error", error=f"{combo.label}: {exc}")
    except Exception as exc:  # noqa: BLE001 - one broken combination must not end a 1000-combination study
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        row.update(status="error", error=f"{combo.label}: internal error {type(exc).__name__}: {exc}{where}")
    row["elapsed_s"] = round(time.perf_counter() - t0, 4)
    row["cpu_s"] = round(time.thread_time() - c0, 4)  # this thread's CPU (BLAS runs single-threaded here)
    faults = _minor_faults()
    row["page_faults"] = None if faults is None or f0 is None else faults - f0
    row["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return row


def _minor_faults() -> int | None:
    """Minor page faults of this thread so far (Linux ``RUSAGE_THREAD``): a per-task cost of memory
    allocation that, unlike time, does not depend on how loaded the machine is. None elsewhere."""
    who = getattr(resource, "RUSAGE_THREAD", None) if resource is not None else None
    return None if who is None else int(resource.getrusage(who).ru_minflt)


@dataclass(frozen=True)
class TaskChunk:
    """Several combinations sent as one task: one submission and one round trip for all of them.

    A task of one combination costs the coordinator and a dask worker a few milliseconds of
    scheduling, serialisation and messages whatever the combination costs itself; a chunk pays that
    once. Every combination of a chunk is still computed by ``run_one`` on its own (its row, seed and
    figures are those of an unchunked run) and stored under its own id, so resume and exactly-once
    storage stay per combination. ``payload``: file bytes for the chunk's items, when the worker
    asked for them (``eqtune.study.content``)."""

    items: tuple[StudyItem | Combination, ...]
    payload: Mapping[str, bytes] | None = None

    @property
    def index(self) -> int:
        return self.items[0].index

    def with_payload(self, payload: Mapping[str, bytes]) -> TaskChunk:
        return TaskChunk(self.items, dict(payload))


@dataclass(frozen=True)
class StudyTask:
    """What a worker runs per combination (the same on every executor).

    Sets the worker process up once (``eqtune.study.worker.prepare_worker``: malloc thresholds, one
    BLAS thread; ``prepare=False`` in the serial executor, which computes in the caller's own
    process), makes the item's channel and profile files present by content hash
    (``eqtune.study.content``), answering ``{NEED_CONTENT: [digest, ...]}`` when this host lacks
    some, then ``run_one``."""

    compute: Compute
    prepare: bool = True

    def __call__(self, item: StudyItem | Combination | TaskChunk) -> Any:
        if self.prepare:
            from eqtune.study.worker import prepare_worker

            prepare_worker()
        if isinstance(item, TaskChunk):
            return self._chunk(item)
        return self._one(item)

    def _one(self, item: StudyItem | Combination) -> dict[str, Any]:
        if isinstance(item, Combination):
            return run_one(self.compute, item)
        from eqtune.study.content import NEED_CONTENT, materialize, worker_combination

        missing = materialize(item)
        if missing:
            return {NEED_CONTENT: missing, "id": item.combo.id}
        return run_one(self.compute, item.combo, worker_combination(item))

    def _chunk(self, chunk: TaskChunk) -> list[dict[str, Any]] | dict[str, Any]:
        """Rows of every combination of ``chunk`` in order; ``{NEED_CONTENT: [...]}`` (nothing
        computed) when this host lacks files of any of them."""
        import dataclasses

        from eqtune.study.content import materialize

        items = [dataclasses.replace(it, payload=chunk.payload) if isinstance(it, StudyItem) and chunk.payload
                 else it for it in chunk.items]
        missing = sorted({d for it in items if isinstance(it, StudyItem) for d in materialize(it)})
        if missing:
            return {NEED_CONTENT: missing, "id": chunk.items[0].combo.id if isinstance(chunk.items[0], StudyItem)
                    else chunk.items[0].id}
        return [self._one(it) for it in items]


#: a chunk is sized to last about this long (s) on a worker, from the rows stored so far
CHUNK_TARGET_S = 0.5
CHUNK_MAX = 256


class ChunkSizer:
    """How many combinations the next task carries: ``fixed`` if given, else adaptive (1 until rows
    arrive, then about ``CHUNK_TARGET_S`` of work by the median per-combination time of the last
    rows, between 1 and ``CHUNK_MAX``). The size changes only how work is grouped into tasks, never
    a result; a short target keeps an interrupt's wait and a lost worker's re-run short."""

    def __init__(self, fixed: int | None = None, window: int = 64) -> None:
        self.fixed = fixed
        self._recent: list[float] = []
        self._window = window

    def observe(self, row: Mapping[str, Any]) -> None:
        t = row.get("elapsed_s")
        if isinstance(t, int | float) and math.isfinite(t) and t >= 0:
            self._recent.append(float(t))
            del self._recent[: -self._window]

    def size(self) -> int:
        if self.fixed is not None:
            return self.fixed
        if not self._recent:
            return 1
        per = max(statistics.median(self._recent), 1e-6)
        return max(1, min(CHUNK_MAX, int(CHUNK_TARGET_S / per)))


def _chunked(items: Iterator[StudyItem | Combination], sizer: ChunkSizer) -> Iterator[TaskChunk]:
    """Consecutive items (spec order: the profiles of one channel variant are neighbours, so a
    worker's engine cache serves them) grouped into chunks of ``sizer.size()`` at the time each
    chunk is formed."""
    while True:
        chunk = tuple(itertools.islice(items, sizer.size()))
        if not chunk:
            return
        yield TaskChunk(chunk)


def _item(packer: ContentPacker, combo: Combination) -> StudyItem | Combination:
    """The task of ``combo``: by content; the bare combination when its channel cannot be read here
    (the worker then reports the problem in that combination's row, as for any bad combination)."""
    try:
        return packer.item(combo)
    except EqtuneError:
        return combo


def default_compute() -> Compute:
    from eqtune.study.compute import simulate

    return simulate


class _Pass:
    """One pass of combinations through an executor into the store (the spec's combinations, then a
    screening study's refinements): the same tasks, chunks, resubmission of missing files, Ctrl-C
    handling and progress for both."""

    def __init__(self, store: ResultStore, progress: Progress | None, chunk: int | None,
                 max_in_flight: int | None, on_interrupt: Callable[[], None] | None) -> None:
        self.store, self.progress, self.chunk = store, progress, chunk
        self.max_in_flight, self.on_interrupt = max_in_flight, on_interrupt
        self.computed = 0
        self.interrupted = False
        self.aborted = ""

    def run(self, executor: Any, info: Any, compute: Compute, todo: list[Combination], *, n_done: int,
            total: int, links: Mapping[str, str] | None = None) -> None:
        """Compute ``todo`` and store each row as it arrives; ``links``: full-fidelity id -> the screened
        row it refines (``ResultStore.link_refined`` after the row is stored)."""
        if not todo:
            return
        store = self.store
        # tasks in flight. serial: one combination at a time, so every finished row is on
        # disk before the next starts. processes: two tasks (chunks of combinations) per
        # worker (one running, one queued); dask: four per thread, so a worker never waits a
        # network round trip for its next task (a lost worker's tasks are rescheduled by
        # dask, and a row is stored once whatever happens)
        window = self.max_in_flight or (1 if info.kind == "serial" else
                                        (4 if info.kind == "dask" else 2) * info.workers)
        task = StudyTask(compute, prepare=info.kind != "serial")
        packer = ContentPacker()
        stop = StopFlag(self.on_interrupt)
        computed = 0

        def resubmit(item: Any, result: Mapping[str, Any]) -> Any:
            # a worker lacks some channel/profile files: the same task again, with their bytes
            need = result.get(NEED_CONTENT) if isinstance(result, dict) else None
            return item.with_payload(packer.payload(need)) if need and item.payload is None else None

        try:
            with stop.installed():
                items: Iterator[Any] = (_item(packer, c) for c in todo)
                sizer = ChunkSizer(self.chunk)
                if info.kind != "serial":
                    items = _chunked(items, sizer)
                for _item_done, result in run_tasks(executor, task, items, max_in_flight=window,
                                                    stop=stop.is_set, resubmit=resubmit):
                    if isinstance(result, dict) and NEED_CONTENT in result:
                        raise StudyError(f"a worker did not accept the files of {result['id']} "
                                         "(content digests did not match)")
                    for row in result if isinstance(result, list) else [result]:
                        store.append(row)
                        if links and row.get("id") in links and row.get("status") == "ok":
                            store.link_refined(links[row["id"]], row["id"])
                        sizer.observe(row)
                        computed += 1
                        self.computed += 1
                        n_done += 1
                        if self.progress is not None:
                            self.progress(row, n_done, total)
            self.interrupted = stop.is_set() and computed < len(todo)
        except KeyboardInterrupt:  # the second Ctrl-C (or one outside the main thread)
            self.interrupted = True
        except Exception as exc:  # noqa: BLE001 - the executor itself failed (lost worker, broken pool)
            self.aborted = f"{type(exc).__name__}: {exc}"


def refine_count(spec: StudySpec) -> int:
    """How many of a screening study's worst combinations are refined (``[tune] refine_worst``; 0 else)."""
    return max((c.tune.refine_worst for c in spec.combinations if c.tune.fidelity == "screen"), default=0)


def refinement_todo(spec: StudySpec, store: ResultStore, n: int) -> list[tuple[str, Combination]]:
    """(screened id, full-fidelity twin) of the screening rows to refine that are not stored yet: the
    ``n`` worst by robust margin at each combination's worst corner, and the ``n`` worst at each corner
    (a corner's ranking is what ``eqtune study query --corner`` answers). A twin stored by an earlier,
    interrupted run is linked again here and not computed twice."""
    from eqtune.study.screened import refine_combination

    by_id = spec.by_id()
    chosen: dict[str, None] = {}
    for corner in [None, *store.corners()]:
        for w in store.worst(n, corner=corner, method="screen", include_refined=True):
            if w.id in by_id:
                chosen.setdefault(w.id)
    base_seed = int(spec.settings.get("seed", 0))
    done = store.done_ids()
    linked = store.refined_map()
    out: list[tuple[str, Combination]] = []
    for sid in chosen:
        twin = refine_combination(by_id[sid], base_seed)
        if twin.id in done:
            if sid not in linked:
                store.link_refined(sid, twin.id)
            continue
        out.append((sid, twin))
    store.commit()
    return out


def run_study(spec: StudySpec, out_dir: str | Path, *, workers: int = 1, scheduler: str | None = None,
              client: Any = None, resume: bool = False, compute: Compute | None = None,
              progress: Progress | None = None, report: bool = True, detail: Callable | None = None,
              max_in_flight: int | None = None, on_interrupt: Callable[[], None] | None = None,
              chunk: int | None = None) -> StudyResult:
    """Run (or resume) ``spec`` into ``out_dir``. See the module docstring.

    Ctrl-C (SIGINT) once: no new combination starts, the running ones finish and are saved, then
    ``KeyboardInterrupt`` is raised (``on_interrupt()`` is called when the first one arrives);
    twice: stop at once. Either way every finished row is on disk and ``resume=True`` continues.

    ``chunk``: combinations per task on local processes and dask (``TaskChunk``); None sizes chunks
    to about ``CHUNK_TARGET_S`` of work each (``ChunkSizer``). The serial executor computes one
    combination at a time, so each row is on disk before the next starts.
    """
    if chunk is not None and chunk < 1:
        raise InputError(f"--chunk must be >= 1 combination per task, got {chunk}")
    out = Path(out_dir)
    store = ResultStore(out)
    if store.done_ids() and not resume:
        raise InputError(f"{out} already holds results of a study: add --resume to continue it, "
                         "or choose another --out folder")
    compute = compute or default_compute()
    done = store.done_ids()
    todo = [c for c in spec.combinations if c.id not in done]
    total = len(spec.combinations)
    started = time.time()
    run = _Pass(store, progress, chunk, max_in_flight, on_interrupt)
    info_desc = "nothing left to compute"
    refine = refine_count(spec)
    try:
        twins: list[tuple[str, Combination]] | None = None
        if refine and not todo:  # a finished screen: open a cluster only if some refinement is left
            twins = refinement_todo(spec, store.open(), refine)
        if todo or twins:
            with open_executor(workers, scheduler, client=client) as (executor, info):
                info_desc = info.description
                store.open()
                run.run(executor, info, compute, todo, n_done=total - len(todo), total=total)
                if refine and not (run.interrupted or run.aborted):
                    twins = refinement_todo(spec, store, refine) if twins is None else twins
                    # the refinement's progress counts its own combinations (the screen's are done)
                    run.run(executor, info, compute, [t for _, t in twins], n_done=0, total=len(twins),
                            links={t.id: sid for sid, t in twins})
    finally:
        store.close()
    computed, interrupted, aborted = run.computed, run.interrupted, run.aborted
    out.mkdir(parents=True, exist_ok=True)
    rows = _rows_in_spec_order(spec, store.rows(), store.refined_map())
    if rows:
        store.export_csv()  # results.csv: the same rows, for spreadsheets and scripts
    summary = summarize(spec, rows, executor=info_desc, computed=computed, started=started,
                        interrupted=interrupted)
    summary["duplicates_refused"] = store.duplicates_refused
    if refine:
        summary["refined"] = len(store.refined_map())
    write_json_atomic(out / SUMMARY, summary)
    result = StudyResult(out, rows, summary, computed, total - len(todo), interrupted=interrupted)
    if interrupted:
        raise KeyboardInterrupt(f"study interrupted: {len(rows)} of {total} combinations saved in {out}")
    if aborted:
        raise StudyError(f"the executor failed ({aborted}); {len(rows)} of {total} combinations are saved in "
                         f"{out}: fix the cluster/workers and continue with --resume")
    if spec.fleet:
        from eqtune.study.fleet import write_module_profiles

        result.profiles, notes = write_module_profiles(out, rows, study=spec.name)
        summary["profiles"] = {"written": [p.name for p in result.profiles], "skipped": notes}
        write_json_atomic(out / SUMMARY, summary)
    if report:
        from eqtune.study.report import write_report

        result.report = write_report(out, spec, rows, summary, detail=detail)
    return result


def _rows_in_spec_order(spec: StudySpec, rows: list[dict[str, str]],
                        refined: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The stored rows of ``spec``'s combinations in spec order; a refined screening row (``refined``:
    screened id -> full-fidelity id) is given by its full-fidelity row."""
    order = {c.id: c.index for c in spec.combinations}
    by_id = {r["id"]: r for r in rows}
    out = []
    for cid in sorted((i for i in by_id if i in order), key=lambda i: order[i]):
        full = (refined or {}).get(cid)
        out.append(by_id[full] if full in by_id else by_id[cid])
    return out


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def summarize(spec: StudySpec, rows: list[Mapping[str, str]], *, executor: str = "", computed: int = 0,
              started: float | None = None, interrupted: bool = False) -> dict[str, Any]:
    """The JSON summary: counts, verdicts, margin statistics, worst links, bad input rows."""
    ok = [r for r in rows if r.get("status") == "ok"]
    errors = [{"id": r["id"], "channel": r["channel"], "error": r.get("error", "")} for r in rows
              if r.get("status") != "ok"]
    verdicts = [r.get("verdict") for r in ok]

    def col(name: str) -> list[float]:
        return [v for v in (parse_float(r.get(name)) for r in ok) if v is not None and math.isfinite(v)]

    ranked = sorted(ok, key=lambda r: parse_float(r.get("robust_margin")) or -math.inf)
    return {
        "study": spec.name,
        "spec": spec.source,
        "settings": spec.settings,
        "combinations": len(spec.combinations),
        "finished": len(rows),
        "missing": len(spec.combinations) - len(rows),
        "complete": len(rows) == len(spec.combinations) and not interrupted,
        "interrupted": interrupted,
        "ok": len(ok),
        "errors": errors,
        "input_errors": list(spec.row_errors),
        "pass": verdicts.count("pass"),
        "fail": verdicts.count("fail"),
        "margin": {k: _stats(col(c)) for k, c in (("baseline", "baseline_margin"), ("tuned", "tuned_margin"),
                                                  ("robust", "robust_margin"), ("floor_eh_mv", "floor_eh_mv"))},
        "worst": [{"id": r["id"], "channel": r["channel"], "profile": r["profile"],
                   "robust_margin": parse_float(r.get("robust_margin")), "verdict": r.get("verdict")}
                  for r in ranked[: int(spec.settings.get("report_worst", 3))]],
        "executor": executor,
        "computed_this_run": computed,
        "elapsed_s": round(time.time() - started, 3) if started else None,
        "task_s": round(sum(parse_float(r.get("elapsed_s")) or 0.0 for r in rows), 3),
        "cpu_s": round(sum(parse_float(r.get("cpu_s")) or 0.0 for r in rows), 3),
    }


def load_rows(out_dir: str | Path) -> list[dict[str, str]]:
    return ResultStore(out_dir).rows()


def codes(row: Mapping[str, str], which: str = "robust") -> dict[str, float]:
    """The codes of a results row (``baseline``, ``tuned`` or ``robust``) as a dict."""
    text = row.get(f"{which}_codes") or ""
    return json.loads(text) if text else {}
