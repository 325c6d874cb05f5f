#pragma once
// What the parts of xylem_bench_opencl share: a table row and the function
// that measures one op on the OpenCL backend and on native in the same run.
#include <xylem/xylem.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace xylem_bench {

struct Row {
  std::string op;
  std::string unit;  // "GB/s" or "GFLOP/s"
  double ours = 0, native = 0;
  double need = 0;  // the ratio asked for, 0 when none
  // The quartiles of the run-by-run ratios ours/native (each run times one
  // call on each backend, back to back): the spread under this machine's
  // load. 0 where a row has no pairs.
  double ratio_q1 = 0, ratio_q3 = 0;
};

// Makes an op's tensors on a backend and returns the call to time.
using MakeOp = std::function<std::function<void()>(const xylem::Backend&)>;
// Times the op made on each backend, alternating the two; `work` (bytes
// moved or flops) per call divided by the median time gives the rates.
using Compare = std::function<void(const std::string& op, const std::string& unit, double work, double need,
                                   const MakeOp& make)>;

// The rows of the nn ops and of the reductions and bf16 math next to them
// (opencl_nn_bench.cpp): convolution, batch norm, pooling, LRN, the sum
// along axis 0 and bf16 exp. `n` elements sizes the memory-bound rows.
void nn_rows(const Compare& compare, std::int64_t n);

}  // namespace xylem_bench
