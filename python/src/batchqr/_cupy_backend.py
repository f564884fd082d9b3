"""batchqr.geqrf for cupy.ndarray: the CUDA backend, on CuPy's current stream, with
outputs and workspace from CuPy's memory pool."""

from __future__ import annotations

import cupy
import numpy as np

from . import _core
from ._batchqr import geqrf as _ext_geqrf
from ._core import COL_MAJOR, ROW_MAJOR, BatchQRError, GeqrfResult

_F32 = np.dtype(np.float32)
_Device = cupy.cuda.Device
_current_stream = cupy.cuda.get_current_stream


def _elem_strides(a):
    if a.dtype != _F32 or a.data.ptr % 4:
        return None
    out = []
    for s in a.strides:
        if s % 4:
            return None
        out.append(s // 4)
    return out


def _run(H, tau, device, layout, m, n, batch, ld, stride, tau_stride) -> None:
    ctx = _core.cuda_contexts.get(device)
    if ctx is None:
        ctx = _core.cuda_context(device)
    nbytes = _core.workspace_bytes(ctx, layout, m, n, batch, ld, stride, tau_stride)
    ws = cupy.empty(nbytes, dtype=cupy.uint8) if nbytes else None
    st = _ext_geqrf(ctx, layout, m, n, batch, ld, stride, tau_stride, H.data.ptr, tau.data.ptr,
                    ws.data.ptr if nbytes else 0, nbytes, _current_stream().ptr)
    if st:
        raise BatchQRError(st, "batchqr.geqrf", f"m={m}, n={n}, batch={batch}, CUDA device {device}")


def _compute(A, device) -> GeqrfResult:
    shape = A.shape
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    if not A.flags.c_contiguous and A.swapaxes(-1, -2).flags.c_contiguous:
        H = cupy.empty(shape[:-2] + (n, m), dtype=_F32).swapaxes(-1, -2)
        layout, ld = COL_MAJOR, m
    else:
        H = cupy.empty(shape, dtype=_F32)
        layout, ld = ROW_MAJOR, n
    tau = cupy.empty(shape[:-2] + (k,), dtype=_F32)
    if H.size == 0:
        return GeqrfResult(H, tau)
    cupy.copyto(H, A)
    _run(H, tau, device, layout, m, n, H.size // (m * n), ld, m * n, k)
    return GeqrfResult(H, tau)


def _into(A, H, tau, device) -> None:
    if H.size == 0:
        return
    hs = _elem_strides(H)
    ts = _elem_strides(tau)
    hd = _core.describe_matrices(H.shape, hs) if hs is not None else None
    td = _core.describe_vectors(tau.shape, ts) if ts is not None else None
    if hd is None or td is None:
        Hw, tw = _compute(A, device)
        cupy.copyto(H, Hw)
        cupy.copyto(tau, tw)
        return
    layout, ld, batch, stride = hd
    if not (H is A or (H.data.ptr == A.data.ptr and H.strides == A.strides)):
        cupy.copyto(H, A)
    _run(H, tau, device, layout, A.shape[-2], A.shape[-1], batch, ld, stride, td[1])


def geqrf(A, out=None) -> GeqrfResult:
    """batchqr.geqrf for a cupy.ndarray (see batchqr.geqrf)."""
    if A.dtype != _F32:
        raise _core.dtype_error(A.dtype)
    if A.ndim < 2:
        raise _core.ndim_error(A.shape)
    device = A.device.id
    with _Device(device):  # allocations, copies and the stream of A's device
        if out is None:
            return _compute(A, device)
        H, tau = _core.split_out(out)
        if not isinstance(H, cupy.ndarray) or not isinstance(tau, cupy.ndarray):
            raise TypeError("batchqr.geqrf: out=(H, tau) must be cupy arrays for a cupy input, got "
                            f"({type(H).__name__}, {type(tau).__name__})")
        _core.check_out_meta(A.shape, H.shape, tau.shape, H.dtype == _F32, tau.dtype == _F32, H.dtype, tau.dtype)
        if H.device.id != device or tau.device.id != device:
            raise ValueError(f"batchqr.geqrf: mixed devices: A is on CUDA device {device}, out[0] (H) on "
                             f"{H.device.id}, out[1] (tau) on {tau.device.id}; all must be on one device")
        _into(A, H, tau, device)
        return GeqrfResult(H, tau)
