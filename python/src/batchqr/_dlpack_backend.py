"""batchqr.geqrf for other DLPack arrays (JAX, TensorFlow, an Array API library, ...).

The input is viewed without a copy through the DLPack protocol by a framework batchqr has
an adapter for: NumPy for host memory, PyTorch (else CuPy) for CUDA memory, whose
``from_dlpack`` also orders the producer's stream before the consumer's. That view is
factored by its adapter, and the results go back to the input's library through its Array
API namespace (``A.__array_namespace__().from_dlpack``) where it has one; otherwise they
stay in the viewing framework (NumPy arrays, torch tensors or CuPy arrays), which the
docstring of ``batchqr.geqrf`` states.
"""

from __future__ import annotations

import importlib
import sys

from . import _core
from ._core import GeqrfResult

# DLPack device types (dlpack.h): host memory and the CUDA kinds.
_KDL_CPU = 1
_KDL_CUDA = 2
_KDL_CUDA_HOST = 3
_KDL_CUDA_MANAGED = 13
_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm",
                 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI"}


def is_dlpack(A) -> bool:
    return hasattr(A, "__dlpack__") and hasattr(A, "__dlpack_device__")


def _from_dlpack(mod, A):
    try:
        return mod.from_dlpack(A)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"batchqr.geqrf: {mod.__name__} could not read {type(A).__module__}.{type(A).__qualname__} "
                        f"through DLPack ({e}); batchqr takes float32 arrays") from e


def _view(A):
    """A zero-copy view of A in a framework batchqr has an adapter for."""
    device_type = int(A.__dlpack_device__()[0])
    if device_type in (_KDL_CPU, _KDL_CUDA_HOST):
        return _from_dlpack(importlib.import_module("numpy"), A)
    if device_type in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        for name in ("torch", "cupy"):
            try:
                mod = sys.modules.get(name) or importlib.import_module(name)
            except ImportError:
                continue
            return _from_dlpack(mod, A)
        raise TypeError(
            f"batchqr.geqrf: a CUDA array of {type(A).__module__}.{type(A).__qualname__} is read through PyTorch "
            "or CuPy, and neither is installed")
    name = _DEVICE_NAMES.get(device_type, f"DLPack device type {device_type}")
    raise TypeError(f"batchqr.geqrf: {type(A).__module__}.{type(A).__qualname__} lives on a {name} device; "
                    "batchqr runs on the CPU and on CUDA devices")


def geqrf(A, out=None) -> GeqrfResult:
    """batchqr.geqrf for an array that only speaks DLPack (see batchqr.geqrf)."""
    if out is not None:
        raise TypeError(
            f"batchqr.geqrf: out= takes torch, CuPy or NumPy arrays, not {type(A).__module__}.{type(A).__qualname__} "
            "(DLPack views are read-only in general); call without out=")
    H, tau = _core.geqrf(_view(A))
    namespace = getattr(A, "__array_namespace__", None)
    if namespace is None:
        return GeqrfResult(H, tau)
    xp = namespace()
    return GeqrfResult(xp.from_dlpack(H), xp.from_dlpack(tau))
