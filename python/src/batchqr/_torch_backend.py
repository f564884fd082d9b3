"""batchqr.geqrf for torch.Tensor (imported on the first tensor seen).

Hot path for a tensor (see _core's docstring for the overall design): check dtype and
rank, allocate H / tau / workspace with torch.empty (caching allocator, current stream),
one ``H.copy_(A)``, one extension call with integers. The context and the workspace
size come from caches; the current stream comes from torch's raw-stream getter (no
torch.cuda.Stream object is built per call).

Calls made while torch.compile traces, or with an input that requires grad, go
through the registered custom operator torch.ops.batchqr.geqrf instead (see
batchqr/torch.py), so that tracing sees an opaque op with a fake implementation and
autograd behaves as for torch.geqrf (no derivative: backward raises).
"""

from __future__ import annotations

import torch

from . import _core
from ._batchqr import geqrf as _ext_geqrf
from ._core import COL_MAJOR, ROW_MAJOR, BatchQRError, GeqrfResult

_f32 = torch.float32
_u8 = torch.uint8
_empty = torch.empty
_cuda_contexts = _core.cuda_contexts
_ws_cache = _core._ws_cache

try:  # an int, without building a torch.cuda.Stream object (what Inductor's code uses)
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # CPU-only builds of torch, or a future rename
    def _raw_stream(device: int) -> int:
        return torch.cuda.current_stream(device).cuda_stream

try:
    _is_compiling = torch.compiler.is_compiling
except AttributeError:  # torch < 2.3
    def _is_compiling() -> bool:
        return False

_ops = None


def _op_namespace():
    """torch.ops.batchqr with the operators registered (imports batchqr.torch once)."""
    global _ops
    if _ops is None:
        from . import torch as _register  # noqa: F401  (registers torch.ops.batchqr.*)
        _ops = torch.ops.batchqr
    return _ops


def check_input(A) -> None:
    if A.dtype is not _f32:
        raise _core.dtype_error(A.dtype)
    if A.dim() < 2:
        raise _core.ndim_error(A.shape)


def check_out(A, out):
    H, tau = _core.split_out(out)
    if not isinstance(H, torch.Tensor) or not isinstance(tau, torch.Tensor):
        raise TypeError("batchqr.geqrf: out=(H, tau) must be torch tensors for a torch input, got "
                        f"({type(H).__name__}, {type(tau).__name__})")
    _core.check_out_meta(A.shape, H.shape, tau.shape, H.dtype is _f32, tau.dtype is _f32, H.dtype, tau.dtype)
    dev = A.device
    if H.device != dev or tau.device != dev:
        raise ValueError(f"batchqr.geqrf: mixed devices: A is on {dev}, out[0] (H) on {H.device}, "
                         f"out[1] (tau) on {tau.device}; all must be on one device")
    if torch.is_grad_enabled() and (A.requires_grad or H.requires_grad or tau.requires_grad):
        raise RuntimeError("batchqr.geqrf(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad")
    return H, tau


def _run(A, H, tau, layout, m, n, batch, ld, stride, tau_stride) -> None:
    """Factors H (already holding A) in place into H and tau."""
    if A.is_cuda:
        d = A.get_device()
        ctx = _cuda_contexts.get(d)
        if ctx is None:
            ctx = _core.cuda_context(d)
        stream = _raw_stream(d)
    else:
        ctx = _core.cpu_context()
        stream = 0
    key = (ctx, layout, m, n, batch, ld, stride, tau_stride)
    nbytes = _ws_cache.get(key)
    if nbytes is None:
        nbytes = _core.workspace_bytes(ctx, layout, m, n, batch, ld, stride, tau_stride)
    if nbytes:
        ws = _empty(nbytes, dtype=_u8, device=H.device)
        wp = ws.data_ptr()
    else:
        wp = 0
    st = _ext_geqrf(ctx, layout, m, n, batch, ld, stride, tau_stride, H.data_ptr(), tau.data_ptr(), wp, nbytes,
                    stream)
    if st:
        raise BatchQRError(st, "batchqr.geqrf", f"m={m}, n={n}, batch={batch}, device {A.device}")


def compute(A, adaptive: bool = True):
    """Fresh (H, tau) for a checked float32 tensor A of rank >= 2 (no autograd, no tracing).

    With adaptive=True, an A whose last two dims are a transposed view of a packed batch
    (A.mT contiguous, e.g. A = B.mT) gets a column-major H, so the copy is a straight one;
    otherwise H is contiguous (row-major). The custom operator uses adaptive=False so its
    output strides never depend on the input's (its fake implementation says contiguous).
    """
    shape = A.shape
    m = shape[-2]
    n = shape[-1]
    k = m if m < n else n
    dev = A.device
    if not A.is_cuda and dev.type != "cpu":
        if A.is_meta:  # shapes only: the fake implementation
            return _op_namespace().geqrf(A)
        raise ValueError(f"batchqr.geqrf: tensors on {dev} are not supported (CUDA or CPU only)")
    if adaptive and not A.is_contiguous() and A.mT.is_contiguous():
        H = _empty(shape[:-2] + (n, m), dtype=_f32, device=dev).mT
        layout, ld = COL_MAJOR, m
    else:
        H = _empty(shape, dtype=_f32, device=dev)
        layout, ld = ROW_MAJOR, n
    tau = _empty(shape[:-2] + (k,), dtype=_f32, device=dev)
    numel = H.numel()
    if numel == 0:
        return GeqrfResult(H, tau)
    H.copy_(A)
    _run(A, H, tau, layout, m, n, numel // (m * n), ld, m * n, k)
    return GeqrfResult(H, tau)


def into(A, H, tau) -> None:
    """Writes the factors of A into the checked out tensors H and tau. Factors in place
    when the library can address H and tau as they are, else through temporaries."""
    shape = A.shape
    m = shape[-2]
    n = shape[-1]
    if H.numel() == 0:
        return
    hd = _core.describe_matrices(H.shape, H.stride())
    td = _core.describe_vectors(tau.shape, tau.stride())
    if hd is None or td is None:
        Hw, tw = compute(A, adaptive=False)
        H.copy_(Hw)
        tau.copy_(tw)
        return
    layout, ld, batch, stride = hd
    if H.data_ptr() != A.data_ptr() or H.stride() != A.stride():
        H.copy_(A)
    _run(A, H, tau, layout, m, n, batch, ld, stride, td[1])


def geqrf(A, out=None):
    """batchqr.geqrf for a torch.Tensor (see batchqr.geqrf)."""
    if A.dtype is not _f32:
        raise _core.dtype_error(A.dtype)
    if A.dim() < 2:
        raise _core.ndim_error(A.shape)
    if out is not None:
        H, tau = check_out(A, out)
        if _is_compiling():
            _op_namespace().geqrf_out(A, H, tau)
        else:
            into(A, H, tau)
        return GeqrfResult(H, tau)
    if A.requires_grad or _is_compiling():
        H, tau = _op_namespace().geqrf(A)
        return GeqrfResult(H, tau)
    return compute(A)
