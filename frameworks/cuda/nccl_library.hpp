#pragma once
// NCCL, loaded at run time with dlopen on first use (a collective on CUDA
// tensors, or `xylem info`), like cuBLAS and cuDNN: the plugin never links
// it, so machines without NCCL run everything else. The function types come
// from nccl_api.hpp (which says why it is ours).
#include <string>

#include "nccl_api.hpp"

namespace xylem::cuda {

#define XYLEM_NCCL_FUNCTIONS(X)                                                                              \
  X(ncclGetVersion) X(ncclGetErrorString) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommGetAsyncError) \
  X(ncclCommAbort) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclAllReduce) X(ncclBroadcast) X(ncclReduce)     \
  X(ncclAllGather) X(ncclReduceScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

struct NcclLibrary {
#define XYLEM_NCCL_POINTER(name) decltype(&::name) name = nullptr;
  XYLEM_NCCL_FUNCTIONS(XYLEM_NCCL_POINTER)
#undef XYLEM_NCCL_POINTER
  int version = 0;  // ncclGetVersion's code: 22105 for 2.21.5
  // From 2.18 on, null before: the blocking communicators the calls run on
  // are split from the non-blocking one a group starts with (nccl_transport.cpp).
  decltype(&::ncclCommSplit) ncclCommSplit = nullptr;
};

// The library, or null with `why` (not found, a symbol missing, older than
// the non-blocking communicators of 2.17). Loads it once, thread-safe.
[[nodiscard]] const NcclLibrary* nccl(std::string& why);

// "NCCL 2.21.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2)", or why there is none.
[[nodiscard]] std::string nccl_description();

}  // namespace xylem::cuda
