// Internal: the few Fortran LAPACK routines the CPU backend and the validator use
// (LP64 integers, as Debian's LAPACK and OpenBLAS ship them).
#pragma once

extern "C" {
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void sgelqf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
}
