"""Test and benchmark helpers: the QR contract's input generators and accuracy gate.

  generate(dist, m, n, batch=1, cond=0.0, seed=0)  -> float32 numpy array (*batch, m, n)
  validate_host(A, H, tau)   the C++ FP64 validator (batchqr::check::validate_host)
  check_numpy(A, H, tau)     an independent FP64 reference in NumPy
  check_torch(A, H, tau)     the contract's reference: torch.linalg.householder_product
                             in float64, on the tensors' device
  suite(name)                the contract's benchmark ("qr_v2") or smoke ("smoke") cases

All checkers return a GateReport with per-matrix scaled figures (eps = 2^-23,
N = max(m, n), k = min(m, n), Q = H_0 ... H_{k-1} formed in float64, Q_k its first k
columns, as batchqr::check::validate_host defines them):
  factor = ||R - Q^T A||_1 / (N eps ||A||_1)   gate <= 20
  orth   = ||Q_k^T Q_k - I||_1 / (N eps)       gate <= 100
and a matrix passes when both hold and H, tau (and Q) are finite. For square and wide
matrices Q_k is all of Q.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, NamedTuple, Sequence, Union

import numpy as np

from . import _batchqr as _ext

EPS32 = 2.0 ** -23
FACTOR_GATE = float(_ext.factor_gate)
ORTH_GATE = float(_ext.orth_gate)

__all__ = [
    "EPS32", "FACTOR_GATE", "ORTH_GATE", "GateReport", "Case", "distributions", "distributions_of",
    "generate", "validate_host", "check_numpy", "check_torch", "suite",
]


def distributions() -> List[str]:
    """Names of the contract's input distributions."""
    return list(_ext.distribution_names())


def distributions_of(dist: str, batch: int, seed: int) -> List[str]:
    """The distribution of each matrix of a generated batch (differs from `dist` for mixed)."""
    return list(_ext.distributions_of(dist, int(batch), int(seed)))


def generate(dist: str, m: int, n: int, batch: Union[int, Sequence[int]] = 1, cond: float = 0.0,
             seed: int = 0, *, threads: int = 0) -> np.ndarray:
    """A batch of m x n float32 matrices from the contract's distribution `dist`.

    `batch` is a count (result shape (batch, m, n)) or a tuple of batch dims (result
    shape (*batch, m, n), the matrices numbered in C order). Matrix b depends only on
    (dist, m, n, cond, seed, b)."""
    bdims = (int(batch),) if np.isscalar(batch) else tuple(int(b) for b in batch)
    count = int(np.prod(bdims, dtype=np.int64)) if bdims else 1
    out = np.empty((count, int(m), int(n)), dtype=np.float32)
    _ext.generate(str(dist), float(cond), int(seed) & 0xFFFFFFFFFFFFFFFF, out, int(threads))
    return out.reshape(bdims + (int(m), int(n)))


@dataclass
class GateReport:
    """Per-matrix scaled figures (flattened over the batch dims) and the verdict."""

    factor: np.ndarray
    orth: np.ndarray
    finite: np.ndarray
    leak: np.ndarray = None
    recon: np.ndarray = None

    @property
    def passed_each(self) -> np.ndarray:
        return self.finite & (self.factor <= FACTOR_GATE) & (self.orth <= ORTH_GATE)

    @property
    def passed(self) -> bool:
        return bool(np.all(self.passed_each))

    @property
    def worst_factor(self) -> float:
        return float(np.max(self.factor)) if self.factor.size else 0.0

    @property
    def worst_orth(self) -> float:
        return float(np.max(self.orth)) if self.orth.size else 0.0

    @property
    def failures(self) -> int:
        return int(np.count_nonzero(~self.passed_each))

    def __str__(self) -> str:
        return (f"GateReport({self.factor.size} matrices, worst factor {self.worst_factor:.3g} (gate {FACTOR_GATE:g}), "
                f"worst orth {self.worst_orth:.3g} (gate {ORTH_GATE:g}), {self.failures} failing)")


def _host_f32(x, what: str) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch tensor
        x = x.detach().cpu().numpy()
    elif hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        x = x.get()
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"{what} must be float32, got {x.dtype}")
    return x


def _flatten(A, H, tau):
    A = _host_f32(A, "A")
    H = _host_f32(H, "H")
    tau = _host_f32(tau, "tau")
    if A.ndim < 2:
        raise ValueError("A must have at least 2 dimensions")
    m, n = A.shape[-2:]
    k = min(m, n)
    if H.shape != A.shape:
        raise ValueError(f"H has shape {H.shape}, expected {A.shape}")
    if tau.shape != A.shape[:-2] + (k,):
        raise ValueError(f"tau has shape {tau.shape}, expected {A.shape[:-2] + (k,)}")
    b = int(np.prod(A.shape[:-2], dtype=np.int64))
    return (np.ascontiguousarray(A.reshape(b, m, n)), np.ascontiguousarray(H.reshape(b, m, n)),
            np.ascontiguousarray(tau.reshape(b, k)))


def validate_host(A, H, tau, *, threads: int = 0) -> GateReport:
    """The C++ FP64 validator (LAPACK/BLAS in double) on host copies of A, H, tau."""
    a, h, t = _flatten(A, H, tau)
    factor, orth, leak, recon, finite = _ext.validate_host(a, h, t, int(threads))
    return GateReport(factor=np.asarray(factor, dtype=np.float64), orth=np.asarray(orth, dtype=np.float64),
                      finite=np.asarray(finite, dtype=bool), leak=np.asarray(leak, dtype=np.float64),
                      recon=np.asarray(recon, dtype=np.float64))


def _norm1(x: np.ndarray) -> np.ndarray:
    """Matrix 1-norm (max column abs sum) over the last two axes."""
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        return np.zeros(x.shape[:-2])
    return np.abs(x).sum(axis=-2).max(axis=-1)


def _scaled(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den > 0, out, np.where(num == 0, 0.0, np.inf))


def householder_q_numpy(H: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Full Q (b, m, m) in float64 from (H, tau) of shape (b, m, n), (b, k): the product
    H_0 H_1 ... H_{k-1} with H_j = I - tau_j v_j v_j^T, v_j = (0, .., 0, 1, H[j+1:, j])."""
    b, m, n = H.shape
    k = min(m, n)
    Hd = H.astype(np.float64)
    Q = np.broadcast_to(np.eye(m), (b, m, m)).copy()
    # Q = H_0 (H_1 (... H_{k-1})): apply the reflectors from the last to the first on the left.
    for j in range(k - 1, -1, -1):
        v = np.zeros((b, m))
        v[:, j] = 1.0
        v[:, j + 1:] = Hd[:, j + 1:, j]
        w = np.einsum("bi,bij->bj", v, Q)                  # v^T Q
        Q -= tau[:, j].astype(np.float64)[:, None, None] * v[:, :, None] * w[:, None, :]
    return Q


def check_numpy(A, H, tau) -> GateReport:
    """Independent FP64 reference checker in NumPy (Q formed as the product of reflectors)."""
    a, h, t = _flatten(A, H, tau)
    b, m, n = a.shape
    k = min(m, n)
    N = max(m, n, 1)
    finite = np.isfinite(h).all(axis=(1, 2)) & np.isfinite(t).all(axis=1)
    Q = householder_q_numpy(np.nan_to_num(h), np.nan_to_num(t))
    ad = a.astype(np.float64)
    R = np.triu(h.astype(np.float64))
    QtA = np.einsum("bki,bkj->bij", Q, ad)
    anorm = _norm1(ad)
    factor = _scaled(_norm1(R - QtA), N * EPS32 * anorm)
    Qk = Q[:, :, :k]
    orth = _norm1(np.einsum("bki,bkj->bij", Qk, Qk) - np.eye(k)) / (N * EPS32)
    leak = _scaled(_norm1(np.tril(QtA, -1)), N * EPS32 * anorm)
    recon = _scaled(_norm1(Q @ R - ad), N * EPS32 * anorm)
    finite = finite & np.isfinite(Q).all(axis=(1, 2))
    factor = np.where(finite, factor, np.inf)
    orth = np.where(finite, orth, np.inf)
    return GateReport(factor=factor, orth=orth, finite=finite, leak=leak, recon=recon)


def check_torch(A, H, tau, *, max_elements: int = 1 << 27) -> GateReport:
    """The contract's reference checker in PyTorch, float64, on the tensors' device:
    Q = torch.linalg.householder_product(H, tau) (padded to the full m x m Q for tall
    matrices, cut to m x m for wide ones; orthogonality of its first k columns),
    R = triu(H). Works in chunks of the batch so that the float64 temporaries stay near
    `max_elements` elements."""
    import torch

    if A.dim() < 2:
        raise ValueError("A must have at least 2 dimensions")
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    N = max(m, n, 1)
    b = A.numel() // (m * n) if m * n else 0
    a_all = A.detach().reshape(b, m, n)
    h_all = H.detach().reshape(b, m, n)
    t_all = tau.detach().reshape(b, k)
    chunk = max(1, max_elements // max(1, m * max(m, n)))
    factor, orth, leak, recon, finite = [], [], [], [], []
    eye = torch.eye(k, dtype=torch.float64, device=A.device)
    for s in range(0, b, chunk):
        a = a_all[s:s + chunk].double()
        h = h_all[s:s + chunk].double()
        t = t_all[s:s + chunk].double()
        fin = torch.isfinite(h).flatten(1).all(1) & torch.isfinite(t).all(1)
        h0 = torch.nan_to_num(h)
        t0 = torch.nan_to_num(t)
        if m > n:  # full Q: pad with zero columns (identity reflectors)
            hp = torch.zeros(h.shape[0], m, m, dtype=torch.float64, device=A.device)
            hp[:, :, :n] = h0
            tp = torch.zeros(h.shape[0], m, dtype=torch.float64, device=A.device)
            tp[:, :k] = t0
        else:
            hp, tp = h0[:, :, :m], t0
        Q = torch.linalg.householder_product(hp, tp)
        R = torch.triu(h)
        QtA = Q.mT @ a
        anorm = a.abs().sum(-2).amax(-1)
        den = N * EPS32 * anorm

        def scaled(x):
            num = x.abs().sum(-2).amax(-1)
            return torch.where(den > 0, num / torch.where(den > 0, den, 1.0),
                               torch.where(num == 0, 0.0, float("inf")))

        fin = fin & torch.isfinite(Q).flatten(1).all(1)
        f = torch.where(fin, scaled(R - QtA), float("inf"))
        Qk = Q[:, :, :k]
        o = torch.where(fin, (Qk.mT @ Qk - eye).abs().sum(-2).amax(-1) / (N * EPS32), float("inf"))
        factor.append(f.cpu())
        orth.append(o.cpu())
        leak.append(scaled(torch.tril(QtA, -1)).cpu())
        recon.append(scaled(Q @ R - a).cpu())
        finite.append(fin.cpu())

    def cat(xs, dtype):
        return torch.cat(xs).numpy() if xs else np.zeros(0, dtype=dtype)

    return GateReport(factor=cat(factor, np.float64), orth=cat(orth, np.float64), finite=cat(finite, bool),
                      leak=cat(leak, np.float64), recon=cat(recon, np.float64))


class Case(NamedTuple):
    batch: int
    m: int
    n: int
    cond: float
    dist: str
    label: str
    inputs: int  # independent inputs the contract's timing method uses: max(1, min(50, 256 MiB / bytes))


def suite(name: str = "qr_v2") -> List[Case]:
    """The contract's public benchmark suite ("qr_v2", 14 cases) or smoke tests ("smoke")."""
    return [Case(*c) for c in _ext.suite(name)]
