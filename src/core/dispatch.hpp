#pragma once
// Launching one operation: the coherence protocol (docs/ARCHITECTURE.md) in
// one place. The public op wrappers check their arguments, then describe
// the call with an OpLaunch and launch it.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "xylem/backend.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/tensor.hpp"

namespace xylem::detail {

namespace args = plugin::args;
using plugin::Access;

// The tensors of an op's arguments (args::math_unary<TensorRef>), where the
// caller's tensors outlive the launch: a launch from a hot wrapper then
// copies no tensor handle (each copy is an atomic reference count up and
// down again).
using TensorRef = std::reference_wrapper<const Tensor>;

class OpLaunch {
 public:
  // The op's arguments by name, as the op list declares them
  // (args::blas_gemm<Tensor>{.a = ..., .beta = ...}, or of TensorRef); each tensor's access
  // comes from the list. `args` must outlive the launch. `name` is what
  // errors call the op: the public function ("nn::relu") where several
  // share one kernel op (math::unary).
  template <template <class> class A, class T>
  OpLaunch(const Backend& backend, const A<T>& args, std::string_view name = plugin::op_name(A<T>::id))
      : backend_(backend), name_(name) {
    call_.op = A<T>::id;
    Collect collect{*this};
    plugin::detail::ArgsTraits<A>::visit(args, collect);
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
  struct Collect {
    OpLaunch& launch;
    void tensor(const Tensor& t, const plugin::TensorParam& param, Access access) { launch.arg(t, param, access); }
    void integer(std::int64_t value) { launch.call_.i[launch.num_i_++] = value; }
    void real(double value) { launch.call_.f[launch.num_f_++] = value; }
  };
  // An undefined tensor is an absent optional argument (the kernel sees
  // data == nullptr), or an invalid_argument where the op requires it.
  void arg(const Tensor& t, const plugin::TensorParam& param, Access access);
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
  // Inputs copied away from an output: made only when one is (a launch
  // otherwise builds and destroys no tensor here).
  std::unique_ptr<std::array<Tensor, plugin::kMaxOpTensors>> copies_;
  std::optional<Backend> fallback_;                      // native, when the op falls back to it
  int num_f_ = 0;
  int num_i_ = 0;
};

// Whether `t` is its storage's every byte, in order from the first (a fresh
// whole tensor): writing it reads nothing of what was there.
[[nodiscard]] bool covers_whole_storage(const Tensor& t);

// Launches one op: OpLaunch(backend, args, name).launch().
template <template <class> class A, class T>
EventPtr launch(const Backend& backend, const A<T>& args, std::string_view name = plugin::op_name(A<T>::id)) {
  return OpLaunch(backend, args, name).launch();
}

}  // namespace xylem::detail
