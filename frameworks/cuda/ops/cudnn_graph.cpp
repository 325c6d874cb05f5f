#include "cudnn_graph.hpp"

#include <algorithm>
#include <string>

namespace xylem::cuda {
namespace {

// cuDNN 9.19 deprecates the handle attributes in favour of device-property
// descriptors, which older cuDNN 9 releases (9.14 on the H100 machine) lack;
// every cuDNN 9 still reads the handle.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

}  // namespace

std::optional<CudnnDescriptor> CudnnGraphCalls::graph(cudnnHandle_t handle,
                                                      const std::vector<cudnnBackendDescriptor_t>& ops,
                                                      std::string& why) const {
  for (const cudnnBackendDescriptor_t op : ops) {
    if (const cudnnStatus_t st = lib_.cudnnBackendFinalize(op); st != CUDNN_STATUS_SUCCESS) {
      why = std::string("operation: ") + lib_.cudnnGetErrorString(st);
      return std::nullopt;
    }
  }
  CudnnDescriptor g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::int64_t(ops.size()), ops.data());
  set(g, kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  if (const cudnnStatus_t st = lib_.cudnnBackendFinalize(g.get()); st != CUDNN_STATUS_SUCCESS) {
    why = std::string("operation graph: ") + lib_.cudnnGetErrorString(st);
    return std::nullopt;
  }
  return g;  // the graph keeps what it needs of the operations and tensors
}

std::vector<CudnnDescriptor> CudnnGraphCalls::configurations(const CudnnDescriptor& graph,
                                                             cudnnBackendHeurMode_t mode) const {
  CudnnDescriptor heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, {graph.get()});
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  std::vector<CudnnDescriptor> configs;
  // A heuristics mode cuDNN cannot serve for the graph lists nothing.
  std::int64_t count = 0;
  if (lib_.cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS ||
      lib_.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                    &count, nullptr) != CUDNN_STATUS_SUCCESS)
    return configs;
  configs.reserve(std::size_t(count));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) raw.push_back(configs.emplace_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)).get());
  std::int64_t returned = 0;
  if (lib_.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                    &returned, raw.data()) != CUDNN_STATUS_SUCCESS)
    returned = 0;
  configs.erase(configs.begin() + std::clamp<std::int64_t>(returned, 0, count), configs.end());
  return configs;
}

std::optional<CudnnDescriptor> CudnnGraphCalls::build(cudnnHandle_t handle, const CudnnDescriptor& config,
                                                      std::int64_t& workspace, std::uint64_t max_workspace) const {
  CudnnDescriptor plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(plan, kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, {config.get()});
  if (lib_.cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  std::int64_t n = 0;
  if (lib_.cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                    &workspace) != CUDNN_STATUS_SUCCESS)
    return std::nullopt;
  if (workspace < 0 || std::uint64_t(workspace) > max_workspace) return std::nullopt;
  return plan;
}

void CudnnGraphCalls::execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, std::int64_t count,
                              const std::int64_t* uids, void* const* pointers, void* workspace) const {
  CudnnDescriptor pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids);
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, pointers);
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  finalize(pack);
  XY_CUDNN(lib_, cudnnBackendExecute(handle, plan, pack.get()), device_, what_);
}

}  // namespace xylem::cuda
