/* The accumulating index::scatter (scatter_add, the embedding gradient):
 * kernels/index_walk.cl's column walk, each sum in the compute type T then
 * rounded to ST. */

XY_SCATTER_KERNEL(KNAME(scatter_add_int), int, ST, ST, XY_ST(y, at, XY_LD(y, at) + XY_LD(src, from)))
XY_SCATTER_KERNEL(KNAME(scatter_add_long), long, ST, ST, XY_ST(y, at, XY_LD(y, at) + XY_LD(src, from)))
