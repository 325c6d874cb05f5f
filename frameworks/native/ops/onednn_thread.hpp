#pragma once
// oneDNN on xylem's threads. Debian's oneDNN runs on OpenMP (libgomp),
// whose idle workers spin after each call beside oneTBB's (see
// conv2d_onednn.cpp); the native kernels instead split oneDNN's work over
// oneTBB themselves and keep oneDNN single-threaded inside each task.
#include <omp.h>

namespace xylem::native {

// oneDNN single-threaded on this thread while it lives (plans made then are
// tuned for one thread too); the thread's OpenMP setting comes back after,
// for whoever else uses OpenMP on it.
class OneOpenMpThread {
 public:
  OneOpenMpThread() : before_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOpenMpThread() { omp_set_num_threads(before_); }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int before_;
};

}  // namespace xylem::native
