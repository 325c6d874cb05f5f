/* nn activations and their gradients, elementwise over views of any
 * strides. Each op has a contiguous kernel (_c: a run of XY_PER_ITEM
 * elements per work-item, operands at an offset) and a strided one (_s: offsets from the layout).
 * The formulas are math.h's. */

#define XY_UNARY(name, fn)                                                                     \
  kernel void KNAME(name##_c)(global const T* x, long xo, global T* y, long yo, long n) {     \
    XY_FOR_RUN(i, n) y[yo + i] = fn(x[xo + i]);                                                \
  }                                                                                            \
  kernel void KNAME(name##_s)(global const T* x, global T* y, xy_layout l, long n) {          \
    const long i = get_global_id(0);                                                           \
    if (i >= n) return;                                                                        \
    long ox, oy;                                                                               \
    xy_offsets2(&l, i, &ox, &oy);                                                              \
    y[oy] = fn(x[ox]);                                                                         \
  }

#define XY_BINARY(name, fn)                                                                            \
  kernel void KNAME(name##_c)(global const T* a, long ao, global const T* b, long bo, global T* y,   \
                              long yo, long n) {                                                       \
    XY_FOR_RUN(i, n) y[yo + i] = fn(a[ao + i], b[bo + i]);                                             \
  }                                                                                                    \
  kernel void KNAME(name##_s)(global const T* a, global const T* b, global T* y, xy_layout l, long n) { \
    const long i = get_global_id(0);                                                                   \
    if (i >= n) return;                                                                                \
    long oa, ob, oy;                                                                                   \
    xy_offsets3(&l, i, &oa, &ob, &oy);                                                                 \
    y[oy] = fn(a[oa], b[ob]);                                                                          \
  }

XY_UNARY(relu, XF(xy_relu))
XY_UNARY(tanh, XF(xy_tanh))
XY_BINARY(sigmoid_grad, XF(xy_sigmoid_grad))
XY_BINARY(relu_grad, XF(xy_relu_grad))
XY_BINARY(tanh_grad, XF(xy_tanh_grad))

/* sigmoid: on CPUs, f32 runs of 16 go through the float16 form of the same
 * function, which the compiler keeps in vector registers. */
kernel void KNAME(sigmoid_c)(global const T* x, long xo, global T* y, long yo, long n) {
#if defined(XY_CPU) && XY_IS_F32
  const long start = (long)get_global_id(0) * XY_PER_ITEM;
  if (start + 16 <= n) {
    vstore16(xy_sigmoid_act_f16(vload16(0, x + xo + start)), 0, y + yo + start);
    return;
  }
#endif
  XY_FOR_RUN(i, n) y[yo + i] = XF(xy_sigmoid_act)(x[xo + i]);
}
kernel void KNAME(sigmoid_s)(global const T* x, global T* y, xy_layout l, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long ox, oy;
  xy_offsets2(&l, i, &ox, &oy);
  y[oy] = XF(xy_sigmoid_act)(x[ox]);
}
