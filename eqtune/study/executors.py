"""Executors for studies: serial, local processes, dask.distributed — behind one interface.

All three are ``concurrent.futures.Executor``-shaped (``submit`` -> ``Future``):

* serial: ``SerialExecutor`` runs the task inside ``submit`` (no pickling; easiest to debug);
* local processes: ``concurrent.futures.ProcessPoolExecutor`` (workers ignore SIGINT, so Ctrl-C is
  handled once, by the coordinator, which keeps every finished row);
* dask.distributed: ``Client(address).get_executor()``, dask's own concurrent.futures adapter.

``run_tasks`` is the single code path the study runner uses for all of them: it keeps a bounded
number of tasks in flight (so an interrupt loses at most that many) and yields results as they finish.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from eqtune.errors import InputError
from eqtune.study.worker import BLAS_THREAD_VARS, blas_threads, one_blas_thread_scope, prepare_worker

__all__ = ["ExecutorInfo", "SerialExecutor", "StopFlag", "blas_threads", "open_executor", "run_tasks"]


class SerialExecutor(cf.Executor):
    """Runs each task immediately in the calling process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future, like a pool
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            fut.set_exception(exc)
        return fut


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    # A fresh worker has not imported numpy yet, so threadpoolctl would find no BLAS to limit (and
    # OpenBLAS would later start one thread per core): size the pools through the environment before
    # numpy loads; prepare_worker then limits whatever is loaded and sets malloc's thresholds.
    for var in BLAS_THREAD_VARS:
        os.environ[var] = "1"
    prepare_worker()


@dataclass
class ExecutorInfo:
    kind: str  # serial | processes | dask
    workers: int
    description: str


@contextlib.contextmanager
def open_executor(workers: int = 1, scheduler: str | None = None, *, client: Any = None,
                  ) -> Iterator[tuple[cf.Executor, ExecutorInfo]]:
    """Yield ``(executor, info)``.

    ``client`` (a ``distributed.Client``) or ``scheduler`` (``tcp://HOST:8786``) selects dask;
    otherwise ``workers`` > 1 gives a local process pool and 1 the serial executor.
    """
    if client is not None or scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise InputError("--scheduler needs dask.distributed: pip install 'eqtune[dask]'") from None
        own = client is None
        if own:
            try:
                client = Client(scheduler, timeout="5s", set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise InputError(f"cannot reach the dask scheduler {scheduler!r}: {exc}; "
                                 "check the address (tcp://HOST:8786) and that the scheduler runs") from None
        plugin = _register_study_plugin(client)
        try:
            n = max(1, sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values()))
            info = ExecutorInfo("dask", n, f"dask {client.scheduler.address} ({n} threads)")
            # pure=False: every submission runs (no dask result caching between identical calls)
            yield client.get_executor(pure=False), info
        finally:
            if plugin:
                with contextlib.suppress(Exception):  # a cluster already gone has nothing to restore
                    client.unregister_worker_plugin(plugin)
            if own:
                client.close()
        return
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    if workers == 1:
        with one_blas_thread_scope():
            yield SerialExecutor(), ExecutorInfo("serial", 1, "serial (1 process)")
        return
    # forkserver: workers fork from a clean single-threaded server, never from this process, whose
    # threads (progress bar, dask) could hold a lock at fork time.
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    pool = cf.ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, mp_context=ctx)
    try:
        yield pool, ExecutorInfo("processes", workers, f"{workers} local processes")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _register_study_plugin(client: Any) -> str | None:
    """Pause dask's statistical profiler on every worker for the study (a worker plugin: workers that
    join later get it too; unregistering restarts the profiler). The profiler samples the stack of
    every thread each 10 ms (``distributed.worker.profile.interval``) on the worker's event loop:
    measured on study tasks of ~0.5 s, ~50 ms of worker-process CPU per task outside the task itself.
    Returns the plugin's name, or None when the cluster does not take plugins (nothing changes then)."""
    import uuid

    from distributed.diagnostics.plugin import WorkerPlugin

    class PauseProfiler(WorkerPlugin):
        def __init__(self) -> None:
            self.paused: list[str] = []

        def setup(self, worker: Any) -> None:
            for key in ("profile", "profile-cycle"):
                pc = worker.periodic_callbacks.get(key)
                if pc is not None and pc.is_running():
                    pc.stop()
                    self.paused.append(key)

        def teardown(self, worker: Any) -> None:
            for key in self.paused:
                pc = worker.periodic_callbacks.get(key)
                if pc is not None:
                    pc.start()

    name = f"eqtune-study-{uuid.uuid4().hex[:8]}"
    try:
        client.register_plugin(PauseProfiler(), name=name)
    except Exception:  # noqa: BLE001 - an optimisation only: the study runs the same without it
        return None
    return name


class StopFlag:
    """Graceful Ctrl-C for the coordinator: the first SIGINT asks the study to stop after the running
    tasks (their results are still saved), the second one interrupts at once (KeyboardInterrupt)."""

    def __init__(self, on_first: Callable[[], None] | None = None) -> None:
        self._set = False
        self._previous: Any = None
        self._on_first = on_first

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True

    def _handler(self, signum: int, frame: Any) -> None:
        if self._set:
            raise KeyboardInterrupt
        self._set = True
        if self._on_first is not None:
            self._on_first()

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopFlag]:
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield self  # signals go to the main thread only: nothing to install
            return
        self._previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, self._previous)


def run_tasks(executor: cf.Executor, fn: Callable[[Any], Any], items: Iterable[Any], *,
              max_in_flight: int, stop: Callable[[], bool] | None = None,
              resubmit: Callable[[Any, Any], Any] | None = None) -> Iterator[tuple[Any, Any]]:
    """Submit ``fn(item)`` for every item, at most ``max_in_flight`` at once; yield ``(item, result)``.

    Results come in completion order. A task's exception is re-raised here. ``resubmit(item, result)``
    may return a new item to run instead of yielding that result (a worker asked for the files it
    lacks, ``eqtune.study.content``); None yields it. When ``stop()`` becomes
    true, nothing new is started, queued tasks are cancelled, and the tasks already running are
    waited for and yielded (so their work is saved), then the iteration ends. On any other exit
    (KeyboardInterrupt, an exception in the consumer) pending tasks are cancelled.
    """
    it = iter(items)
    pending: dict[cf.Future, Any] = {}
    stop = stop or (lambda: False)

    def fill() -> None:
        while len(pending) < max_in_flight and not stop():
            try:
                item = next(it)
            except StopIteration:
                return
            pending[executor.submit(fn, item)] = item

    def order(f: cf.Future) -> int:
        return getattr(pending[f], "index", 0)

    try:
        fill()
        while pending:
            if stop():
                for fut in [f for f in pending if f.cancel()]:
                    pending.pop(fut)
            done, _ = cf.wait(list(pending), timeout=0.2, return_when=cf.FIRST_COMPLETED)
            # deterministic hand-out order among simultaneously finished tasks
            for fut in sorted(done, key=order):
                item = pending.pop(fut)
                try:
                    result = fut.result()
                except cf.CancelledError:
                    continue
                again = resubmit(item, result) if resubmit is not None else None
                if again is not None:
                    pending[executor.submit(fn, again)] = again
                    continue
                yield item, result
            fill()
    finally:
        for fut in pending:
            fut.cancel()
