// Program packages: the source of each program pass, the build options, and the
// build itself through the on-disk cache (program_cache.hpp).
#include "frameworks/opencl/package.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "frameworks/opencl/device.hpp"
#include "frameworks/opencl/program_cache.hpp"
#include "frameworks/opencl/sources.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::opencl {

namespace {

// A program's kernels for one element type: T is the type computed in, ST
// the type stored (T, or half / ushort for f16 / bf16), SUF the kernel name
// suffix, FS the suffix of math.h's functions (xy_sigmoid_f / _d), VT the
// vector of one 512-bit register (VW elements) the CPU paths compute in.
void append_typed(std::string& out, std::string_view text, const char* type, const char* storage,
                  const char* suffix, const char* fn_suffix) {
  const bool f32 = std::string_view(type) == "float";
  out += "\n#define T ";
  out += type;
  out += "\n#define ST ";
  out += storage;
  out += "\n#define SUF ";
  out += suffix;
  out += "\n#define FS ";
  out += fn_suffix;
  out += "\n#define XY_IS_F32 ";
  out += f32 ? "1" : "0";
  // VI: the integer vector a comparison of two VT gives; VIOTA its lanes'
  // numbers.
  out += f32 ? "\n#define VT float16\n#define VW 16\n#define VLOAD vload16\n#define VSTORE vstore16\n"
               "#define VI int16\n#define VI_SCALAR int\n"
               "#define VIOTA ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))\n"
             : "\n#define VT double8\n#define VW 8\n#define VLOAD vload8\n#define VSTORE vstore8\n"
               "#define VI long8\n#define VI_SCALAR long\n#define VIOTA ((long8)(0, 1, 2, 3, 4, 5, 6, 7))\n";
  out += text;
  out += "\n#undef T\n#undef ST\n#undef SUF\n#undef FS\n#undef XY_IS_F32\n#undef VT\n#undef VW\n#undef VLOAD\n#undef VSTORE\n"
         "#undef VI\n#undef VI_SCALAR\n#undef VIOTA\n";
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("XYLEM_OPENCL_VERBOSE");
    return v && *v && *v != '0';
  }();
  return on;
}

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS)
    return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::vector<unsigned char> program_binary(cl_program program) {
  std::size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return {};
  std::vector<unsigned char> binary(size);
  unsigned char* ptr = binary.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return {};
  return binary;
}

// The kernels a built program holds, as kernel_name_list() gives them; ""
// when the driver cannot say (then only the key and checksum vouch for an
// entry).
std::string program_kernel_names(cl_program program) {
  std::size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string names(size, '\0');
  if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, names.data(), nullptr) != CL_SUCCESS) return {};
  while (!names.empty() && names.back() == '\0') names.pop_back();
  return kernel_name_list(names);
}

void fault_point(const std::string& label, const DeviceInfo& device, const char* from) {
  if (plugin::should_fail(plugin::FaultSite::kernel_build, "opencl"))
    throw Error(ErrorCode::compile_failed, "opencl: building the " + label + " kernels for " + device.name +
                                               " from " + from + " failed (injected fault)");
}

// A program from a cache entry, or nothing when the driver refuses the
// binary (another driver build, say) or the program does not hold the
// kernels the entry names (another program's binary): the caller then
// compiles from source.
Program from_binary(cl_context context, const DeviceInfo& device, const std::string& label, const CacheEntry& entry,
                    const std::string& options) {
  fault_point(label, device, "its cached binary");
  const unsigned char* ptr = entry.binary.data();
  const std::size_t size = entry.binary.size();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  Program program(clCreateProgramWithBinary(context, 1, &device.id, &size, &ptr, &binary_status, &status));
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) return {};
  if (clBuildProgram(program.get(), 1, &device.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) return {};
  if (program_kernel_names(program.get()) != entry.kernel_names) return {};
  return program;
}

Program from_source(cl_context context, const DeviceInfo& device, const std::string& label, const std::string& source,
                    const std::string& options) {
  fault_point(label, device, "source");
  const char* text = source.c_str();
  const std::size_t length = source.size();
  cl_int status = CL_SUCCESS;
  Program program(clCreateProgramWithSource(context, 1, &text, &length, &status));
  check(status, [&] { return "opencl: creating the " + label + " program for " + device.name; });
  status = clBuildProgram(program.get(), 1, &device.id, options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    throw Error(ErrorCode::compile_failed, "opencl: building the " + label + " kernels for " +
                                               device.name + " (options \"" + options + "\") failed with " +
                                               cl_error_name(status) + ". Build log:\n" +
                                               build_log(program.get(), device.id));
  }
  return program;
}

// A power of two (the reduction trees halve it), a multiple of what the
// kernel prefers, within what it allows. CPU devices run a work-group as a
// loop over its items, so larger groups amortise the per-group cost; GPUs
// want several groups per compute unit.
std::size_t choose_local_size(const DeviceInfo& device, std::size_t max_local, std::size_t multiple) {
  (void)multiple;  // powers of two are multiples of every preferred size seen in practice
  std::size_t target = (device.type & CL_DEVICE_TYPE_CPU) ? 1024 : 256;
  if (const char* v = std::getenv("XYLEM_OPENCL_LOCAL"); v && *v) target = std::strtoull(v, nullptr, 10);
  std::size_t local = std::min(target, max_local);
  std::size_t pow2 = 1;
  while (pow2 * 2 <= local) pow2 *= 2;
  return std::max<std::size_t>(pow2, 1);
}

}  // namespace

std::string build_options(const DeviceInfo& device) {
  // OpenCL C 1.2 is all the kernels need; older compilers get their own.
  std::string options = device.c_version >= 120 ? "-cl-std=CL1.2" : "-cl-std=CL1.1";
  if (device.fp64) options += " -DXY_HAS_FP64=1";
  if (device.type & CL_DEVICE_TYPE_CPU) options += " -DXY_CPU=1";
  return options;
}

std::string program_label(const ProgramKey& program) {
  const ProgramSpec& spec = *program.spec;
  std::string label(spec.name);
  if (spec.variants > 1) {
    label += ' ';
    label += spec.variant_name ? spec.variant_name(program.variant) : std::to_string(program.variant);
  }
  label += ' ';
  label += name(program.pass);
  return label;
}

std::string program_source(const ProgramKey& program) {
  const ProgramSpec& spec = *program.spec;
  const DType pass = program.pass;
  std::string source =
      "#if defined(cl_khr_fp64)\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n";
  source += sources::math_h;
  source += "\n";
  source += sources::common;
  source += sources::storage;
  if (spec.helpers != Helpers::none) source += sources::nn_common;
  if (spec.helpers == Helpers::rows) source += sources::rows;
  std::string text;
  if (!spec.variant_define.empty())
    text += "\n#define " + std::string(spec.variant_define) + " " + std::to_string(program.variant) + "\n";
  if (spec.variant_source) text += "\n" + spec.variant_source(program.variant);
  for (const std::string_view* part : spec.texts)
    if (part) text += *part;
  switch (pass) {
    case DType::f16:
      append_typed(source, text, "float", "half", "f16", "f");
      break;
    case DType::bf16:
      append_typed(source, text, "float", "ushort", "bf16", "f");
      break;
    case DType::f64:
      append_typed(source, text, "double", "double", "f64", "d");
      break;
    case DType::i32:  // Passes::integers: math.h's xy_int_*_i32
      append_typed(source, text, "int", "int", "i32", "i32");
      break;
    case DType::i64:
      append_typed(source, text, "long", "long", "i64", "i64");
      break;
    default:
      append_typed(source, text, "float", "float", "f32", "f");
      break;
  }
  return source;
}

std::unique_ptr<ProgramPackage> build_package(const ProgramKey& program_key, cl_context context,
                                              const DeviceInfo& device) {
  const auto start = std::chrono::steady_clock::now();
  const std::string label = program_label(program_key);
  const std::string options = build_options(device);
  const std::string source = program_source(program_key);
  // Everything the binary depends on. The platform version names the
  // runtime build; the driver version the device's compiler.
  const std::string key = "xylem-opencl\nprogram=" + std::string(program_key.spec->name) +
                          "\nvariant=" + std::to_string(program_key.variant) +
                          "\npass=" + std::string(name(program_key.pass)) +
                          "\ndevice=" + device.name + "\ndriver=" + device.driver +
                          "\nplatform=" + device.platform_version + "\noptions=" + options +
                          "\nsource=" + std::to_string(fnv1a64(source)) + "\n";
  const ProgramCache cache = ProgramCache::from_environment();

  Program program;
  bool from_cache = false;
  if (auto entry = cache.load(key)) {
    program = from_binary(context, device, label, *entry, options);
    from_cache = static_cast<bool>(program);
  }
  if (!program) {
    program = from_source(context, device, label, source, options);
    // Asked for the binary, PoCL compiles every kernel of the program for
    // a generic work-group size (about 0.2 s a kernel on 2 idle cores, more
    // than the build), hence programs of one op code each. Written before
    // the call returns: a background writer would race the OpenCL
    // compiler's own exit handlers in short processes. The store replaces
    // whatever entry was there (stale, corrupt or another program's).
    (void)cache.store(key, CacheEntry{program_kernel_names(program.get()), program_binary(program.get())});
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto package = std::make_unique<ProgramPackage>(std::move(program), device, ms, from_cache);
  if (verbose()) {
    std::fprintf(stderr, "xylem opencl: %s kernels for %s %s in %.1f ms (%s)\n", label.c_str(), device.name.c_str(),
                 from_cache ? "loaded from cache" : "compiled", ms, cache.path_for(key).string().c_str());
  }
  return package;
}

ProgramPackage::ProgramPackage(Program program, const DeviceInfo& device, double build_ms, bool from_cache)
    : program_(std::move(program)), build_ms_(build_ms), from_cache_(from_cache) {
  cl_uint count = 0;
  check(clCreateKernelsInProgram(program_.get(), 0, nullptr, &count), "opencl: counting kernels");
  std::vector<cl_kernel> raw(count);
  check(clCreateKernelsInProgram(program_.get(), count, raw.data(), nullptr), "opencl: creating kernels");
  for (cl_kernel k : raw) {
    KernelInfo info;
    info.kernel = Kernel(k);
    std::size_t size = 0;
    check(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size), "opencl: kernel name");
    info.name.resize(size);
    check(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, size, info.name.data(), nullptr), "opencl: kernel name");
    while (!info.name.empty() && info.name.back() == '\0') info.name.pop_back();
    check(clGetKernelWorkGroupInfo(k, device.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof info.max_local,
                                   &info.max_local, nullptr),
          [&] { return "opencl: work-group size of " + info.name; });
    std::size_t multiple = 1;
    check(clGetKernelWorkGroupInfo(k, device.id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof multiple,
                                   &multiple, nullptr),
          [&] { return "opencl: preferred work-group multiple of " + info.name; });
    info.local = choose_local_size(device, info.max_local, std::max<std::size_t>(multiple, 1));
    std::string key = info.name;
    kernels_.emplace(std::move(key), std::move(info));
  }
}

const KernelInfo& ProgramPackage::kernel(std::string_view kernel_name) const {
  const auto it = kernels_.find(kernel_name);
  if (it == kernels_.end())
    throw Error(ErrorCode::internal, "opencl: kernel " + std::string(kernel_name) + " is missing from its program");
  return it->second;
}

}  // namespace xylem::opencl
