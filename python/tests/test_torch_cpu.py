"""PyTorch CPU tensors and the custom operator, without a GPU (skipped without torch)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import batchqr  # noqa: E402
import batchqr.torch  # noqa: E402  (registers torch.ops.batchqr.*)
from batchqr import testing as bt  # noqa: E402


def _gen(dist, m, n, batch, seed, cond=1.0):
    return torch.from_numpy(bt.generate(dist, m, n, batch=batch, cond=cond, seed=seed))


@pytest.mark.parametrize("dist", bt.distributions())
def test_gate_and_agreement_with_torch_geqrf(dist, seed):
    A = _gen(dist, 24, 24, (2, 3), seed, cond=2.0 if dist in ("dense", "mixed") else 0.0)
    A0 = A.clone()
    H, tau = batchqr.geqrf(A)
    assert isinstance(H, torch.Tensor) and H.device == A.device and H.dtype == torch.float32
    assert H.shape == A.shape and tau.shape == (2, 3, 24)
    assert torch.equal(A, A0)
    rep = bt.check_torch(A, H, tau)  # householder_product in float64
    assert rep.passed, f"seed={seed}: {rep}"
    ref = bt.check_numpy(A, H, tau)
    np.testing.assert_allclose(rep.factor, ref.factor, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rep.orth, ref.orth, rtol=1e-6, atol=1e-6)
    # torch.geqrf (LAPACK) gives the same R up to rounding: same sign convention.
    Ht, taut = torch.geqrf(A)
    anorm = A.abs().sum(-2).amax(-1)
    dR = (torch.triu(H) - torch.triu(Ht)).abs().amax((-2, -1))
    if dist in ("dense", "upper", "diagonal", "band", "rowscale"):  # well-determined R
        assert torch.all(dR <= 1e-4 * anorm), f"seed={seed}: {dR / anorm}"


@pytest.mark.parametrize("shape", [(9, 4), (4, 9), (1, 1), (6, 1), (1, 6)], ids=str)
def test_shapes_and_batch_dims(shape, seed):
    m, n = shape
    for bdims in [(), (3,), (2, 3)]:
        A = _gen("dense", m, n, bdims, seed)
        H, tau = batchqr.geqrf(A)
        assert H.shape == A.shape and tau.shape == bdims + (min(m, n),)
        Ht, taut = torch.geqrf(A)
        torch.testing.assert_close(H, Ht, rtol=0, atol=1e-5 * max(1.0, float(A.abs().max())))
        torch.testing.assert_close(tau, taut, rtol=0, atol=1e-5)


def test_non_contiguous_inputs(seed):
    base = _gen("dense", 16, 12, (4,), seed)
    views = [base.mT, base[::2, 1:, ::2], base.mT[1:, ::2], base[:, :, 3:].mT]
    for A in views:
        A0 = A.clone()
        H, tau = batchqr.geqrf(A)
        assert torch.equal(A, A0)
        rep = bt.check_torch(A, H, tau)
        assert rep.passed, f"seed={seed}: {rep}"
        Hc, tauc = batchqr.geqrf(A.contiguous())
        torch.testing.assert_close(H, Hc, rtol=0, atol=1e-5 * float(A.abs().max()))
    # A transposed view of a packed batch gets a column-major H (a straight copy, no transpose).
    H, _ = batchqr.geqrf(base.mT)
    assert H.mT.is_contiguous()
    # The custom operator always returns contiguous H (its fake implementation says so).
    H2, _ = batchqr.torch.geqrf(base.mT)
    assert H2.is_contiguous()
    torch.testing.assert_close(H2, H, rtol=0, atol=1e-5 * float(base.abs().max()))


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 3), (2, 3, 0), (0, 0), (3, 0, 4, 4)], ids=str)
def test_empty(shape, monkeypatch):
    from batchqr import _torch_backend

    def boom(*args):
        raise AssertionError("the library was called for an empty input")

    monkeypatch.setattr(_torch_backend, "_ext_geqrf", boom)
    A = torch.zeros(shape)
    for fn in (batchqr.geqrf, batchqr.torch.geqrf):
        H, tau = fn(A)
        Ht, taut = torch.geqrf(A)
        assert H.shape == Ht.shape and tau.shape == taut.shape


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64,
                                   torch.complex64, torch.bool])
def test_bad_dtype(dtype):
    A = torch.ones(2, 3, 3, dtype=dtype)
    for fn in (batchqr.geqrf, batchqr.torch.geqrf):
        with pytest.raises(TypeError) as e:
            fn(A)
        assert str(dtype) in str(e.value) and "float32" in str(e.value)


def test_bad_rank_and_type():
    for A in (torch.zeros(()), torch.zeros(4)):
        for fn in (batchqr.geqrf, batchqr.torch.geqrf):
            with pytest.raises(ValueError, match="at least 2 dimensions"):
                fn(A)
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        batchqr.torch.geqrf(np.zeros((3, 3), np.float32))


def test_out_errors():
    A = torch.ones(2, 4, 3)
    H, tau = torch.empty(2, 4, 3), torch.empty(2, 3)
    for fn in (batchqr.geqrf, batchqr.torch.geqrf):
        with pytest.raises(ValueError, match="mixed devices"):
            fn(A, out=(H.to("meta"), tau))
        with pytest.raises(ValueError, match="mixed devices"):
            fn(A, out=(H, tau.to("meta")))
        with pytest.raises(ValueError, match=r"out\[0\] \(H\) has shape"):
            fn(A, out=(torch.empty(2, 3, 4), tau))
        with pytest.raises(ValueError, match=r"out\[1\] \(tau\) has shape"):
            fn(A, out=(H, torch.empty(2, 4)))
        with pytest.raises(TypeError, match=r"out\[0\] \(H\) has dtype torch.float64"):
            fn(A, out=(H.double(), tau))
        with pytest.raises(TypeError, match="torch tensors"):
            fn(A, out=(H.numpy(), tau))
        with pytest.raises(TypeError, match="tuple"):
            fn(A, out=H)
        with pytest.raises(RuntimeError, match="automatic differentiation"):
            fn(A.clone().requires_grad_(), out=(H, tau))


def test_out_variants(seed):
    A = _gen("dense", 10, 6, (2, 2), seed)
    ref_h, ref_t = batchqr.geqrf(A)
    outs = [
        (torch.empty(2, 2, 10, 6), torch.empty(2, 2, 6)),
        (torch.empty(2, 2, 6, 10).mT, torch.empty(2, 2, 6)),
        (torch.empty(2, 2, 10, 12)[..., ::2], torch.empty(2, 2, 12)[..., ::2]),
        (torch.empty(2, 2, 10, 8)[..., :6], torch.empty(2, 2, 8)[..., :6]),
        (torch.empty(4, 2, 10, 6)[::2], torch.empty(2, 3, 2, 6)[:, 1]),
    ]
    for fn in (batchqr.geqrf, batchqr.torch.geqrf):
        for H, tau in outs:
            H.fill_(float("nan"))
            res = fn(A, out=(H, tau))
            assert res.a is H and res.tau is tau
            torch.testing.assert_close(H, ref_h, rtol=0, atol=1e-5)
            torch.testing.assert_close(tau, ref_t, rtol=0, atol=1e-5)


def test_requires_grad_behaves_like_torch_geqrf(seed):
    A = _gen("dense", 5, 5, (2,), seed).requires_grad_()
    H, tau = batchqr.geqrf(A)
    assert H.requires_grad
    with pytest.raises(RuntimeError):
        (H.sum() + tau.sum()).backward()
    with torch.no_grad():
        H, tau = batchqr.geqrf(A)
    assert not H.requires_grad


def test_meta_tensors_give_shapes():
    A = torch.empty(3, 7, 5, device="meta")
    H, tau = batchqr.geqrf(A)
    assert H.device.type == "meta" and H.shape == (3, 7, 5) and tau.shape == (3, 5)


def test_opcheck(seed):
    A = _gen("dense", 8, 6, (3,), seed)
    torch.library.opcheck(torch.ops.batchqr.geqrf.default, (A,))
    torch.library.opcheck(torch.ops.batchqr.geqrf_out.default, (A, torch.empty(3, 8, 6), torch.empty(3, 6)))


@pytest.mark.parametrize("direct", [False, True], ids=["batchqr.torch.geqrf", "batchqr.geqrf"])
def test_torch_compile_cpu(direct, seed):
    fn = batchqr.geqrf if direct else batchqr.torch.geqrf

    def f(x):
        H, tau = fn(x * 2.0)
        return torch.triu(H), tau + 1.0

    A = _gen("dense", 12, 12, (4,), seed)
    eager = f(A)
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)(A)
    torch.testing.assert_close(compiled[0], eager[0], rtol=0, atol=0)
    torch.testing.assert_close(compiled[1], eager[1], rtol=0, atol=0)

    def g(x, H, tau):
        fn(x, out=(H, tau))
        return H.sum()

    H, tau = torch.empty(4, 12, 12), torch.empty(4, 12)
    s = torch.compile(g, backend="aot_eager", fullgraph=True)(A, H, tau)
    torch.testing.assert_close(H, batchqr.geqrf(A)[0], rtol=0, atol=0)
    torch.testing.assert_close(s, H.sum())
