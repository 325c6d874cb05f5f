#pragma once
// Starting the transport over every rank of the job: MPI through its
// optional module, the TCP rendezvous, or a group of one.
#include <memory>
#include <string>

#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

// Starts the transport over every rank: `wanted` ("mpi", "tcp", "self",
// or empty for the best present). The caller keeps it (a process starts
// one). Throws plugin_unavailable (MPI asked for or launched under mpirun, but
// its module cannot start), invalid_argument (a bad name, an environment
// that does not parse), timeout or communication (the rendezvous failed).
[[nodiscard]] std::unique_ptr<plugin::dist::Transport> start_world(const std::string& wanted,
                                                                   plugin::dist::Deadline deadline);

}  // namespace xylem::dist::detail
