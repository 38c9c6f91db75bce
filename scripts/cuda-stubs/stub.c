// SPDX-License-Identifier: Apache-2.0
/* An empty shared library that stands in for a CUDA 12 library TensorFlow dlopens at GPU start
 * but constmem's tests never call (cuBLAS, cuBLASLt, cuFFT, cuSOLVER, cuSPARSE, cuDNN). It is
 * built once per soname; see docs/gpu-libraries.md for why this is safe and what it rules out. A
 * TensorFlow op that needs one of these fails with an error naming the missing symbol. */
int constmem_cuda_stub_library(void) { return 0; }
