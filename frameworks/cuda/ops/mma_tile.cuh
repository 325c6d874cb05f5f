#pragma once
// Tensor-core building blocks for sm_80 and later (callers guard their use
// with __CUDA_ARCH__ >= 800): the warp-wide mma.sync m16n8k16 with f32
// accumulators on f16 or bf16 operands, ldmatrix, cp.async and packing two
// floats into one 32-bit operand register.
//
// Fragment layouts of m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), with g = lane / 4 and t = lane % 4, the lower half of each
// 32-bit register holding the element of lower column (A) or row (B):
//   A, 16x16 row-major, 4 registers: a0 (row g, cols 2t, 2t+1), a1 (row g+8,
//     cols 2t, 2t+1), a2 (row g, cols 2t+8, 2t+9), a3 (row g+8, cols 2t+8, 2t+9).
//   B, 16x8 (k x n), 2 registers: b0 (rows 2t, 2t+1 of col g), b1 (rows 2t+8,
//     2t+9 of col g).
//   C and D, 16x8 f32, 4 floats: c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row
//     g+8, cols 2t, 2t+1).
// So the accumulator of two neighbouring n-tiles is, packed in pairs, the A
// operand of the next product (attention's P V).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "xylem/dtype.hpp"

namespace xylem::cuda::mma {

// d += a b for one 16x8x16 tile; D is f16 or bf16.
template <DType D>
__device__ __forceinline__ void mma16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  if constexpr (D == DType::bf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(D == DType::f16, "tensor-core tiles take f16 or bf16");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to D and packed, lo in the lower half.
template <DType D>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  std::uint32_t r;
  if constexpr (D == DType::bf16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    r = *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    r = *reinterpret_cast<const std::uint32_t*>(&v);
  }
  return r;
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 tiles of 16-bit elements: lane l gives the address of row l % 8
// of tile l / 8 (16 contiguous, 16-byte aligned bytes); r[i] then holds, of
// tile i, columns 2t and 2t+1 of row g: the fragment layout of A and of a B
// stored n-major (rows are n).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const std::uint16_t* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row))
               : "memory");
}

// Four 8x8 tiles of 16-bit elements, transposed: lane l gives the address
// of row l % 8 of tile l / 8 (16 contiguous, 16-byte aligned bytes); r[i]
// then holds, of tile i, rows 2t and 2t+1 of column g: the B operand
// registers of a matrix stored k-major (rows are k).
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const std::uint16_t* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row))
               : "memory");
}

// 16 bytes from global to shared memory, asynchronously (both 16-byte aligned).
__device__ __forceinline__ void cp_async16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace xylem::cuda::mma
