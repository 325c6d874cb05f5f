/* nn activations and their gradients, elementwise over views of any
 * strides. Each op has a contiguous kernel (_c: a chunk of `per` elements
 * per work-item, see XY_CHUNK_BOUNDS in common.cl) and a strided one (_s:
 * offsets from the layout). The scalar formulas are math.h's (f32 sigmoid
 * and tanh: common.cl's, on its fast exp); the vector ones below compute
 * the same operations in the same order over VT. */

inline VT XV(xy_relu)(VT x) { return select((VT)0, x, x > (VT)0); }
inline VT XV(xy_relu_grad)(VT x, VT dy) { return select((VT)0, dy, x > (VT)0); }
inline VT XV(xy_sigmoid_grad)(VT y, VT dy) { return dy * y * ((T)1 - y); }
inline VT XV(xy_tanh_grad)(VT y, VT dy) { return dy * ((T)1 - y * y); }

/* y = fn(x) over [i, end): vectors (streamed when asked and y is aligned),
 * then the scalar rest. */
#ifdef XY_CPU
#define XY_MAP1_VEC(fn, vfn)                                                     \
  if (stream) {                                                                  \
    for (; i < end && !XY_ALIGNED(y + i, sizeof(VT)); ++i) y[i] = fn(x[i]);     \
    for (; i + VW <= end; i += VW) XY_VSTREAM(VT, vfn(VLOAD(0, x + i)), y + i);  \
  }                                                                              \
  for (; i + VW <= end; i += VW) VSTORE(vfn(VLOAD(0, x + i)), 0, y + i);
#define XY_MAP2_VEC(fn, vfn)                                                                   \
  if (stream) {                                                                                \
    for (; i < end && !XY_ALIGNED(y + i, sizeof(VT)); ++i) y[i] = fn(a[i], b[i]);             \
    for (; i + VW <= end; i += VW) XY_VSTREAM(VT, vfn(VLOAD(0, a + i), VLOAD(0, b + i)), y + i); \
  }                                                                                            \
  for (; i + VW <= end; i += VW) VSTORE(vfn(VLOAD(0, a + i), VLOAD(0, b + i)), 0, y + i);
#else
#define XY_MAP1_VEC(fn, vfn) (void)stream;
#define XY_MAP2_VEC(fn, vfn) (void)stream;
#endif

#define XY_UNARY(name, fn, vfn)                                                                \
  kernel void KNAME(name##_c)(global const T* x, long xo, global T* y, long yo, long n, int stream, \
                              long per) {                                                      \
    x += xo;                                                                                   \
    y += yo;                                                                                   \
    XY_CHUNK_BOUNDS(i, end, n, per);                                                           \
    XY_MAP1_VEC(fn, vfn)                                                                       \
    for (; i < end; ++i) y[i] = fn(x[i]);                                                      \
  }                                                                                            \
  kernel void KNAME(name##_s)(global const T* x, global T* y, xy_layout l, long n) {          \
    const long i = get_global_id(0);                                                           \
    if (i >= n) return;                                                                        \
    long ox, oy;                                                                               \
    xy_offsets2(&l, i, &ox, &oy);                                                              \
    y[oy] = fn(x[ox]);                                                                         \
  }

#define XY_BINARY(name, fn, vfn)                                                                       \
  kernel void KNAME(name##_c)(global const T* a, long ao, global const T* b, long bo, global T* y,   \
                              long yo, long n, int stream, long per) {                               \
    a += ao;                                                                                           \
    b += bo;                                                                                           \
    y += yo;                                                                                           \
    XY_CHUNK_BOUNDS(i, end, n, per);                                                                   \
    XY_MAP2_VEC(fn, vfn)                                                                               \
    for (; i < end; ++i) y[i] = fn(a[i], b[i]);                                                        \
  }                                                                                                    \
  kernel void KNAME(name##_s)(global const T* a, global const T* b, global T* y, xy_layout l, long n) { \
    const long i = get_global_id(0);                                                                   \
    if (i >= n) return;                                                                                \
    long oa, ob, oy;                                                                                   \
    xy_offsets3(&l, i, &oa, &ob, &oy);                                                                 \
    y[oy] = fn(a[oa], b[ob]);                                                                          \
  }

XY_UNARY(relu, XF(xy_relu), XV(xy_relu))
XY_UNARY(sigmoid, XF(xy_sigmoid_act), XV(xy_sigmoid_act))
XY_UNARY(tanh, XF(xy_tanh_act), XV(xy_tanh_act))
XY_BINARY(sigmoid_grad, XF(xy_sigmoid_grad), XV(xy_sigmoid_grad))
XY_BINARY(relu_grad, XF(xy_relu_grad), XV(xy_relu_grad))
XY_BINARY(tanh_grad, XF(xy_tanh_grad), XV(xy_tanh_grad))
