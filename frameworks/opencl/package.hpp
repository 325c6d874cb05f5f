#pragma once
// The kernels of one op family (creation, copy, blas, elementwise, gemm,
// convert: the f16/bf16 <-> f32 conversions of blas::gemm) compiled for one
// device: a cl_program and its kernels with their work-group sizes.
#include <cstddef>
#include <string>
#include <string_view>
#include <map>
#include <memory>

#include "frameworks/opencl/cl.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::opencl {

struct DeviceInfo;

#define XYLEM_OPENCL_FAMILIES(X) \
  X(creation)                    \
  X(copy)                        \
  X(blas)                        \
  X(elementwise)                 \
  X(cast)                        \
  X(reduce)                      \
  X(softmax)                     \
  X(gemm)                        \
  X(norm)                        \
  X(conv)                        \
  X(pool)                        \
  X(lrn)                         \
  X(convert)

enum class Family {
#define XYLEM_OPENCL_FAMILY_ENUM(f) f,
  XYLEM_OPENCL_FAMILIES(XYLEM_OPENCL_FAMILY_ENUM)
#undef XYLEM_OPENCL_FAMILY_ENUM
};
#define XYLEM_OPENCL_FAMILY_COUNT(f) +1
inline constexpr std::size_t kFamilyCount = 0 XYLEM_OPENCL_FAMILIES(XYLEM_OPENCL_FAMILY_COUNT);
#undef XYLEM_OPENCL_FAMILY_COUNT
[[nodiscard]] std::string_view name(Family family) noexcept;

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

// The program source of a family for a device: math.h, the common helpers,
// then the family's kernels for f32 (and f64 when the device has it).
[[nodiscard]] std::string family_source(Family family, const DeviceInfo& device);
// Build options from the device's capabilities.
[[nodiscard]] std::string build_options(const DeviceInfo& device);

// Builds the family's program for the device, through the on-disk cache.
[[nodiscard]] std::unique_ptr<ProgramPackage> build_package(Family family, cl_context context,
                                                            const DeviceInfo& device);

}  // namespace xylem::opencl
