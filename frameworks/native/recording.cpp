#include "frameworks/native/recording.hpp"

#include <string>
#include <utility>

#include "xylem/error.hpp"

namespace xylem::native {

Kernel kernel_of(const plugin::OpCall& call) {
  const Kernel kernel = kernels().get(call.op, dispatch_dtype(call));
  if (kernel == nullptr)
    throw Error(ErrorCode::unsupported, std::string(plugin::op_name(call.op)) + " has no native kernel for " +
                                            std::string(name(dispatch_dtype(call))));
  return kernel;
}

void NativeRecording::add(const plugin::OpCall& call) { kernels_->push_back(kernel_of(call)); }

EventPtr NativeRecording::replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) {
  if (calls.size() != kernels_->size())
    throw Error(ErrorCode::internal, "native replay: " + std::to_string(calls.size()) + " calls for " +
                                         std::to_string(kernels_->size()) + " recorded kernels");
  return queue_.enqueue(
      [kernels = kernels_, calls = std::move(calls)] {
        for (std::size_t i = 0; i < calls.size(); ++i) (*kernels)[i](calls[i]);
      },
      deps);
}

}  // namespace xylem::native
