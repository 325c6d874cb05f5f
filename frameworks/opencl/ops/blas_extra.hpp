#pragma once
// ger, syrk and trsm through CLBlast (ops/blas_extra_clblast.cpp, when the
// plugin is built with it), for the devices whose gemm runs CLBlast
// (gemm_uses_clblast); ops/blas_extra.cpp runs our kernels otherwise, with
// syrk's and trsm's products in our gemm.
#include <cstdint>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

#ifdef XYLEM_OPENCL_HAVE_CLBLAST
// Enqueues the launcher's blas::ger as CLBlast's Ger; false, enqueuing
// nothing, where CLBlast cannot take its vectors (a negative stride).
[[nodiscard]] bool clblast_ger(Launcher& launch);
// The launcher's blas::syrk's product term, CLBlast's Syrk with beta = 1
// (the caller has applied beta).
void clblast_syrk_product(Launcher& launch);
// The launcher's blas::trsm as CLBlast's Trsm.
void clblast_trsm(Launcher& launch);
#endif

}  // namespace xylem::opencl
