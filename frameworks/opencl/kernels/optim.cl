/* optim::sgd_step and adam_step: contiguous tensors (each with its offset
 * in elements), updated in place, each work-item a run of `per` elements
 * (XY_CHUNK_BOUNDS, as Launcher::run_chunks_in_place launches), each
 * element by math.h's formula. Without a momentum buffer, `b` is any
 * buffer and never touched. */
kernel void KNAME(sgd_step)(global T* p, long po, global const T* g, long go, global T* b, long bo, int has_buffer,
                            long n, T lr, T momentum, T dampening, T weight_decay, int nesterov, int first_step,
                            long per) {
  p += po;
  g += go;
  b += bo;
  XY_CHUNK_BOUNDS(i, end, n, per);
  for (; i < end; ++i) {
    T buf = has_buffer ? b[i] : (T)0;
    p[i] = XF(xy_sgd_step)(p[i], g[i], &buf, lr, momentum, dampening, weight_decay, nesterov, first_step);
    if (has_buffer) b[i] = buf;
  }
}

kernel void KNAME(adam_step)(global T* p, long po, global const T* g, long go, global T* m, long mo, global T* v,
                             long vo, long n, T lr, T beta1, T beta2, T eps, T weight_decay, T bias_correction1,
                             T bias_correction2, int decoupled, long per) {
  p += po;
  g += go;
  m += mo;
  v += vo;
  XY_CHUNK_BOUNDS(i, end, n, per);
  for (; i < end; ++i) {
    T mi = m[i], vi = v[i];
    p[i] = XF(xy_adam_step)(p[i], g[i], &mi, &vi, lr, beta1, beta2, eps, weight_decay, bias_correction1,
                            bias_correction2, decoupled);
    m[i] = mi;
    v[i] = vi;
  }
}
