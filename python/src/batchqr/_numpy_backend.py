"""batchqr.geqrf for numpy.ndarray: the CPU backend (LAPACK on host threads)."""

from __future__ import annotations

import numpy as np

from . import _core
from ._batchqr import geqrf as _ext_geqrf
from ._core import COL_MAJOR, ROW_MAJOR, BatchQRError, GeqrfResult

_F32 = np.dtype(np.float32)


def _is_f32(dtype) -> bool:
    # Accepts float32 of either byte order (the copy into H converts to native order).
    return dtype.kind == "f" and dtype.itemsize == 4


def _ptr(a) -> int:
    return a.__array_interface__["data"][0]


def _elem_strides(a):
    """Strides in elements, or None when a stride is not a multiple of 4 bytes or the
    data is misaligned or not in native byte order."""
    if a.dtype != _F32 or _ptr(a) % 4:
        return None
    out = []
    for s in a.strides:
        if s % 4:
            return None
        out.append(s // 4)
    return out


def _run(H, tau, layout, m, n, batch, ld, stride, tau_stride) -> None:
    ctx = _core.cpu_context()
    nbytes = _core.workspace_bytes(ctx, layout, m, n, batch, ld, stride, tau_stride)
    ws = np.empty(nbytes, dtype=np.uint8) if nbytes else None
    st = _ext_geqrf(ctx, layout, m, n, batch, ld, stride, tau_stride, _ptr(H), _ptr(tau),
                    _ptr(ws) if nbytes else 0, nbytes, 0)
    if st:
        raise BatchQRError(st, "batchqr.geqrf", f"m={m}, n={n}, batch={batch}, CPU")


def compute(A) -> GeqrfResult:
    shape = A.shape
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    if not A.flags.c_contiguous and A.swapaxes(-1, -2).flags.c_contiguous:
        H = np.empty(shape[:-2] + (n, m), dtype=_F32).swapaxes(-1, -2)
        layout, ld = COL_MAJOR, m
    else:
        H = np.empty(shape, dtype=_F32)
        layout, ld = ROW_MAJOR, n
    tau = np.empty(shape[:-2] + (k,), dtype=_F32)
    if H.size == 0:
        return GeqrfResult(H, tau)
    np.copyto(H, A)
    _run(H, tau, layout, m, n, H.size // (m * n), ld, m * n, k)
    return GeqrfResult(H, tau)


def into(A, H, tau) -> None:
    if H.size == 0:
        return
    hs = _elem_strides(H)
    ts = _elem_strides(tau)
    hd = _core.describe_matrices(H.shape, hs) if hs is not None else None
    td = _core.describe_vectors(tau.shape, ts) if ts is not None else None
    if hd is None or td is None:
        Hw, tw = compute(A)
        np.copyto(H, Hw)
        np.copyto(tau, tw)
        return
    layout, ld, batch, stride = hd
    m, n = A.shape[-2], A.shape[-1]
    if not (H is A or (_ptr(H) == _ptr(A) and H.strides == A.strides and H.dtype == A.dtype)):
        np.copyto(H, A)
    _run(H, tau, layout, m, n, batch, ld, stride, td[1])


def geqrf(A, out=None) -> GeqrfResult:
    """batchqr.geqrf for a numpy.ndarray (see batchqr.geqrf)."""
    if not _is_f32(A.dtype):
        raise _core.dtype_error(A.dtype)
    if A.ndim < 2:
        raise _core.ndim_error(A.shape)
    if out is None:
        return compute(A)
    H, tau = _core.split_out(out)
    if not isinstance(H, np.ndarray) or not isinstance(tau, np.ndarray):
        raise TypeError("batchqr.geqrf: out=(H, tau) must be numpy arrays for a numpy input, got "
                        f"({type(H).__name__}, {type(tau).__name__})")
    _core.check_out_meta(A.shape, H.shape, tau.shape, _is_f32(H.dtype), _is_f32(tau.dtype), H.dtype, tau.dtype)
    if not H.flags.writeable or not tau.flags.writeable:
        raise ValueError("batchqr.geqrf: out arrays must be writeable")
    into(A, H, tau)
    return GeqrfResult(H, tau)
