#include "dist/tcp_transport.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "xylem/error.hpp"

namespace xylem::dist::detail {
namespace {

using plugin::dist::Combine;
using plugin::dist::combine;

std::span<const std::byte> bytes_of(const void* data, std::size_t n) {
  return {static_cast<const std::byte*>(data), n};
}

class TcpTransport final : public plugin::dist::Transport {
 public:
  explicit TcpTransport(Rendezvous rendezvous) : net_(std::move(rendezvous)) {}

  int rank() const noexcept override { return net_.rank(); }
  int size() const noexcept override { return net_.size(); }
  std::string_view name() const noexcept override { return net_.size() == 1 ? "self" : "tcp"; }

  void all_reduce(void* data, std::size_t count, DType dtype, Combine op, Deadline deadline) override {
    auto all = net_.all_gather(bytes_of(data, count * size_of(dtype)), deadline);
    combine_all(all, 0, data, count, dtype, op);
  }

  void broadcast(void* data, std::size_t bytes, int root, Deadline deadline) override {
    auto all = net_.all_gather(rank() == root ? bytes_of(data, bytes) : std::span<const std::byte>{}, deadline);
    if (rank() != root && bytes > 0) std::memcpy(data, all[std::size_t(root)].data(), bytes);
  }

  void reduce(void* data, std::size_t count, DType dtype, Combine op, int root, Deadline deadline) override {
    auto all = net_.all_gather(bytes_of(data, count * size_of(dtype)), deadline);
    if (rank() == root) combine_all(all, 0, data, count, dtype, op);
  }

  void all_gather(const void* in, void* out, std::size_t bytes, Deadline deadline) override {
    auto all = net_.all_gather(bytes_of(in, bytes), deadline);
    for (std::size_t r = 0; r < all.size() && bytes > 0; ++r)
      std::memcpy(static_cast<std::byte*>(out) + r * bytes, all[r].data(), bytes);
  }

  void reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Combine op,
                      Deadline deadline) override {
    auto all = net_.all_gather(bytes_of(in, std::size_t(size()) * count * size_of(dtype)), deadline);
    combine_all(all, std::size_t(rank()) * count * size_of(dtype), out, count, dtype, op);
  }

  void send(const void*, std::size_t, int, int, Deadline) override { no_point_to_point(); }
  void recv(void*, std::size_t, int, int, Deadline) override { no_point_to_point(); }

  void barrier(Deadline deadline) override { net_.barrier(deadline); }

  std::unique_ptr<Transport> split(int color, int key, Deadline deadline) override {
    const std::int32_t mine[2] = {color, key};
    auto all = net_.all_gather(bytes_of(mine, sizeof mine), deadline);
    std::vector<int> members;  // world ranks of my group, ordered by (key, rank)
    std::vector<std::int32_t> keys(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) {
      std::int32_t theirs[2];
      std::memcpy(theirs, all[r].data(), sizeof theirs);
      keys[r] = theirs[1];
      if (color >= 0 && theirs[0] == color) members.push_back(int(r));
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return keys[std::size_t(a)] < keys[std::size_t(b)]; });
    // Each group's first member listens on a fresh port and tells the
    // others through this group's exchange.
    const bool leader = !members.empty() && members.front() == rank();
    Socket listening;
    std::int32_t port = 0;
    if (leader) std::tie(listening, port) = Rendezvous::listen_any(net_.endpoint().address);
    auto ports = net_.all_gather(bytes_of(&port, sizeof port), deadline);
    if (members.empty()) return nullptr;
    Endpoint at = net_.endpoint();
    at.size = int(members.size());
    at.rank = int(std::find(members.begin(), members.end(), rank()) - members.begin());
    std::memcpy(&at.port, ports[std::size_t(members.front())].data(), sizeof port);
    if (at.size == 1) return make_tcp_transport(Rendezvous(at, deadline));
    return make_tcp_transport(leader ? Rendezvous(at, std::move(listening), deadline) : Rendezvous(at, deadline));
  }

 private:
  // out = the combination of every rank's block at `offset`, in rank order.
  static void combine_all(const std::vector<std::vector<std::byte>>& all, std::size_t offset, void* out,
                          std::size_t count, DType dtype, Combine op) {
    const std::size_t bytes = count * size_of(dtype);
    if (bytes == 0) return;
    std::memcpy(out, all[0].data() + offset, bytes);
    for (std::size_t r = 1; r < all.size(); ++r) combine(out, all[r].data() + offset, count, dtype, op);
  }

  [[noreturn]] static void no_point_to_point() {
    throw Error(ErrorCode::unsupported,
                "dist: send/recv need the MPI transport (run under mpirun with libxylem_mpi.so present); the tcp "
                "transport has collectives only");
  }

  Rendezvous net_;
};

}  // namespace

std::unique_ptr<plugin::dist::Transport> make_tcp_transport(Rendezvous rendezvous) {
  return std::make_unique<TcpTransport>(std::move(rendezvous));
}

}  // namespace xylem::dist::detail
