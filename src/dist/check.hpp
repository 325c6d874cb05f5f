#pragma once
// The checked mode: before a collective the ranks compare what they pass
// (one small all_reduce of a hash), and on a difference exchange the
// descriptions so each rank's error names its own side and the other's.
#include <string>

#include "xylem/dtype.hpp"
#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

// What one rank passes to one collective.
struct Signature {
  std::string call;   // "all_reduce(sum)", "broadcast(root 1)"
  std::string shape;  // "f32 [3, 4]"; empty for a call without a tensor
  DType dtype = DType::f32;
};

// Collective over `transport`. Returns when every rank passes the same;
// otherwise raises on every rank: dtype_mismatch, shape_mismatch, or
// invalid_argument (another call, root or reduction), naming this rank's
// signature and the first rank that differs.
void check_same(plugin::dist::Transport& transport, const Signature& mine, plugin::dist::Deadline deadline);

}  // namespace xylem::dist::detail
