"""batchqr as PyTorch custom operators: works under torch.compile and CUDA graph capture.

    import batchqr.torch
    H, tau = batchqr.torch.geqrf(A)                 # torch.ops.batchqr.geqrf
    batchqr.torch.geqrf(A, out=(H, tau))            # torch.ops.batchqr.geqrf_out

Operators (namespace "batchqr"):
  geqrf(Tensor A) -> (Tensor H, Tensor tau)        H contiguous, tau (..., min(m, n))
  geqrf_out(Tensor A, Tensor(a!) H, Tensor(b!) tau) -> ()

Both have fake (meta) implementations giving output shapes, dtypes and strides, so
torch.compile traces through them without a graph break, and both run on the current
CUDA stream with workspace from PyTorch's caching allocator and no synchronization, so
they can be captured in a CUDA graph (torch.cuda.graph, or mode="reduce-overhead").
No derivative is defined (as for torch.geqrf): backward through them raises.
"""

from typing import Tuple

import torch

from . import _torch_backend as _tb
from ._core import GeqrfResult

__all__ = ["geqrf"]

_NS = "batchqr"


def _min_size(m, n):
    return torch.sym_min(m, n) if hasattr(torch, "sym_min") else min(m, n)


if not hasattr(torch.ops.batchqr, "geqrf"):  # guard against a second registration (module reload)

    @torch.library.custom_op(f"{_NS}::geqrf", mutates_args=())
    def _geqrf_op(A: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        _tb.check_input(A)
        H, tau = _tb.compute(A, adaptive=False)
        return H, tau

    @_geqrf_op.register_fake
    def _geqrf_fake(A):
        _tb.check_input(A)
        shape = A.shape
        k = _min_size(shape[-2], shape[-1])
        H = A.new_empty(shape)
        tau = A.new_empty(tuple(shape[:-2]) + (k,))
        return H, tau

    @torch.library.custom_op(f"{_NS}::geqrf_out", mutates_args=("H", "tau"))
    def _geqrf_out_op(A: torch.Tensor, H: torch.Tensor, tau: torch.Tensor) -> None:
        _tb.check_input(A)
        _tb.into(A, H, tau)

    @_geqrf_out_op.register_fake
    def _geqrf_out_fake(A, H, tau):
        return None


def geqrf(A: torch.Tensor, *, out=None) -> GeqrfResult:
    """torch.geqrf through batchqr's custom operator (traceable, capturable).

    A: float32 tensor (..., m, n) on CUDA or the CPU. Returns GeqrfResult(a=H, tau).
    out=(H, tau): float32 tensors of the result shapes on A's device, written in place.
    """
    if not isinstance(A, torch.Tensor):
        raise TypeError(f"batchqr.torch.geqrf: expected a torch.Tensor, got {type(A).__module__}.{type(A).__qualname__}")
    _tb.check_input(A)
    if out is None:
        H, tau = torch.ops.batchqr.geqrf(A)
        return GeqrfResult(H, tau)
    H, tau = _tb.check_out(A, out)
    torch.ops.batchqr.geqrf_out(A, H, tau)
    return GeqrfResult(H, tau)

