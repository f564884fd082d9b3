// Internal: the reflector of LAPACK slarfg from alpha = x(0) and the norm of x(1:), with
// LAPACK's sign convention: beta = -sign(alpha) ||x||, tau = (beta - alpha) / beta and
// v = x(1:) * scale, scale = 1 / (alpha - beta). The geqr2 kernels form it in FP32 on
// their fast path and in FP64 where the FP32 sum of squares cannot be trusted.
#pragma once

namespace batchqr::cuda {

template <typename T>
struct Reflector {
  T beta, tau, scale;
};

// FP32 from ss = ||x(1:)||^2, which the caller has checked lies in [2^-100, FLT_MAX].
// Within [2^-100, 2^100] with |alpha| in [2^-50, 2^50], alpha^2 + ss neither overflows
// nor loses alpha^2 to underflow, and the plain square root is used; hypot otherwise.
__device__ __forceinline__ Reflector<float> slarfg_fp32(float alpha, float ss) {
  const bool plain = ss <= 0x1p100f && fabsf(alpha) <= 0x1p50f && fabsf(alpha) >= 0x1p-50f;
  Reflector<float> r;
  r.beta = -copysignf(plain ? __fsqrt_rn(fmaf(alpha, alpha, ss)) : hypotf(alpha, sqrtf(ss)), alpha);
  r.tau = (r.beta - alpha) * __frcp_rn(r.beta);
  r.scale = __frcp_rn(alpha - r.beta);
  return r;
}

// FP32 for ss in [2^-100, 2^100] and |alpha| <= 2^50, which the caller has checked: alpha^2 + ss,
// beta and alpha - beta then lie well inside the normal range, and the square root and the
// reciprocals are the hardware approximations with one Newton step each (within an ulp or
// two, without the range checks and branches of the correctly rounded forms, which sit on
// the panel's critical path).
__device__ __forceinline__ float rcp_newton(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return fmaf(r, fmaf(-x, r, 1.0f), r);
}
__device__ __forceinline__ Reflector<float> slarfg_fp32_in_range(float alpha, float ss) {
  const float a2 = fmaf(alpha, alpha, ss);
  float rs;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(rs) : "f"(a2));
  float nrm = a2 * rs;
  nrm = fmaf(0.5f * rs, fmaf(-nrm, nrm, a2), nrm);
  Reflector<float> r;
  r.beta = -copysignf(nrm, alpha);
  r.tau = (r.beta - alpha) * rcp_newton(r.beta);
  r.scale = rcp_newton(alpha - r.beta);
  return r;
}

// FP64 from xnorm = ||x(1:)||, which must not be 0 (LAPACK then takes tau = 0, H = I).
// A NaN in alpha or xnorm gives NaN factors.
__device__ __forceinline__ Reflector<double> slarfg_fp64(double alpha, double xnorm) {
  Reflector<double> r;
  r.beta = -copysign(hypot(alpha, xnorm), alpha);
  r.tau = (r.beta - alpha) / r.beta;
  r.scale = 1.0 / (alpha - r.beta);
  return r;
}

// slarfg_fp64 with beta and tau narrowed to FP32 (the scale stays FP64, which a tiny
// alpha - beta needs), or H = I (tau = 0, beta = alpha, scale = 0) for xnorm = 0, as LAPACK
// does for an exactly zero x(1:). A NaN xnorm gives NaN factors.
struct ReflectorFp64Scale {
  float beta, tau;
  double scale;
};
__device__ __forceinline__ ReflectorFp64Scale slarfg_fp64_or_identity(float alpha, double xnorm) {
  ReflectorFp64Scale r{alpha, 0.0f, 0.0};
  if (xnorm != 0.0) {  // NaN goes here too
    const Reflector<double> h = slarfg_fp64(alpha, xnorm);
    r.beta = static_cast<float>(h.beta);
    r.tau = static_cast<float>(h.tau);
    r.scale = h.scale;
  }
  return r;
}

}  // namespace batchqr::cuda
