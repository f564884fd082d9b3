"""CPU tests of the Python package (NumPy input, the CPU backend). No GPU needed."""

import numpy as np
import pytest

import batchqr
from batchqr import testing as bt

EPS = 2.0 ** -23
DISTS = bt.distributions()
SHAPES = [(16, 16), (40, 12), (12, 40), (33, 33), (1, 1), (1, 7), (7, 1)]


def _cond_for(dist):
    return {"dense": 2.0, "upper": 1.0, "band": 1.0, "mixed": 2.0}.get(dist, 0.0)


def _assert_gate(A, H, tau, seed, what=""):
    rep = bt.check_numpy(A, H, tau)
    msg = f"{what} seed={seed}: {rep}"
    assert rep.passed, msg
    return rep


# --- the accuracy gate ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dist", DISTS)
def test_gate_every_distribution(dist, shape, seed):
    m, n = shape
    A = bt.generate(dist, m, n, batch=3, cond=_cond_for(dist), seed=seed)
    A0 = A.copy()
    H, tau = batchqr.geqrf(A)
    assert isinstance(H, np.ndarray) and isinstance(tau, np.ndarray)
    assert H.shape == A.shape and tau.shape == (3, min(m, n))
    assert H.dtype == np.float32 and tau.dtype == np.float32
    assert np.array_equal(A, A0), f"input modified, seed={seed}"
    rep = _assert_gate(A, H, tau, seed, f"{dist} {m}x{n}")
    # The C++ validator (LAPACK in FP64) and the NumPy reference agree.
    cpp = bt.validate_host(A, H, tau)
    assert cpp.passed, f"seed={seed}: {cpp}"
    np.testing.assert_allclose(cpp.factor, rep.factor, rtol=1e-6, atol=1e-6, err_msg=f"seed={seed}")
    np.testing.assert_allclose(cpp.orth, rep.orth, rtol=1e-6, atol=1e-6, err_msg=f"seed={seed}")


@pytest.mark.parametrize("bdims", [(), (3,), (2, 3), (1,), (2, 1, 2)], ids=str)
@pytest.mark.parametrize("dist", ["dense", "mixed"])
def test_batch_dims(dist, bdims, seed):
    m, n = 9, 6
    A = bt.generate(dist, m, n, batch=bdims, cond=1.0, seed=seed)
    assert A.shape == bdims + (m, n)
    H, tau = batchqr.geqrf(A)
    assert H.shape == A.shape and tau.shape == bdims + (6,)
    _assert_gate(A, H, tau, seed, str(bdims))
    # Each matrix is factored as if alone.
    flat_A, flat_H, flat_t = A.reshape(-1, m, n), H.reshape(-1, m, n), tau.reshape(-1, 6)
    for i in range(flat_A.shape[0]):
        h1, t1 = batchqr.geqrf(flat_A[i])
        np.testing.assert_allclose(h1, flat_H[i], rtol=0, atol=1e-6 * max(1.0, np.abs(flat_A[i]).max()))
        np.testing.assert_allclose(t1, flat_t[i], rtol=0, atol=1e-6)


def test_large_batch_and_size(seed):
    A = bt.generate("mixed", 96, 80, batch=5, cond=2.0, seed=seed)
    H, tau = batchqr.geqrf(A)
    _assert_gate(A, H, tau, seed)
    assert bt.validate_host(A, H, tau).passed


# --- agreement with LAPACK through numpy.linalg.qr(mode="raw") ----------------------------------

@pytest.mark.parametrize("shape", [(16, 16), (40, 12), (12, 40), (1, 1), (5, 1), (1, 5)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_matches_numpy_qr_raw(shape, seed):
    m, n = shape
    A = bt.generate("dense", m, n, batch=4, cond=1.0, seed=seed)
    H, tau = batchqr.geqrf(A)
    for i in range(A.shape[0]):
        a = A[i].astype(np.float64)
        h, t = np.linalg.qr(a, mode="raw")  # h is LAPACK's column-major array, transposed
        ref_h = h.T
        kappa = np.linalg.cond(a) if min(m, n) > 1 else 1.0
        tol = 200 * max(m, n) * EPS * kappa
        anorm = np.abs(a).sum(axis=0).max()
        # R relative to ||A||, the Householder vectors and tau absolutely (they are O(1)).
        np.testing.assert_allclose(np.triu(H[i]), np.triu(ref_h), rtol=0, atol=tol * anorm,
                                   err_msg=f"R, matrix {i}, seed={seed}")
        np.testing.assert_allclose(np.tril(H[i], -1), np.tril(ref_h, -1), rtol=0, atol=tol,
                                   err_msg=f"V, matrix {i}, seed={seed}")
        np.testing.assert_allclose(tau[i], t, rtol=0, atol=tol, err_msg=f"tau, matrix {i}, seed={seed}")


def test_lapack_conventions():
    # A column already zero below the diagonal gives tau = 0 (identity reflector);
    # beta = -sign(alpha) ||x||.
    A = np.array([[3.0, 1.0], [0.0, 2.0], [0.0, 0.0]], dtype=np.float32)
    H, tau = batchqr.geqrf(A)
    assert tau[0] == 0.0 and H[0, 0] == 3.0
    B = np.array([[3.0], [4.0]], dtype=np.float32)
    H, tau = batchqr.geqrf(B)
    np.testing.assert_allclose(H[0, 0], -5.0, rtol=1e-6)
    np.testing.assert_allclose(tau[0], (-5.0 - 3.0) / -5.0, rtol=1e-6)
    np.testing.assert_allclose(H[1, 0], 4.0 / (3.0 + 5.0), rtol=1e-6)


# --- non-contiguous inputs -----------------------------------------------------------------------

def test_transposed_view_uses_column_major(seed):
    B = bt.generate("dense", 12, 20, batch=(2, 3), cond=1.0, seed=seed)
    A = B.swapaxes(-1, -2)  # (2, 3, 20, 12), a view: column-major matrices
    A0 = A.copy()
    H, tau = batchqr.geqrf(A)
    assert H.shape == A.shape and tau.shape == (2, 3, 12)
    assert H.swapaxes(-1, -2).flags.c_contiguous  # H in the input's layout: a straight copy
    assert np.array_equal(A, A0)
    _assert_gate(A, H, tau, seed)
    Hc, tauc = batchqr.geqrf(np.ascontiguousarray(A))
    np.testing.assert_allclose(H, Hc, rtol=0, atol=1e-5 * np.abs(A).max())
    np.testing.assert_allclose(tau, tauc, rtol=0, atol=1e-5)


def test_sliced_views(seed):
    big = bt.generate("dense", 30, 25, batch=6, cond=1.0, seed=seed)
    for A in (big[::2, 1:, ::3], big[1::2, ::2, 2:], big[:, 3:20, 4:11].swapaxes(-1, -2)[::3]):
        A0 = A.copy()
        H, tau = batchqr.geqrf(A)
        assert np.array_equal(A, A0)
        _assert_gate(A, H, tau, seed, str(A.strides))
        Hc, tauc = batchqr.geqrf(np.ascontiguousarray(A))
        np.testing.assert_allclose(H, Hc, rtol=0, atol=1e-5 * np.abs(A).max())


def test_fortran_broadcast_and_byteswapped(seed):
    a = bt.generate("dense", 7, 5, batch=1, cond=1.0, seed=seed)[0]
    ref_h, ref_t = batchqr.geqrf(a)
    for A in (np.asfortranarray(a), np.broadcast_to(a, (3, 7, 5)), a.astype(">f4")):
        H, tau = batchqr.geqrf(A)
        assert H.shape == A.shape and H.dtype == np.float32
        np.testing.assert_allclose(H.reshape(-1, 7, 5)[0], ref_h, rtol=0, atol=1e-5)
        np.testing.assert_allclose(tau.reshape(-1, 5)[0], ref_t, rtol=0, atol=1e-5)


# --- empty inputs -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 3), (2, 3, 0), (0, 0), (4, 0), (0, 5), (2, 0, 0),
                                   (3, 0, 4, 4)], ids=str)
def test_empty_inputs_skip_the_library(shape, monkeypatch):
    from batchqr import _numpy_backend

    def boom(*args):
        raise AssertionError("the library was called for an empty input")

    monkeypatch.setattr(_numpy_backend, "_ext_geqrf", boom)
    A = np.zeros(shape, dtype=np.float32)
    H, tau = batchqr.geqrf(A)
    assert H.shape == shape and H.dtype == np.float32
    assert tau.shape == shape[:-2] + (min(shape[-2], shape[-1]),) and tau.dtype == np.float32


# --- out= ---------------------------------------------------------------------------------------

def test_out_variants(seed):
    A = bt.generate("dense", 10, 6, batch=(2, 2), cond=1.0, seed=seed)
    ref_h, ref_t = batchqr.geqrf(A)
    # contiguous, column-major, and non-addressable (strided) destinations
    outs = [
        (np.empty_like(A), np.empty((2, 2, 6), np.float32)),
        (np.empty((2, 2, 6, 10), np.float32).swapaxes(-1, -2), np.empty((2, 2, 6), np.float32)),
        (np.empty((2, 2, 10, 12), np.float32)[..., ::2], np.empty((2, 2, 12), np.float32)[..., ::2]),
        (np.empty((4, 2, 10, 6), np.float32)[::2], np.empty((2, 3, 2, 6), np.float32)[:, 1]),
        # addressable with gaps: ld padding, batch-stride padding, tau stride > min(m, n)
        (np.empty((2, 2, 10, 8), np.float32)[..., :6], np.empty((2, 2, 8), np.float32)[..., :6]),
        (np.empty((2, 2, 12, 6), np.float32)[:, :, :10], np.empty((2, 2, 6), np.float32)),
    ]
    for H, tau in outs:
        res = batchqr.geqrf(A, out=(H, tau))
        assert res.a is H and res.tau is tau
        np.testing.assert_allclose(H, ref_h, rtol=0, atol=1e-5)
        np.testing.assert_allclose(tau, ref_t, rtol=0, atol=1e-5)


def test_out_in_place(seed):
    A = bt.generate("dense", 8, 8, batch=3, cond=1.0, seed=seed)
    ref_h, ref_t = batchqr.geqrf(A)
    B = A.copy()
    tau = np.empty((3, 8), np.float32)
    batchqr.geqrf(B, out=(B, tau))
    np.testing.assert_allclose(B, ref_h, rtol=0, atol=1e-6)
    np.testing.assert_allclose(tau, ref_t, rtol=0, atol=1e-6)


# --- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int64, np.uint8, np.complex64,
                                   np.complex128, np.bool_])
def test_bad_dtype(dtype):
    A = np.ones((3, 4, 4), dtype=dtype)
    with pytest.raises(TypeError) as e:
        batchqr.geqrf(A)
    assert np.dtype(dtype).name in str(e.value) and "float32" in str(e.value)


def test_float64_message_is_explicit():
    with pytest.raises(TypeError, match=r"float64.*float32.*not downcast"):
        batchqr.geqrf(np.eye(3))


@pytest.mark.parametrize("A", [np.zeros((), np.float32), np.zeros(5, np.float32)], ids=repr)
def test_too_few_dims(A):
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batchqr.geqrf(A)


@pytest.mark.parametrize("obj", [[[1.0, 2.0], [3.0, 4.0]], None, "abc", 3.0, {"a": 1}, np.float32(1.0)], ids=repr)
def test_not_an_array(obj):
    with pytest.raises(TypeError, match="expected a torch.Tensor, cupy.ndarray, numpy.ndarray or another DLPack array"):
        batchqr.geqrf(obj)


def test_bad_out():
    A = np.ones((2, 4, 3), np.float32)
    good_h, good_t = np.empty((2, 4, 3), np.float32), np.empty((2, 3), np.float32)
    with pytest.raises(TypeError, match="tuple"):
        batchqr.geqrf(A, out=good_h)
    with pytest.raises(TypeError, match="numpy arrays"):
        batchqr.geqrf(A, out=([[0.0]], good_t))
    with pytest.raises(ValueError, match=r"out\[0\] \(H\) has shape"):
        batchqr.geqrf(A, out=(np.empty((2, 3, 4), np.float32), good_t))
    with pytest.raises(ValueError, match=r"out\[1\] \(tau\) has shape"):
        batchqr.geqrf(A, out=(good_h, np.empty((2, 4), np.float32)))
    with pytest.raises(TypeError, match=r"out\[0\] \(H\) has dtype float64"):
        batchqr.geqrf(A, out=(good_h.astype(np.float64), good_t))
    with pytest.raises(TypeError, match=r"out\[1\] \(tau\) has dtype int32"):
        batchqr.geqrf(A, out=(good_h, good_t.astype(np.int32)))
    ro = np.empty((2, 4, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        batchqr.geqrf(A, out=(ro, good_t))


def test_status_codes_map_to_exceptions():
    from batchqr import _batchqr, _core

    names = _core._STATUS_NAMES
    for code in range(1, len(names)):
        err = batchqr.BatchQRError(code)
        assert err.status == names[code]
        assert _batchqr.status_string(code) in str(err)
    # A real status from the library: ld < n for a row-major matrix.
    ctx = _core.cpu_context()
    buf = np.zeros((4, 4), np.float32)
    tau = np.zeros(4, np.float32)
    st = _batchqr.geqrf(ctx, 0, 4, 4, 1, 2, 16, 4, buf.ctypes.data, tau.ctypes.data, 0, 0, 0)
    assert names[st] == "invalid_leading_dim"
    with pytest.raises(batchqr.BatchQRError, match="invalid leading dimension") as e:
        _core.workspace_bytes(ctx, 0, 4, 4, 1, 2, 16, 4)
    assert e.value.status == "invalid_leading_dim" and isinstance(e.value, RuntimeError)


@pytest.mark.skipif(batchqr.cuda_available(), reason="a CUDA device is present")
def test_cuda_context_unavailable_is_clear():
    from batchqr import _core

    with pytest.raises(batchqr.BatchQRError) as e:
        _core.cuda_context(0)
    assert e.value.status == "backend_unavailable"
    assert "CUDA" in str(e.value)


# --- package surface ------------------------------------------------------------------------------

def test_package_surface():
    assert isinstance(batchqr.__version__, str) and batchqr.__version__.count(".") == 2
    assert isinstance(batchqr.cuda_available(), bool)
    assert isinstance(batchqr.has_cuda_backend, bool)
    assert set(DISTS) >= {"dense", "mixed", "rankdef", "clustered", "nearrank", "rowscale", "nearcollinear"}
    cases = bt.suite("qr_v2")
    assert len(cases) == 14 and cases[0][:5] == (20, 32, 32, 1.0, "dense")
    assert cases[3].inputs == 1 and cases[0].inputs == 50
    with pytest.raises(ValueError):
        bt.generate("nosuch", 3, 3)


def test_generator_is_deterministic(seed):
    a = bt.generate("mixed", 20, 20, batch=6, cond=2.0, seed=seed)
    b = bt.generate("mixed", 20, 20, batch=6, cond=2.0, seed=seed)
    assert np.array_equal(a, b)
    # matrix b depends only on (spec, b), not on the batch size
    c = bt.generate("mixed", 20, 20, batch=3, cond=2.0, seed=seed)
    kinds6 = bt.distributions_of("mixed", 6, seed)
    kinds3 = bt.distributions_of("mixed", 3, seed)
    for i in range(2, 3):  # matrices 0, 1 may be overridden to guarantee a dense + non-dense mix
        if kinds6[i] == kinds3[i]:
            assert np.array_equal(a[i], c[i])
    assert len(set(kinds6)) >= 2 and "dense" in kinds6


def test_checkers_detect_a_bad_factorization(seed):
    A = bt.generate("dense", 12, 12, batch=2, cond=0.0, seed=seed)
    H, tau = batchqr.geqrf(A)
    H2 = H.copy()
    H2[1, 0, 5] += 1e-2 * np.abs(H[1]).max()  # corrupt R of matrix 1
    for check in (bt.check_numpy, bt.validate_host):
        rep = check(A, H2, tau)
        assert not rep.passed and rep.passed_each[0] and not rep.passed_each[1]
    tau2 = tau.copy()
    tau2[0, 3] = np.nan
    for check in (bt.check_numpy, bt.validate_host):
        rep = check(A, H, tau2)
        assert not rep.finite[0] and not rep.passed


# --- other DLPack arrays ----------------------------------------------------------------------

class _DLArray:
    """An array of another library that speaks only DLPack (as a JAX or TensorFlow array
    does to batchqr): a NumPy array behind __dlpack__ / __dlpack_device__, and, with
    `namespace`, an Array API namespace whose from_dlpack makes more of them."""

    def __init__(self, a, namespace=False, device=None):
        self._a, self._ns, self._device = a, namespace, device

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._device if self._device is not None else self._a.__dlpack_device__()

    def __getattr__(self, name):
        if name == "__array_namespace__" and self._ns:
            return lambda api_version=None: _DLNamespace
        raise AttributeError(name)


class _DLNamespace:
    @staticmethod
    def from_dlpack(x):
        return _DLArray(np.from_dlpack(x), namespace=True)


@pytest.mark.parametrize("namespace", [False, True], ids=["no namespace", "array API namespace"])
@pytest.mark.parametrize("shape", [(2, 9, 6), (6, 9), (3, 1, 5, 5)], ids=str)
def test_other_dlpack_arrays(shape, namespace, seed):
    A = bt.generate("mixed", shape[-2], shape[-1], batch=shape[:-2], cond=1.0, seed=seed)
    H0, tau0 = batchqr.geqrf(A)
    H, tau = batchqr.geqrf(_DLArray(A, namespace=namespace))
    if namespace:  # back in the input's library, through its from_dlpack
        assert isinstance(H, _DLArray) and isinstance(tau, _DLArray)
        H, tau = np.from_dlpack(H), np.from_dlpack(tau)
    else:  # the viewing framework's arrays
        assert isinstance(H, np.ndarray) and isinstance(tau, np.ndarray)
    # The same factorization as the NumPy input's, bit for bit.
    assert np.array_equal(H, H0) and np.array_equal(tau, tau0), f"seed={seed}"
    _assert_gate(A, H, tau, seed, "DLPack")


def test_other_dlpack_arrays_errors():
    A = np.ones((2, 4, 3), np.float32)
    with pytest.raises(TypeError, match=r"float64"):  # the dtype check of the NumPy view
        batchqr.geqrf(_DLArray(A.astype(np.float64)))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batchqr.geqrf(_DLArray(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match=r"out= takes torch, CuPy or NumPy arrays"):
        batchqr.geqrf(_DLArray(A), out=(np.empty_like(A), np.empty((2, 3), np.float32)))
    with pytest.raises(TypeError, match=r"lives on a Vulkan device"):
        batchqr.geqrf(_DLArray(A, device=(7, 0)))
    class _NoExport(_DLArray):  # a producer that cannot export its dtype (say bfloat16)
        def __dlpack__(self, *args, **kwargs):
            raise BufferError("bfloat16 cannot be exported")

    with pytest.raises(TypeError, match=r"numpy could not read .* through DLPack \(bfloat16"):
        batchqr.geqrf(_NoExport(A))
