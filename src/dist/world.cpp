#include "dist/world.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "core/plugin_loader.hpp"
#include "core/registry.hpp"
#include "dist/rendezvous.hpp"
#include "dist/tcp_transport.hpp"
#include "xylem/dist.hpp"

namespace xylem::dist::detail {
namespace {

using plugin::dist::Transport;
namespace fs = std::filesystem;

constexpr const char* kMpiFile = "libxylem_mpi.so";

// Set by mpirun (Open MPI, or any PMI/PMIx launcher).
bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

// The MPI module's file on the plugin path, or why there is none.
fs::path find_mpi_module(std::string& reason) {
  std::string searched;
  for (const auto& dir : xylem::detail::plugin_directories()) {
    std::error_code ec;
    if (fs::is_regular_file(dir / kMpiFile, ec)) return dir / kMpiFile;
    searched += (searched.empty() ? "" : ", ") + dir.string();
  }
  reason = std::string(kMpiFile) + " not found (searched: " + searched +
           "); this build of xylem has no MPI (install libopenmpi-dev and rebuild)";
  return {};
}

// The module's entry, checked like a plugin's; null with `reason`.
const XylemDistInfo* open_mpi_module(std::string& reason) {
  const fs::path file = find_mpi_module(reason);
  if (file.empty()) return nullptr;
  void* handle = xylem::detail::open_module(file, reason);
  if (handle == nullptr) return nullptr;
  auto entry = reinterpret_cast<XylemDistEntryFn>(dlsym(handle, XYLEM_DIST_ENTRY_NAME));
  const XylemDistInfo* info = entry ? entry() : nullptr;
  if (info == nullptr) {
    reason = std::string(kMpiFile) + " has no " XYLEM_DIST_ENTRY_NAME "() entry point";
  } else if (info->api_version != plugin::kApiVersion ||
             std::string_view(info->abi_digest ? info->abi_digest : "") != plugin::kAbiDigest) {
    reason = std::string(kMpiFile) + " was built against other plugin headers: rebuild it with this xylem";
  } else {
    return info;  // kept loaded: its code runs until the process ends
  }
  dlclose(handle);
  return nullptr;
}

std::unique_ptr<Transport> start_mpi() {
  std::string reason;
  const XylemDistInfo* info = open_mpi_module(reason);
  const char* error = nullptr;
  Transport* t = info ? info->create_world(&error) : nullptr;
  if (t == nullptr)
    throw Error(ErrorCode::plugin_unavailable,
                "dist: the mpi transport is unavailable: " + (info ? std::string(error ? error : "no reason given") : reason));
  return std::unique_ptr<Transport>(t);
}

std::unique_ptr<Transport> start(const std::string& wanted, plugin::dist::Deadline deadline) {
  if (wanted == "mpi") return start_mpi();
  if (wanted == "self") return make_tcp_transport(Rendezvous(Endpoint{}, deadline));
  if (wanted == "tcp") {
    auto at = endpoint_from_env();
    if (!at)
      throw Error(ErrorCode::invalid_argument,
                  "dist: the tcp transport needs XYLEM_WORLD_SIZE and XYLEM_RANK (and XYLEM_MASTER_ADDR/PORT)");
    return make_tcp_transport(Rendezvous(*at, deadline));
  }
  if (!wanted.empty())
    throw Error(ErrorCode::invalid_argument, "dist: no transport '" + wanted + "' (mpi, tcp, self)");
  // Under mpirun without a working module, every rank alone would compute
  // wrong sums silently: refuse instead.
  if (launched_by_mpi()) return start_mpi();
  if (endpoint_from_env()) return start("tcp", deadline);
  return start("self", deadline);
}

}  // namespace

std::unique_ptr<Transport> start_world(const std::string& wanted, plugin::dist::Deadline deadline) {
  return start(wanted, deadline);
}

}  // namespace xylem::dist::detail

namespace xylem::dist {

std::vector<TransportInfo> transports() {
  std::vector<TransportInfo> list;
  std::string reason;
  const bool mpi = detail::open_mpi_module(reason) != nullptr;
  list.push_back({"mpi", mpi, mpi ? std::string() : reason});
  list.push_back({"tcp", true, {}});
  list.push_back({"self", true, {}});
  // NCCL lives in the cuda plugin; asking loads the plugin and NCCL, but
  // starts no communication.
  TransportInfo nccl{"nccl", false, {}};
  const xylem::detail::FrameworkEntry* cuda = xylem::detail::find_framework("cuda");
  if (cuda == nullptr || !cuda->available()) {
    nccl.reason = "no CUDA framework (" + (cuda ? cuda->reason : std::string("no cuda plugin")) + ")";
  } else if (plugin::dist::DeviceCollectives* lib = cuda->framework->collectives(nccl.reason)) {
    nccl.available = true;
    nccl.reason = lib->description();
  }
  list.push_back(std::move(nccl));
  return list;
}

}  // namespace xylem::dist
