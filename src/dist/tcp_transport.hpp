#pragma once
// Host collectives over the rendezvous when MPI is absent: every rank's
// data goes through rank 0 and each rank combines all of it, in rank order
// (so every rank computes the same bits). Simple, not fast: for one node,
// small groups and bootstrapping; MPI is the host path that scales.
#include <memory>

#include "dist/rendezvous.hpp"
#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

// A transport over `rendezvous`. A group of one needs no sockets.
[[nodiscard]] std::unique_ptr<plugin::dist::Transport> make_tcp_transport(Rendezvous rendezvous);

}  // namespace xylem::dist::detail
