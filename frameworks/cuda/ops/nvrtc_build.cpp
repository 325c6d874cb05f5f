#include "frameworks/cuda/ops/nvrtc_build.hpp"

#include <map>
#include <mutex>

#include "../check.hpp"
#include "frameworks/opencl/program_cache.hpp"
#include "nvrtc_library.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

// A CUBIN from NVRTC; compile_failed with NVRTC's log otherwise.
std::vector<unsigned char> compile(const NvrtcLibrary& nvrtc, const std::string& source, const std::string& arch,
                                   const std::string& label) {
  NvrtcProgram program = nullptr;
  if (nvrtc.nvrtcCreateProgram(&program, source.c_str(), "xylem_fused.cu", 0, nullptr, nullptr) != kNvrtcSuccess)
    throw Error(ErrorCode::compile_failed, label + ": NVRTC could not create the program");
  struct Destroy {
    const NvrtcLibrary& nvrtc;
    NvrtcProgram* program;
    ~Destroy() { (void)nvrtc.nvrtcDestroyProgram(program); }
  } destroy{nvrtc, &program};
  const std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "--std=c++17"};
  const NvrtcResult result = nvrtc.nvrtcCompileProgram(program, 2, options);
  if (result != kNvrtcSuccess) {
    std::size_t size = 0;
    std::string log;
    if (nvrtc.nvrtcGetProgramLogSize(program, &size) == kNvrtcSuccess && size > 1) {
      log.resize(size);
      if (nvrtc.nvrtcGetProgramLog(program, log.data()) != kNvrtcSuccess) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    throw Error(ErrorCode::compile_failed, label + ": NVRTC failed (" + nvrtc.nvrtcGetErrorString(result) +
                                               ", " + arch_option + "). Log:\n" + log);
  }
  std::size_t size = 0;
  if (nvrtc.nvrtcGetCUBINSize(program, &size) != kNvrtcSuccess || size == 0)
    throw Error(ErrorCode::compile_failed, label + ": NVRTC gave no CUBIN for " + arch);
  std::vector<unsigned char> cubin(size);
  if (nvrtc.nvrtcGetCUBIN(program, reinterpret_cast<char*>(cubin.data())) != kNvrtcSuccess)
    throw Error(ErrorCode::compile_failed, label + ": NVRTC's CUBIN could not be read");
  return cubin;
}

}  // namespace

std::string nvrtc_architecture(int device) {
  static std::mutex mutex;
  static std::map<int, std::string> architectures;
  std::lock_guard lock(mutex);
  if (const auto it = architectures.find(device); it != architectures.end()) return it->second;
  int major = 0, minor = 0;
  XY_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), device, "NVRTC");
  XY_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), device, "NVRTC");
  return architectures.emplace(device, "sm_" + std::to_string(major) + std::to_string(minor)).first->second;
}

std::vector<cudaKernel_t> nvrtc_kernels(const NvrtcBuild& build, int device) {
  std::string why;
  const NvrtcLibrary* nvrtc = nvrtc_library(&why);
  if (nvrtc == nullptr) throw Error(ErrorCode::unsupported, build.what + " on cuda:" + std::to_string(device) + ": " + why);
  const std::string arch = nvrtc_architecture(device);
  const std::string label = build.label + " for " + arch;
  std::string names;
  for (const std::string& k : build.kernels) names += (names.empty() ? "" : " ") + k;
  const std::string cache_key = build.key + "\narch=" + arch + "\nnvrtc=" + std::to_string(nvrtc->major) + "." +
                                std::to_string(nvrtc->minor) +
                                "\nsource=" + std::to_string(opencl::fnv1a64(build.source)) + "\n";
  const opencl::ProgramCache cache = opencl::ProgramCache::from_environment();
  std::vector<unsigned char> cubin;
  bool from_cache = false;
  if (auto entry = cache.load(cache_key); entry && entry->kernel_names == names && !entry->binary.empty()) {
    cubin = std::move(entry->binary);
    from_cache = true;
  } else {
    cubin = compile(*nvrtc, build.source, arch, label);
  }
  cudaLibrary_t library = nullptr;
  cudaError_t err = cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (err != cudaSuccess && from_cache) {
    // A stale or foreign entry: compile afresh and replace it.
    (void)cudaGetLastError();
    cache.remove(cache_key);
    from_cache = false;
    cubin = compile(*nvrtc, build.source, arch, label);
    err = cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  }
  XY_CUDA(err, device, label);
  std::vector<cudaKernel_t> made(build.kernels.size(), nullptr);
  for (std::size_t k = 0; k < made.size(); ++k)
    XY_CUDA(cudaLibraryGetKernel(&made[k], library, build.kernels[k].c_str()), device, label);
  if (!from_cache) (void)cache.store(cache_key, opencl::CacheEntry{names, cubin});
  return made;
}

}  // namespace xylem::cuda
