#pragma once
// What the native oneDNN engines share (conv2d_onednn.cpp, rnn_onednn.cpp):
// the process's CPU engine, a stream per thread, and per-thread buffers
// kept between calls.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "xylem/error.hpp"

namespace xylem::native {

inline constexpr std::size_t kOneDnnAlign = 64;
[[nodiscard]] inline std::size_t onednn_aligned(std::size_t bytes) noexcept {
  return (bytes + kOneDnnAlign - 1) / kOneDnnAlign * kOneDnnAlign;
}

// One CPU engine for the process, made at first use and never destroyed,
// so cached plans, which refer to the engine, never outlive it at exit.
inline const dnnl::engine& onednn_engine() {
  static const auto* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}
// A stream per thread: the ranges of one call run on several threads at once.
inline dnnl::stream& onednn_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

// A buffer kept between calls and grown as needed: fresh pages for each
// call would cost page faults comparable to the work itself. `what` names
// it in the out_of_memory error.
class OneDnnBuffer {
 public:
  explicit OneDnnBuffer(const char* what) : what_(what) {}
  std::byte* get(std::size_t bytes) {
    if (bytes > capacity_) {
      data_.reset();
      capacity_ = 0;
      data_.reset(static_cast<std::byte*>(std::aligned_alloc(kOneDnnAlign, onednn_aligned(bytes))));
      if (!data_) throw Error(ErrorCode::out_of_memory, std::string(what_) + " of " + std::to_string(bytes) + " bytes");
      capacity_ = onednn_aligned(bytes);
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  const char* what_;
  std::unique_ptr<std::byte, Free> data_;
  std::size_t capacity_ = 0;
};

// A thread's own OneDnnBuffer for each use Slot (a tag type), kept
// between calls: a call's ranges and the call itself each take theirs.
template <class Slot>
std::byte* onednn_thread_buffer(std::size_t bytes) {
  thread_local OneDnnBuffer buffer(Slot::what);
  return buffer.get(bytes);
}

}  // namespace xylem::native
