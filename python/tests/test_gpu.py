"""GPU tests: torch CUDA tensors, CuPy arrays, CUDA graphs, torch.compile, streams.

Marked `gpu`; skipped with a reason when PyTorch, a CUDA device, or batchqr's CUDA
backend is missing. Run with: python3 -m pytest python/tests -m gpu
"""

import time

import numpy as np
import pytest

import batchqr
from batchqr import testing as bt

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_reason = None
if torch is None:
    _reason = "PyTorch is not installed"
elif not torch.cuda.is_available():
    _reason = "torch.cuda is not available (no CUDA device)"
elif not batchqr.has_cuda_backend:
    _reason = "this batchqr build has no CUDA backend (built without nvcc)"
elif not batchqr.cuda_available():
    _reason = "batchqr's CUDA backend sees no device"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_reason is not None, reason=_reason or "")]

if _reason is None:
    import batchqr.torch  # noqa: F401  (registers torch.ops.batchqr.*)

DISTS = bt.distributions()


def _gen(dist, m, n, batch, seed, cond=1.0, device="cuda"):
    return torch.from_numpy(bt.generate(dist, m, n, batch=batch, cond=cond, seed=seed)).to(device)


def _cond(dist):
    return {"dense": 2.0, "mixed": 2.0, "upper": 1.0, "band": 1.0}.get(dist, 0.0)


# Tolerances for |R_batchqr - R_torch| / ||A||_1 by distribution: R is well determined for
# the well-conditioned cases; near rank-deficient inputs have trailing R entries set by
# rounding alone, so only a loose bound (still far below ||A||) holds there.
_R_TOL = {"dense": 1e-4, "upper": 1e-4, "diagonal": 1e-5, "band": 1e-4, "rowscale": 1e-4}


@pytest.mark.parametrize("shape", [(20, 32, 32), (4, 100, 100), (3, 64, 24), (3, 24, 64), (2, 257, 257),
                                   (1, 1, 1), (5, 2, 3)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dist", DISTS)
def test_gate_and_agreement(dist, shape, seed):
    batch, m, n = shape
    A = _gen(dist, m, n, batch, seed, cond=_cond(dist))
    A0 = A.clone()
    H, tau = batchqr.geqrf(A)
    assert H.is_cuda and H.device == A.device and H.shape == A.shape and tau.shape == (batch, min(m, n))
    assert torch.equal(A, A0), f"input modified, seed={seed}"
    rep = bt.check_torch(A, H, tau)
    assert rep.passed, f"{dist} {shape} seed={seed}: {rep}"
    Ht, taut = torch.geqrf(A)
    anorm = A.abs().sum(-2).amax(-1).clamp_min(1e-30)
    dR = ((torch.triu(H) - torch.triu(Ht)).abs().amax((-2, -1)) / anorm).max().item()
    assert dR <= _R_TOL.get(dist, 1e-2), f"{dist} {shape} seed={seed}: |dR|/||A|| = {dR:.3g}"


@pytest.mark.parametrize("bdims", [(), (3,), (2, 3)], ids=str)
def test_batch_dims_and_views(bdims, seed):
    A = _gen("dense", 40, 30, bdims, seed)
    for X in (A, A.mT, A[..., ::2, 1:]):
        X0 = X.clone()
        H, tau = batchqr.geqrf(X)
        assert torch.equal(X, X0)
        assert H.shape == X.shape and tau.shape == X.shape[:-2] + (min(X.shape[-2:]),)
        rep = bt.check_torch(X, H, tau)
        assert rep.passed, f"{tuple(X.stride())} seed={seed}: {rep}"
        Hc, _ = batchqr.geqrf(X.contiguous())
        torch.testing.assert_close(H, Hc, rtol=0, atol=1e-4 * float(X.abs().max()))


def test_empty_and_cpu_gpu_mix(seed):
    for shape in [(0, 5, 5), (3, 0, 4), (3, 4, 0)]:
        H, tau = batchqr.geqrf(torch.zeros(shape, device="cuda"))
        assert H.shape == shape and H.is_cuda
    A = _gen("dense", 8, 8, 2, seed)
    with pytest.raises(ValueError, match="mixed devices"):
        batchqr.geqrf(A, out=(torch.empty(2, 8, 8), torch.empty(2, 8, device="cuda")))
    with pytest.raises(ValueError, match="mixed devices"):
        batchqr.torch.geqrf(A, out=(torch.empty(2, 8, 8, device="cuda"), torch.empty(2, 8)))
    with pytest.raises(TypeError, match="float64"):
        batchqr.geqrf(A.double())
    # The same input on the CPU backend passes the gate too.
    H, tau = batchqr.geqrf(A.cpu())
    assert not H.is_cuda and bt.check_torch(A.cpu(), H, tau).passed


def test_out(seed):
    A = _gen("mixed", 64, 64, 6, seed, cond=2.0)
    ref = batchqr.geqrf(A)
    for H, tau in [(torch.empty_like(A), torch.empty(6, 64, device="cuda")),
                   (torch.empty(6, 64, 64, device="cuda").mT, torch.empty(6, 64, device="cuda")),
                   (torch.empty(6, 64, 80, device="cuda")[..., :64], torch.empty(6, 70, device="cuda")[:, :64]),
                   (torch.empty(6, 64, 128, device="cuda")[..., ::2], torch.empty(6, 64, device="cuda"))]:
        for fn in (batchqr.geqrf, batchqr.torch.geqrf):
            H.fill_(float("nan"))
            res = fn(A, out=(H, tau))
            assert res.a is H and res.tau is tau
            rep = bt.check_torch(A, H, tau)
            assert rep.passed, f"{tuple(H.stride())} seed={seed}: {rep}"
            torch.testing.assert_close(H, ref.a, rtol=0, atol=1e-4)


def test_custom_op_matches_direct(seed):
    A = _gen("dense", 48, 48, 8, seed)
    H1, t1 = batchqr.geqrf(A)
    H2, t2 = batchqr.torch.geqrf(A)
    assert torch.equal(H1, H2) and torch.equal(t1, t2)  # bitwise reproducible, same layout
    torch.library.opcheck(torch.ops.batchqr.geqrf.default, (A,))


def test_runs_on_current_stream_without_sync(seed):
    A = _gen("dense", 96, 96, 16, seed)
    ref_h, ref_t = batchqr.geqrf(A)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(400_000_000)  # ~0.2 s of GPU time on the side stream
        B = A * 1.0                    # produced on the side stream, after the sleep
        t0 = time.perf_counter()
        H, tau = batchqr.geqrf(B)
        host = time.perf_counter() - t0
        done = torch.cuda.Event()
        done.record(side)
    assert not done.query(), "the side stream finished early: the sleep did not hold it"
    assert host < 0.05, f"batchqr.geqrf blocked the host for {host:.3f}s (it must not synchronize)"
    side.synchronize()
    # Had the factorization run on another stream it would have read H before the copy.
    assert torch.equal(H, ref_h) and torch.equal(tau, ref_t)


def test_cuda_graph_capture(seed):
    A = _gen("mixed", 32, 32, 20, seed, cond=2.0)
    static_in = A.clone()
    for fn in (batchqr.torch.geqrf, batchqr.geqrf):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm up (contexts, workspace sizes) outside the capture
            for _ in range(2):
                fn(static_in)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            H, tau = fn(static_in * 1.0)
        for k in range(3):
            X = _gen("mixed", 32, 32, 20, seed + k + 1, cond=2.0)
            static_in.copy_(X)
            g.replay()
            eH, et = fn(X)
            torch.cuda.synchronize()
            assert torch.equal(H, eH) and torch.equal(tau, et), f"{fn.__module__} replay {k} seed={seed}"


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_torch_compile(mode, seed):
    def f(x):
        H, tau = batchqr.torch.geqrf(x * 2.0)
        return torch.triu(H), tau.sum(-1)

    def g(x):
        H, tau = batchqr.geqrf(x + 0.0)
        return H, tau

    A = _gen("dense", 32, 32, 20, seed)
    cf = torch.compile(f, fullgraph=True, mode=mode)
    cg = torch.compile(g, fullgraph=True, mode=mode)
    for k in range(3):
        X = _gen("dense", 32, 32, 20, seed + k)
        ef, eg = f(X), g(X)
        if mode is not None:
            torch.compiler.cudagraph_mark_step_begin()
        rf = [t.clone() for t in cf(X)]  # clones: CUDA-graph outputs are reused by the next replay
        if mode is not None:
            torch.compiler.cudagraph_mark_step_begin()
        rg = [t.clone() for t in cg(X)]
        torch.cuda.synchronize()
        torch.testing.assert_close(rf[0], ef[0], rtol=0, atol=0)
        torch.testing.assert_close(rf[1], ef[1], rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(rg[0], eg[0], rtol=0, atol=0)
        torch.testing.assert_close(rg[1], eg[1], rtol=0, atol=0)
    assert bt.check_torch(A, *batchqr.torch.geqrf(A)).passed


def test_cupy_input(seed):
    cupy = pytest.importorskip("cupy")
    a = bt.generate("mixed", 50, 40, batch=(2, 3), cond=2.0, seed=seed)
    A = cupy.asarray(a)
    A0 = A.copy()
    H, tau = batchqr.geqrf(A)
    assert isinstance(H, cupy.ndarray) and isinstance(tau, cupy.ndarray)
    assert H.shape == A.shape and tau.shape == (2, 3, 40) and H.dtype == np.float32
    assert H.device.id == A.device.id
    assert bool((A == A0).all())
    rep = bt.check_numpy(a, cupy.asnumpy(H), cupy.asnumpy(tau))
    assert rep.passed, f"seed={seed}: {rep}"
    # transposed view, out=, on a non-default CuPy stream
    with cupy.cuda.Stream(non_blocking=True):
        Ht, taut = batchqr.geqrf(A.swapaxes(-1, -2))
        Ho = cupy.empty_like(A)
        to = cupy.empty((2, 3, 40), dtype=cupy.float32)
        batchqr.geqrf(A, out=(Ho, to))
        cupy.cuda.get_current_stream().synchronize()
    assert bt.check_numpy(a.swapaxes(-1, -2), cupy.asnumpy(Ht), cupy.asnumpy(taut)).passed
    assert bool((Ho == H).all()) and bool((to == tau).all())
    with pytest.raises(TypeError, match="float64"):
        batchqr.geqrf(A.astype(cupy.float64))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batchqr.geqrf(A.ravel())


class _DLOnly:
    """A CUDA array of another library that speaks only DLPack (a torch tensor behind
    __dlpack__ / __dlpack_device__, no Array API namespace)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, *args, **kwargs):
        return self._t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_other_dlpack_cuda_array(seed):
    A = _gen("mixed", 96, 80, (3,), seed)
    H0, tau0 = batchqr.geqrf(A)
    H, tau = batchqr.geqrf(_DLOnly(A))  # read through torch.from_dlpack, results as tensors
    assert isinstance(H, torch.Tensor) and H.is_cuda and H.data_ptr() != A.data_ptr()
    assert torch.equal(H, H0) and torch.equal(tau, tau0), f"seed={seed}"
    An = A.cpu().numpy()
    rep = bt.check_numpy(An, H.cpu().numpy(), tau.cpu().numpy())
    assert rep.passed, f"seed={seed}: {rep}"
