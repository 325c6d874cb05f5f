#pragma once
// A small TCP exchange among the ranks of one node: every rank connects to
// rank 0, which gathers each round's blobs and sends all of them back.
// Enough to bootstrap a transport (to share an NCCL unique id, say) and to
// carry host collectives when MPI is absent. Every wait is bounded by a
// deadline: a rank that never joins or dies gives the others
// Error(timeout) or Error(communication), never a hang.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

using plugin::dist::Deadline;

// Where the ranks meet.
struct Endpoint {
  int rank = 0;
  int size = 1;
  std::string address = "127.0.0.1";
  int port = 29500;
};

// XYLEM_RANK, XYLEM_WORLD_SIZE, XYLEM_MASTER_ADDR (default 127.0.0.1) and
// XYLEM_MASTER_PORT (default 29500); nothing when XYLEM_WORLD_SIZE is not
// set. Throws invalid_argument for values that do not parse.
[[nodiscard]] std::optional<Endpoint> endpoint_from_env();

// A socket that closes itself.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();
  [[nodiscard]] int fd() const noexcept { return fd_; }
  int release() noexcept;

 private:
  int fd_ = -1;
};

class Rendezvous {
 public:
  // Rank 0 listens on the endpoint, the others connect (retrying until the
  // deadline: rank 0 may start last).
  Rendezvous(const Endpoint& at, Deadline deadline);
  // Rank 0 with a socket already listening (a sub-group's leader).
  Rendezvous(const Endpoint& at, Socket listening, Deadline deadline);
  Rendezvous(Rendezvous&&) noexcept = default;

  [[nodiscard]] int rank() const noexcept { return at_.rank; }
  [[nodiscard]] int size() const noexcept { return at_.size; }
  [[nodiscard]] const Endpoint& endpoint() const noexcept { return at_; }

  // Every rank's blob, in rank order (blobs may differ in size).
  [[nodiscard]] std::vector<std::vector<std::byte>> all_gather(std::span<const std::byte> blob, Deadline deadline);
  // Returns once every rank has called it.
  void barrier(Deadline deadline);

  // A socket listening on an ephemeral port of `address`, and the port.
  [[nodiscard]] static std::pair<Socket, int> listen_any(const std::string& address);

 private:
  void accept_all(Socket listening, Deadline deadline);
  void connect_to_root(Deadline deadline);

  Endpoint at_;
  std::vector<Socket> peers_;  // rank 0: one per other rank (index rank-1); others: rank 0 alone
};

}  // namespace xylem::dist::detail
