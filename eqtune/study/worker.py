"""The set-up of a process that computes study combinations: malloc behaviour and BLAS threads.

``prepare_worker()`` runs once per process, from the first task a process receives (so it holds on
any executor: a local process pool, a dask worker started by anyone, the serial coordinator). It:

* **sets glibc's malloc thresholds** (``mallopt``): ``M_MMAP_THRESHOLD`` = 32 MiB and
  ``M_TRIM_THRESHOLD`` = 256 MiB. Why: dask.distributed's nanny puts ``MALLOC_TRIM_THRESHOLD_=65536``
  into every worker's environment (``distributed.nanny.pre-spawn-environ``, to hand freed memory
  back to the OS, see https://distributed.dask.org/en/stable/worker-memory.html#automatically-trim-memory).
  Setting *any* of the trim/mmap parameters switches off glibc's dynamic mmap threshold (glibc
  ``malloc/malloc.c``, ``mp_.no_dyn_threshold``; mallopt(3) "M_MMAP_THRESHOLD"), so every temporary
  array above 128 KiB is then ``mmap``'d and ``munmap``'d on each allocation, and the kernel zero-fills
  its pages again each time. The eye engine allocates many such arrays per evaluation: measured on a
  study task, 258,000 minor page faults and 0.67 s system time per combination with the variable set
  against 1,650 and 0.03 s without (``benchmarks/bench_study.py`` reports the ratio in every run).
  32 MiB is glibc's own ceiling for the dynamic threshold (``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit),
  so the engine's arrays come from the heap as they would in a plain process; the 256 MiB trim
  threshold still returns a heap top larger than that to the OS, so a worker's resident memory stays
  bounded (a study task peaks at a few hundred MiB).
  ``M_TOP_PAD`` = 64 MiB for the same reason on a dask worker, which computes in a thread of its
  own: glibc serves a non-main thread from a secondary arena built of 64 MiB heaps, and deletes a
  heap as soon as its top chunk covers all of it (``heap_trim`` in glibc ``malloc/arena.c``) unless
  ``top_pad`` bytes must be kept, so without the pad the engine's arrays re-map whole heaps. Measured
  (minor page faults per combination, a count that does not depend on the machine's load): main
  thread ~1,200, a worker thread ~2,100-3,200 without the pad, ~1,500 with it, ~1,200 with one arena.
* **limits the BLAS/OpenMP pools to one thread** (threadpoolctl): a study is parallel across
  combinations, and a worker whose BLAS starts a thread per core would fight its siblings.

Both are per-process settings that stay for the life of the worker; ``worker_settings()`` reports
what was applied (the benchmark and the tests read it). ``EQTUNE_STUDY_MALLOC=leave`` in a worker's
environment leaves malloc as the worker was started (the benchmark's with/without comparison).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
from typing import Any

#: mallopt(3) parameter numbers (glibc malloc.h)
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 256 * 1024 * 1024
TOP_PAD_BYTES = 64 * 1024 * 1024

#: environment variables that size the BLAS/OpenMP thread pools; read when the library loads
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

_LOCK = threading.Lock()
_SETTINGS: dict[str, Any] | None = None
_BLAS_LIMIT: Any = None  # the threadpoolctl limiter, kept alive so its limits stay in force


def _glibc() -> Any | None:
    """glibc through ctypes, or None (musl, macOS, Windows: no mallopt thresholds to set)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        version = libc.gnu_get_libc_version
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_char_p
    return libc if version() else None


def set_malloc_thresholds() -> dict[str, Any]:
    """Apply the mallopt thresholds above (glibc only); report what was set and the environment seen."""
    seen = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    if os.environ.get("EQTUNE_STUDY_MALLOC") == "leave":  # diagnostic: measure the worker as started
        return {"malloc": "left as started (EQTUNE_STUDY_MALLOC=leave)", "env_trim_threshold": seen}
    libc = _glibc()
    if libc is None:
        return {"malloc": "not glibc: left as is", "env_trim_threshold": seen}
    wanted = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES), (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
              (M_TOP_PAD, TOP_PAD_BYTES))
    ok = all([bool(libc.mallopt(param, value)) for param, value in wanted])
    return {"malloc": "set" if ok else "mallopt refused", "mmap_threshold": MMAP_THRESHOLD_BYTES,
            "trim_threshold": TRIM_THRESHOLD_BYTES, "top_pad": TOP_PAD_BYTES, "env_trim_threshold": seen}


def limit_blas_threads() -> None:
    """One BLAS/OpenMP thread in this process, for the life of the process."""
    global _BLAS_LIMIT
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn (a dependency) brings threadpoolctl
        return
    import numpy  # noqa: F401 - load the BLAS, so that there is a pool to limit

    _BLAS_LIMIT = threadpool_limits(limits=1)


def blas_threads() -> int:
    """The largest thread-pool size of the BLAS/OpenMP libraries loaded in this process (after
    importing numpy); 0 when threadpoolctl is missing. A prepared worker reports 1."""
    import numpy  # noqa: F401 - its BLAS is what a study's numpy code would use

    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return 0
    return max((int(i.get("num_threads") or 0) for i in threadpool_info()), default=0)


def prepare_worker() -> dict[str, Any]:
    """Once per process: malloc thresholds and one BLAS thread (see the module docstring)."""
    global _SETTINGS
    with _LOCK:
        if _SETTINGS is None:
            settings = set_malloc_thresholds()
            limit_blas_threads()
            settings["blas_threads"] = blas_threads()
            settings["pid"] = os.getpid()
            _SETTINGS = settings
        return dict(_SETTINGS)


def worker_settings() -> dict[str, Any]:
    """What ``prepare_worker`` applied in this process (it runs now if it has not yet)."""
    return prepare_worker()


def one_blas_thread_scope() -> contextlib.AbstractContextManager[Any]:
    """One BLAS thread for the duration of a ``with`` block (the serial executor, in the caller's process)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)
