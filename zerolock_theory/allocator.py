"""Keep freed memory in the process: glibc's malloc settings for the probes' large temporaries.

The probes' maths runs over float64 arrays of [K+1, N, V] (10 MiB on the embedded model), many
per probed step. Under glibc's defaults each such array is either mapped fresh from the kernel
(above the mmap threshold) or returned to it when the heap's top is freed (above the trim
threshold), so every new array faults its pages in again: a ``verify --quick`` process took 63
million minor page faults and 178 s of system time against 654 s of user time. Raising the
mmap threshold to its maximum (32 MiB on 64-bit glibc), the trim threshold to 2 GiB and the top
pad to 256 MiB keeps freed pages for the next array. What the process computes is unchanged;
only when pages go back to the kernel changes (freed memory is reused, so peak memory holds).

``keep_freed_memory()`` applies the settings to this process (``mallopt``) and, through the
``MALLOC_*_`` environment variables, to every process it starts (workers, pipeline stages, the
spawned pilot chains), each read by glibc at start. A variable the user already set is left as it
is and not overridden here. Elsewhere than glibc (macOS, musl, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["SETTINGS", "keep_freed_memory"]

SETTINGS: dict[str, tuple[int, int]] = {
    # environment variable: (mallopt parameter, value)
    "MALLOC_MMAP_THRESHOLD_": (-3, 32 << 20),  # M_MMAP_THRESHOLD, glibc's upper limit on 64-bit
    "MALLOC_TRIM_THRESHOLD_": (-1, 2 << 30),  # M_TRIM_THRESHOLD
    "MALLOC_TOP_PAD_": (-2, 256 << 20),  # M_TOP_PAD
}
"""The settings, by the environment variable that carries each to child processes."""


def _glibc() -> ctypes.CDLL | None:
    """This process's C library when it is glibc (it has ``mallopt`` and says its version), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


def keep_freed_memory() -> dict[str, int]:
    """Apply ``SETTINGS`` to this process and its future children; returns those applied here
    (empty where the C library is not glibc, and without the ones the user's environment set)."""
    libc = _glibc()
    if libc is None:
        return {}
    applied = {}
    for name, (param, value) in SETTINGS.items():
        if name in os.environ:  # the user's choice, already read by glibc at this process's start
            continue
        if libc.mallopt(param, value) == 1:
            os.environ[name] = str(value)
            applied[name] = value
    return applied
