"""batchqr: batched Householder QR of float32 matrices, LAPACK geqrf output (H, tau).

    import batchqr
    H, tau = batchqr.geqrf(A)       # torch.Tensor (CUDA/CPU), cupy.ndarray, numpy.ndarray, other DLPack arrays

``batchqr.geqrf`` follows torch.geqrf: A has shape (..., m, n); H has A's shape (R on and
above the diagonal, Householder vectors below), tau has shape (..., min(m, n)); A is not
modified; results are in A's framework on A's device. Only float32 is accepted (a
TypeError names any other dtype, float64 included: batchqr never downcasts silently).

Submodules (imported on first access):
  batchqr.torch    PyTorch custom operators (torch.compile, CUDA graphs, out=)
  batchqr.testing  the contract's input generators and FP64 accuracy checkers
"""

from ._batchqr import __version__, has_cuda_backend
from ._core import BatchQRError, GeqrfResult, cuda_available, geqrf

__all__ = ["geqrf", "cuda_available", "has_cuda_backend", "BatchQRError", "GeqrfResult", "__version__"]


def __getattr__(name):
    if name in ("torch", "testing"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
