/* The accumulating index::scatter (scatter_add, the embedding gradient):
 * kernels/index_walk.cl's column walk, each sum in the compute type T then
 * rounded to ST. */

#define XY_ADD_ONE XY_ST(y, at, XY_LD(y, at) + XY_LD(src, from))
#define XY_ADD_VEC XY_VST(y, at, XY_VLD(y, at) + XY_VLD(src, from))
XY_SCATTER_KERNEL(KNAME(scatter_add_int), int, ST, ST, XY_ADD_ONE)
XY_SCATTER_KERNEL(KNAME(scatter_add_long), long, ST, ST, XY_ADD_ONE)
XY_SCATTER_RUNS_KERNEL(KNAME(scatter_add_r_int), int, ST, ST, XY_ADD_ONE, XY_ADD_VEC, VW)
XY_SCATTER_RUNS_KERNEL(KNAME(scatter_add_r_long), long, ST, ST, XY_ADD_ONE, XY_ADD_VEC, VW)
#undef XY_ADD_ONE
#undef XY_ADD_VEC
