#pragma once
// Launching one operation: the coherence protocol (DESIGN.md promise 3) in
// one place. The public op wrappers check their arguments, then describe
// the call with an OpLaunch and launch it.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "xylem/backend.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/tensor.hpp"

namespace xylem::detail {

enum class Access : std::uint8_t { read, write, read_write };

class OpLaunch {
 public:
  OpLaunch(const Backend& backend, plugin::OpId op) : OpLaunch(backend, op, plugin::op_name(op)) {}
  // `name` is what errors call the op: the public function ("nn::relu")
  // where several share one kernel op (math::unary).
  OpLaunch(const Backend& backend, plugin::OpId op, std::string_view name) : backend_(backend), name_(name) {
    call_.op = op;
  }

  OpLaunch& read(const Tensor& t) { return arg(t, Access::read); }
  // Write-only: the old contents are not needed (no transfer). A view that
  // does not cover its whole storage is treated as read-write, so the rest
  // of the data survives.
  OpLaunch& write(const Tensor& t) { return arg(t, Access::write); }
  OpLaunch& read_write(const Tensor& t) { return arg(t, Access::read_write); }
  // The output of y = ... + beta * y (BLAS): with beta 0 its old contents
  // are never read (NaN included), so it is write-only.
  OpLaunch& accumulate(const Tensor& t, double beta) { return beta == 0 ? write(t) : read_write(t); }
  // An optional argument left out: the kernel sees data == nullptr.
  OpLaunch& absent() {
    const int index = call_.num_tensors++;
    tensors_[index] = nullptr;
    return *this;
  }
  // An optional tensor: absent when t is an empty handle.
  OpLaunch& read_optional(const Tensor& t) { return t.defined() ? read(t) : absent(); }
  OpLaunch& write_optional(const Tensor& t) { return t.defined() ? write(t) : absent(); }
  OpLaunch& scalar(double value) {
    call_.f[num_f_++] = value;
    return *this;
  }
  OpLaunch& integer(std::int64_t value) {
    call_.i[num_i_++] = value;
    return *this;
  }

  // Syncs the inputs on the backend's device, allocates the outputs there,
  // enqueues the kernel and records the reads and writes. Throws before
  // any tensor changes. Falls back to native when the device cannot run
  // the op and the backend is configured to.
  //
  // Arguments that share memory follow NumPy's rule: the result is as if
  // every input were read before any output is written. An input that
  // overlaps an output is first copied to a temporary, except the exact
  // same elements in an elementwise op (in place, which its kernels
  // handle). Outputs that overlap each other, or an output view that names
  // one element twice, are an invalid_argument. A launch whose outputs
  // all have no elements runs nothing: they are valid as they are.
  EventPtr launch();

 private:
  OpLaunch& arg(const Tensor& t, Access access);
  // Which inputs overlap an output (invalid_argument where outputs overlap
  // each other or themselves).
  using InputsToCopy = std::array<bool, plugin::kMaxOpTensors>;
  [[nodiscard]] InputsToCopy check_overlaps() const;
  // The backend the op runs on: this one, or native as a fallback.
  const Backend& choose_backend();
  // Replaces those inputs by copies made on `backend`.
  void copy_inputs(const Backend& backend, const InputsToCopy& copy);
  [[nodiscard]] bool writes_nothing() const;  // every output has no elements
  EventPtr mark_empty_outputs_written();
  EventPtr launch_on(const Backend& backend);

  const Backend& backend_;
  std::string_view name_;
  plugin::OpCall call_;
  std::array<const Tensor*, plugin::kMaxOpTensors> tensors_{};
  std::array<Access, plugin::kMaxOpTensors> access_{};
  std::array<Tensor, plugin::kMaxOpTensors> copies_{};
  std::optional<Backend> fallback_;  // native, when the op falls back to it  // inputs copied away from an output
  int num_f_ = 0;
  int num_i_ = 0;
};

}  // namespace xylem::detail
