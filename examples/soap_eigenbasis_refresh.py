#!/usr/bin/env python3
"""A SOAP/Shampoo-style eigenbasis refresh with batched QR, torch.geqrf vs batchqr.

Shampoo-family optimizers (SOAP, distributed Shampoo) keep, per layer, preconditioner
statistics P = EMA(G G^T) and an orthogonal eigenbasis estimate Q of P. Every few
hundred steps they refresh Q with one step of subspace (power) iteration:

    H, tau = geqrf(P @ Q)                  # batched over all layers of one size
    Q      = householder_product(H, tau)   # the orthogonal factor of P Q

This script runs that step for a batch of statistics once with torch.geqrf and once
with batchqr.torch.geqrf (the custom operator; usable under torch.compile and CUDA
graphs), checks that both give the same Q, and reports the time of the QR alone and of
the whole refresh step, measured with CUDA events.

    python3 examples/soap_eigenbasis_refresh.py [--batch 64] [--n 512] [--iters 20]

On a machine without CUDA it still runs, on the CPU with smaller sizes, and says so.
"""

import argparse
import time

import torch

import batchqr
import batchqr.torch


def make_statistics(batch, n, samples, device, gen):
    """P = G G^T / samples + a small ridge, for a batch of gradient samples G (n x samples).

    The columns of G decay (a spectrum spread of about 1e3, as accumulated statistics
    have); with samples >= n, P is full rank, so every column of Q is determined and the
    two QR implementations can be compared entrywise. (With rank-deficient statistics
    the trailing columns of Q are set by rounding alone, in any implementation.)"""
    G = torch.randn(batch, n, samples, device=device, generator=gen)
    G = G * torch.logspace(0, -1, samples, device=device)
    P = G @ G.mT / samples
    return P + 1e-4 * torch.eye(n, device=device)


def refresh(P, Q, geqrf):
    """One power-iteration step Q <- qr(P Q), and the eigenvalue estimates diag(Q^T P Q)."""
    H, tau = geqrf(P @ Q)
    Q = torch.linalg.householder_product(H, tau)
    eig = torch.einsum("bij,bij->bj", Q, P @ Q)
    return Q, eig


def timed(fn, iters, cuda):
    """Mean milliseconds per call: CUDA events on a GPU, wall clock on the CPU."""
    fn()  # warm-up (and first-call setup)
    if cuda:
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) * 1e3 / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=None, help="statistics per batch (default 64 on CUDA, 8 on CPU)")
    ap.add_argument("--n", type=int, default=None, help="matrix size (default 512 on CUDA, 64 on CPU)")
    ap.add_argument("--iters", type=int, default=20, help="timed repetitions")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    cuda = torch.cuda.is_available() and batchqr.cuda_available()
    if cuda:
        device = torch.device("cuda")
        batch, n = args.batch or 64, args.n or 512
        print(f"CUDA: {torch.cuda.get_device_name()}; batchqr {batchqr.__version__}")
    else:
        device = torch.device("cpu")
        batch, n = args.batch or 8, args.n or 64
        why = "no CUDA device" if not torch.cuda.is_available() else "batchqr has no CUDA backend here"
        print(f"CUDA not available ({why}): running on the CPU with smaller sizes "
              f"(batchqr uses its CPU backend, LAPACK); timings are CPU timings")

    gen = torch.Generator(device=device).manual_seed(args.seed)
    P = make_statistics(batch, n, samples=2 * n, device=device, gen=gen)
    Q0 = torch.linalg.qr(torch.randn(batch, n, n, device=device, generator=gen)).Q  # previous eigenbasis

    # One refresh step with each QR, from the same starting basis.
    Q_t, eig_t = refresh(P, Q0, torch.geqrf)
    Q_b, eig_b = refresh(P, Q0, batchqr.torch.geqrf)
    dq = (Q_t - Q_b).abs().amax().item()
    orth = (Q_b.mT @ Q_b - torch.eye(n, device=device)).abs().amax().item()
    deig = ((eig_t - eig_b).abs().amax(-1) / eig_t.abs().amax(-1)).amax().item()
    print(f"statistics: {batch} x {n} x {n} float32 on {device}")
    print(f"max |Q_torch - Q_batchqr| = {dq:.2e}   max |Q^T Q - I| = {orth:.2e}   "
          f"max rel. eigenvalue-estimate difference = {deig:.2e}")
    # Same sign convention (LAPACK's), so the two Q agree entrywise up to FP32 rounding
    # amplified by the conditioning of P Q.
    ok = dq < 1e-2 and orth < 1e-3 and deig < 1e-3
    print("agreement:", "OK" if ok else "MISMATCH")

    # More steps move Q towards P's eigenvectors (slowly where eigenvalues cluster).
    Q = Q_b
    for _ in range(5):
        Q, eig = refresh(P, Q, batchqr.torch.geqrf)
    offdiag = Q.mT @ P @ Q
    offdiag = (offdiag - torch.diag_embed(torch.diagonal(offdiag, dim1=-2, dim2=-1))).abs().amax().item()
    print(f"after 6 refresh steps: max off-diagonal of Q^T P Q = {offdiag:.2e} "
          f"(largest eigenvalue {eig.amax().item():.3e})")

    X = P @ Q0
    t_qr_torch = timed(lambda: torch.geqrf(X), args.iters, cuda)
    t_qr_bqr = timed(lambda: batchqr.torch.geqrf(X), args.iters, cuda)
    t_step_torch = timed(lambda: refresh(P, Q0, torch.geqrf), args.iters, cuda)
    t_step_bqr = timed(lambda: refresh(P, Q0, batchqr.torch.geqrf), args.iters, cuda)
    unit = "ms (CUDA events)" if cuda else "ms (wall clock, CPU)"
    print(f"{'':22s}{'torch.geqrf':>14s}{'batchqr':>12s}{'speed-up':>10s}   [{unit}]")
    print(f"{'geqrf only':22s}{t_qr_torch:14.3f}{t_qr_bqr:12.3f}{t_qr_torch / t_qr_bqr:9.2f}x")
    print(f"{'refresh step':22s}{t_step_torch:14.3f}{t_step_bqr:12.3f}{t_step_torch / t_step_bqr:9.2f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
