#pragma once
// The OpenCL headers as every file of the plugin includes them: the 1.2 API
// (what PoCL, Mesa, NVIDIA and AMD all offer), RAII handles for every cl
// object, and the one place CL status codes turn into xylem::Error.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>
#include <type_traits>
#include <string_view>
#include <utility>

#include "xylem/error.hpp"

namespace xylem::opencl {

// "CL_OUT_OF_RESOURCES" for -5; "CL error -9999" for codes we do not know.
[[nodiscard]] std::string cl_error_name(cl_int status);
// The xylem error code a CL status stands for (out of memory, compile
// failure, device lost, or internal).
[[nodiscard]] ErrorCode error_code_of(cl_int status) noexcept;

// Throws Error{error_code_of(status)} with "<what>: <CL name>" when status is
// not CL_SUCCESS. `what` names the operation, shapes, dtype and device.
inline void check(cl_int status, std::string_view what) {
  if (status != CL_SUCCESS) [[unlikely]]
    throw Error(error_code_of(status), std::string(what) + ": " + cl_error_name(status));
}
// The same with a message built only on failure.
template <class Describe>
  requires std::is_invocable_r_v<std::string, Describe>
inline void check(cl_int status, Describe&& describe) {
  if (status != CL_SUCCESS) [[unlikely]]
    throw Error(error_code_of(status), describe() + ": " + cl_error_name(status));
}

// A cl object owned by reference count: retained on copy, released on
// destruction.
template <class T, cl_int (*Retain)(T), cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T raw) noexcept : raw_(raw) {}  // takes ownership of one reference
  Handle(const Handle& o) noexcept : raw_(o.raw_) {
    if (raw_) Retain(raw_);
  }
  Handle(Handle&& o) noexcept : raw_(std::exchange(o.raw_, nullptr)) {}
  Handle& operator=(Handle o) noexcept {
    std::swap(raw_, o.raw_);
    return *this;
  }
  ~Handle() {
    if (raw_) Release(raw_);
  }
  // Adds a reference to a raw object we do not own.
  static Handle retain(T raw) noexcept {
    if (raw) Retain(raw);
    return Handle(raw);
  }
  [[nodiscard]] T get() const noexcept { return raw_; }
  [[nodiscard]] T release() noexcept { return std::exchange(raw_, nullptr); }
  [[nodiscard]] T* out() noexcept {  // for APIs that return the object through a pointer
    *this = Handle();
    return &raw_;
  }
  explicit operator bool() const noexcept { return raw_ != nullptr; }

 private:
  T raw_ = nullptr;
};

using Context = Handle<cl_context, clRetainContext, clReleaseContext>;
using Queue = Handle<cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue>;
using Mem = Handle<cl_mem, clRetainMemObject, clReleaseMemObject>;
using Program = Handle<cl_program, clRetainProgram, clReleaseProgram>;
using Kernel = Handle<cl_kernel, clRetainKernel, clReleaseKernel>;
using ClEventHandle = Handle<cl_event, clRetainEvent, clReleaseEvent>;

}  // namespace xylem::opencl
