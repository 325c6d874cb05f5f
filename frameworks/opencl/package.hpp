#pragma once
// The kernels of one program (program_spec.hpp) for one pass, compiled for
// one device: a cl_program and its kernels with their work-group sizes.
#include <compare>
#include <cstddef>
#include <string>
#include <string_view>
#include <map>
#include <memory>

#include "frameworks/opencl/cl.hpp"
#include "frameworks/opencl/program_spec.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::opencl {

struct DeviceInfo;

struct KernelInfo {
  Kernel kernel;
  std::string name;
  std::size_t local = 1;     // work-group size launches use
  std::size_t max_local = 1; // CL_KERNEL_WORK_GROUP_SIZE
};

class ProgramPackage final : public plugin::Package {
 public:
  ProgramPackage(Program program, const DeviceInfo& device, double build_ms, bool from_cache);
  // Throws internal when the program has no such kernel (a bug of ours).
  [[nodiscard]] const KernelInfo& kernel(std::string_view name) const;
  [[nodiscard]] double build_ms() const noexcept { return build_ms_; }
  [[nodiscard]] bool from_cache() const noexcept { return from_cache_; }

 private:
  Program program_;
  std::map<std::string, KernelInfo, std::less<>> kernels_;
  double build_ms_;
  bool from_cache_;
};

// One program of a spec: the pass (element type) and the variant (op code)
// it is built for.
struct ProgramKey {
  const ProgramSpec* spec = nullptr;
  DType pass = DType::f32;
  int variant = 0;
  friend auto operator<=>(const ProgramKey&, const ProgramKey&) = default;
};

// The source of a program for a device: math.h, the common helpers, then
// the program's kernels for the pass's element type and its variant.
[[nodiscard]] std::string program_source(const ProgramKey& program);
// Build options from the device's capabilities.
[[nodiscard]] std::string build_options(const DeviceInfo& device);

// "unary sigmoid f32", "blas f64": a program in messages.
[[nodiscard]] std::string program_label(const ProgramKey& program);

// Builds a program for the device, through the on-disk cache.
[[nodiscard]] std::unique_ptr<ProgramPackage> build_package(const ProgramKey& program, cl_context context,
                                                            const DeviceInfo& device);

}  // namespace xylem::opencl
