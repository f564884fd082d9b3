"""Framework-neutral core of the batchqr Python package.

Design of the call path (kept lean on purpose: a 20 x 32 x 32 batch on a GPU takes a
few microseconds, so Python overhead must stay in the same range):

* ``geqrf`` dispatches on ``type(A)`` through a dict that is filled on first sight of
  a type; the framework module (torch, cupy, numpy) is imported once, then, never per
  call.
* Each framework adapter allocates H, tau and the workspace with the caller's
  framework (so memory comes from its caching allocator / memory pool, on the caller's
  device and stream), copies A into H with one framework copy (H in the layout that
  makes that copy a straight one), then makes ONE call into the extension with plain
  integers (handle, sizes, strides, pointers, stream). The library factors H in place.
* One library Context per (backend, device) is created on first use and cached for the
  life of the process (contexts are immutable and thread-safe).
* The workspace size depends only on (context, descriptor): it is cached per
  descriptor, so the hot path does not ask the library twice.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, NamedTuple

from . import _batchqr as _ext

ROW_MAJOR = 0
COL_MAJOR = 1
CPU_BACKEND = 0
CUDA_BACKEND = 1

_STATUS_NAMES = (
    "success",
    "invalid_handle",
    "invalid_size",
    "invalid_layout",
    "invalid_leading_dim",
    "invalid_stride",
    "null_pointer",
    "invalid_pointer",
    "insufficient_workspace",
    "backend_unavailable",
    "backend_error",
    "out_of_memory",
    "not_supported",
)


class BatchQRError(RuntimeError):
    """A batchqr library call failed; ``status`` names the library's Status code and
    the message is the library's ``status_string``."""

    def __init__(self, code: int, where: str = "batchqr", detail: str = ""):
        self.code = int(code)
        self.status = _STATUS_NAMES[code] if 0 <= code < len(_STATUS_NAMES) else f"status {code}"
        msg = f"{where}: {_ext.status_string(code)} [{self.status}]"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class GeqrfResult(NamedTuple):
    """(a, tau) as torch.geqrf returns them: ``a`` holds R on and above the diagonal and
    the Householder vectors below it; ``tau`` the reflector coefficients."""

    a: Any
    tau: Any


# --- contexts ---------------------------------------------------------------------------

_lock = threading.Lock()
_cpu_ctx = [0]          # [handle] once created
cuda_contexts: dict = {}  # device ordinal -> handle


def cpu_context() -> int:
    h = _cpu_ctx[0]
    if h:
        return h
    with _lock:
        if not _cpu_ctx[0]:
            st, h = _ext.create_context(CPU_BACKEND, -1, 0)
            if st:
                raise BatchQRError(st, "batchqr: creating the CPU context")
            _cpu_ctx[0] = h
    return _cpu_ctx[0]


def cuda_context(device: int) -> int:
    h = cuda_contexts.get(device)
    if h is not None:
        return h
    with _lock:
        h = cuda_contexts.get(device)
        if h is None:
            if not _ext.has_cuda_backend:
                raise BatchQRError(
                    9, "batchqr.geqrf",
                    f"the input is on CUDA device {device}, but this batchqr build has no CUDA backend "
                    "(nvcc was not found when it was built); pass a CPU array or rebuild with CUDA")
            st, h = _ext.create_context(CUDA_BACKEND, device, 0)
            if st:
                raise BatchQRError(st, "batchqr.geqrf", f"creating the CUDA context for device {device}")
            cuda_contexts[device] = h
    return h


# --- workspace sizes ----------------------------------------------------------------------

_ws_cache: dict = {}
_WS_CACHE_MAX = 4096


def workspace_bytes(ctx, layout, m, n, batch, ld, stride, tau_stride) -> int:
    key = (ctx, layout, m, n, batch, ld, stride, tau_stride)
    nbytes = _ws_cache.get(key)
    if nbytes is None:
        st, nbytes = _ext.workspace_size(ctx, layout, m, n, batch, ld, stride, tau_stride)
        if st:
            raise BatchQRError(st, "batchqr.geqrf", f"workspace size for m={m}, n={n}, batch={batch}")
        if len(_ws_cache) >= _WS_CACHE_MAX:
            _ws_cache.clear()
        _ws_cache[key] = nbytes
    return nbytes


# --- input checks shared by the adapters -----------------------------------------------------

def dtype_error(dtype, what: str = "A") -> TypeError:
    name = str(dtype)
    hint = ""
    if "float64" in name or name in ("double", "d", "f8"):
        hint = (" float64 is not downcast silently (torch.geqrf accepts float64, batchqr does not):"
                " convert explicitly with A.float() / A.astype(numpy.float32) if FP32 accuracy is enough.")
    elif "complex" in name:
        hint = " Complex matrices are not supported."
    else:
        hint = " Convert explicitly, e.g. A.float() / A.astype(numpy.float32)."
    return TypeError(f"batchqr.geqrf: {what} has dtype {name}; batchqr requires float32.{hint}")


def ndim_error(shape, what: str = "A") -> ValueError:
    return ValueError(
        f"batchqr.geqrf: {what} must have at least 2 dimensions (..., m, n), got shape {tuple(shape)}")


def out_shapes(shape):
    """The shapes of H and tau for an input of shape (..., m, n)."""
    m, n = shape[-2], shape[-1]
    return tuple(shape), tuple(shape[:-2]) + (min(m, n),)


def split_out(out):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError("batchqr.geqrf: out must be a tuple (H, tau) of two arrays")
    return out[0], out[1]


def check_out_meta(shape, h_shape, tau_shape, h_dtype_ok, tau_dtype_ok, h_dtype, tau_dtype):
    want_h, want_tau = out_shapes(shape)
    if not h_dtype_ok:
        raise dtype_error(h_dtype, "out[0] (H)")
    if not tau_dtype_ok:
        raise dtype_error(tau_dtype, "out[1] (tau)")
    if tuple(h_shape) != want_h:
        raise ValueError(f"batchqr.geqrf: out[0] (H) has shape {tuple(h_shape)}, expected {want_h} (the shape of A)")
    if tuple(tau_shape) != want_tau:
        raise ValueError(f"batchqr.geqrf: out[1] (tau) has shape {tuple(tau_shape)}, expected {want_tau}")


# --- strided descriptors (for out= arrays of arbitrary strides) -------------------------------

def _collapse_batch(bshape, bstrides, span):
    """(batch, stride) when the batch dims form one arithmetic progression of
    non-overlapping blocks of `span` elements, else None. Strides in elements."""
    batch = 1
    stride = None
    expected = None
    for size, st in zip(reversed(bshape), reversed(bstrides)):
        if size == 1:
            continue
        if stride is None:
            stride = st
        elif st != expected:
            return None
        expected = st * size
        batch *= size
    if stride is None:
        stride = span
    if stride < span:
        return None
    return batch, stride


def describe_matrices(shape, strides):
    """Library descriptor (layout, ld, batch, stride) for a non-empty strided array of
    shape (..., m, n) with element strides, or None if the library cannot address it."""
    m, n = shape[-2], shape[-1]
    sm, sn = strides[-2], strides[-1]
    if (n == 1 or sn == 1) and (m == 1 or sm >= n):
        layout, ld = ROW_MAJOR, (sm if m > 1 else n)
        span = (m - 1) * ld + n
    elif (m == 1 or sm == 1) and (n == 1 or sn >= m):
        layout, ld = COL_MAJOR, (sn if n > 1 else m)
        span = (n - 1) * ld + m
    else:
        return None
    bs = _collapse_batch(shape[:-2], strides[:-2], span)
    if bs is None:
        return None
    return layout, ld, bs[0], bs[1]


def describe_vectors(shape, strides):
    """(batch, stride) for a non-empty strided array (..., k) with unit inner stride."""
    k = shape[-1]
    if k != 1 and strides[-1] != 1:
        return None
    return _collapse_batch(shape[:-1], strides[:-1], k)


# --- dispatch -------------------------------------------------------------------------------

_handlers: dict = {}


def _resolve(A):
    t = type(A)
    mods = sys.modules
    torch = mods.get("torch")
    if torch is not None and isinstance(A, torch.Tensor):
        from . import _torch_backend as backend
    else:
        cupy = mods.get("cupy")
        if cupy is not None and isinstance(A, cupy.ndarray):
            from . import _cupy_backend as backend
        else:
            numpy = mods.get("numpy")
            if numpy is not None and isinstance(A, numpy.ndarray):
                from . import _numpy_backend as backend
            else:
                from . import _dlpack_backend as backend

                if not backend.is_dlpack(A):
                    raise TypeError(
                        "batchqr.geqrf: expected a torch.Tensor, cupy.ndarray, numpy.ndarray or another DLPack "
                        f"array, got {t.__module__}.{t.__qualname__}; convert it first "
                        "(e.g. numpy.asarray(A, dtype=numpy.float32))")
    _handlers[t] = backend.geqrf
    return backend.geqrf


def geqrf(A, *, out=None):
    """Householder QR of every matrix of A (shape (..., m, n), float32), as torch.geqrf.

    Returns ``GeqrfResult(a=H, tau=tau)`` in A's framework and on A's device; H has A's
    shape, tau has shape (..., min(m, n)); A is not modified. With ``out=(H, tau)`` the
    results are written into the given arrays (same framework, device, shapes, float32)
    and returned. On CUDA the work is enqueued on the caller's current stream without
    synchronizing; on the CPU (NumPy arrays, CPU tensors) it runs LAPACK on host threads.

    Other DLPack arrays (JAX, TensorFlow, Array API libraries) are read without a copy
    through NumPy (host memory) or PyTorch, else CuPy (CUDA memory; on that framework's
    current stream); their results come back through the input's Array API namespace
    (``A.__array_namespace__().from_dlpack``) where it has one, else as that framework's
    arrays. ``out=`` is not taken for them.
    """
    handler = _handlers.get(type(A))
    if handler is None:
        handler = _resolve(A)
    return handler(A, out)


def cuda_available() -> bool:
    """True when this build has the CUDA backend and a CUDA device is visible."""
    return bool(_ext.cuda_available())
