#include "dist/rendezvous.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "xylem/error.hpp"

namespace xylem::dist::detail {
namespace {

using plugin::dist::Clock;

int parse_int(const char* variable, const char* text) {
  int value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end)
    throw Error(ErrorCode::invalid_argument, std::string(variable) + "='" + text + "' is not an integer");
  return value;
}

[[noreturn]] void system_error(const std::string& what) {
  throw Error(ErrorCode::communication, what + ": " + std::strerror(errno));
}

sockaddr_in address_of(const std::string& address, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const std::string host = address == "localhost" ? "127.0.0.1" : address;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    throw Error(ErrorCode::invalid_argument,
                "rendezvous address '" + address + "' is not an IPv4 address (the rendezvous is for one node)");
  return addr;
}

// Milliseconds left until `deadline`, rounded up (poll must not return
// before it), at least 0.
int millis_left(Deadline deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until `fd` can do `events`; Error(timeout) naming `what` when the
// deadline passes first.
void wait_for(int fd, short events, Deadline deadline, const std::string& what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, millis_left(deadline));
    if (n > 0) return;
    if (n < 0 && errno != EINTR) system_error(what);
    if (n == 0 && Clock::now() >= deadline) throw Error(ErrorCode::timeout, what + ": no answer before the timeout (XYLEM_DIST_TIMEOUT)");
  }
}

void send_all(int fd, const void* data, std::size_t bytes, Deadline deadline, const std::string& what) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    wait_for(fd, POLLOUT, deadline, what);
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      system_error(what);
    }
    p += n;
    bytes -= std::size_t(n);
  }
}

void recv_all(int fd, void* data, std::size_t bytes, Deadline deadline, const std::string& what) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    wait_for(fd, POLLIN, deadline, what);
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n == 0) throw Error(ErrorCode::communication, what + ": the peer closed the connection (did it exit or fail?)");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      system_error(what);
    }
    p += n;
    bytes -= std::size_t(n);
  }
}

void send_blob(int fd, std::span<const std::byte> blob, Deadline deadline, const std::string& what) {
  const std::uint64_t n = blob.size();
  send_all(fd, &n, sizeof n, deadline, what);
  send_all(fd, blob.data(), blob.size(), deadline, what);
}

std::vector<std::byte> recv_blob(int fd, Deadline deadline, const std::string& what) {
  std::uint64_t n = 0;
  recv_all(fd, &n, sizeof n, deadline, what);
  std::vector<std::byte> blob(n);
  recv_all(fd, blob.data(), blob.size(), deadline, what);
  return blob;
}

Socket tcp_socket() {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd() < 0) system_error("rendezvous: socket()");
  const int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

std::string rank_name(int rank) { return "rank " + std::to_string(rank); }

}  // namespace

std::optional<Endpoint> endpoint_from_env() {
  const char* size = std::getenv("XYLEM_WORLD_SIZE");
  if (size == nullptr) return std::nullopt;
  Endpoint at;
  at.size = parse_int("XYLEM_WORLD_SIZE", size);
  const char* rank = std::getenv("XYLEM_RANK");
  at.rank = rank ? parse_int("XYLEM_RANK", rank) : 0;
  if (const char* addr = std::getenv("XYLEM_MASTER_ADDR")) at.address = addr;
  if (const char* port = std::getenv("XYLEM_MASTER_PORT")) at.port = parse_int("XYLEM_MASTER_PORT", port);
  if (at.size < 1 || at.rank < 0 || at.rank >= at.size)
    throw Error(ErrorCode::invalid_argument, "XYLEM_RANK=" + std::to_string(at.rank) + " is not in [0, XYLEM_WORLD_SIZE=" +
                                                 std::to_string(at.size) + ")");
  if (at.port <= 0 || at.port > 65535)
    throw Error(ErrorCode::invalid_argument, "XYLEM_MASTER_PORT=" + std::to_string(at.port) + " is not a TCP port");
  return at;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

int Socket::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::pair<Socket, int> Rendezvous::listen_any(const std::string& address) {
  Socket s = tcp_socket();
  const int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = address_of(address, 0);
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    system_error("rendezvous: cannot listen on " + address);
  if (::listen(s.fd(), SOMAXCONN) != 0) system_error("rendezvous: listen()");
  socklen_t len = sizeof addr;
  if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) system_error("rendezvous: getsockname()");
  return {std::move(s), ntohs(addr.sin_port)};
}

Rendezvous::Rendezvous(const Endpoint& at, Deadline deadline) : at_(at) {
  if (at_.size == 1) return;
  if (at_.rank != 0) {
    connect_to_root(deadline);
    return;
  }
  Socket s = tcp_socket();
  const int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = address_of(at_.address, at_.port);
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    system_error("rendezvous: rank 0 cannot listen on " + at_.address + ":" + std::to_string(at_.port) +
                 " (XYLEM_MASTER_ADDR/XYLEM_MASTER_PORT; is another job using the port?)");
  if (::listen(s.fd(), SOMAXCONN) != 0) system_error("rendezvous: listen()");
  accept_all(std::move(s), deadline);
}

Rendezvous::Rendezvous(const Endpoint& at, Socket listening, Deadline deadline) : at_(at) {
  accept_all(std::move(listening), deadline);
}

void Rendezvous::accept_all(Socket listening, Deadline deadline) {
  peers_.resize(std::size_t(at_.size - 1));
  for (int joined = 1; joined < at_.size; ++joined) {
    wait_for(listening.fd(), POLLIN, deadline,
             "rendezvous: rank 0 waiting for " + std::to_string(at_.size - joined) + " of " +
                 std::to_string(at_.size - 1) + " ranks to join");
    Socket peer(::accept4(listening.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.fd() < 0) system_error("rendezvous: accept()");
    const int one = 1;
    ::setsockopt(peer.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::int32_t hello[2] = {0, 0};  // rank, size
    recv_all(peer.fd(), hello, sizeof hello, deadline, "rendezvous: a joining rank's greeting");
    if (hello[1] != at_.size || hello[0] <= 0 || hello[0] >= at_.size || peers_[std::size_t(hello[0] - 1)].fd() >= 0)
      throw Error(ErrorCode::communication, "rendezvous: a process joined as rank " + std::to_string(hello[0]) +
                                                " of " + std::to_string(hello[1]) + ", expected a new rank of " +
                                                std::to_string(at_.size) + " (two jobs on one port?)");
    peers_[std::size_t(hello[0] - 1)] = std::move(peer);
  }
}

void Rendezvous::connect_to_root(Deadline deadline) {
  const sockaddr_in addr = address_of(at_.address, at_.port);
  // Rank 0 may not listen yet: retry until the deadline.
  for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(100))) {
    Socket s = tcp_socket();
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      const std::int32_t hello[2] = {at_.rank, at_.size};
      send_all(s.fd(), hello, sizeof hello, deadline, "rendezvous: greeting rank 0");
      peers_.push_back(std::move(s));
      return;
    }
    if (errno != ECONNREFUSED && errno != EINTR && errno != ETIMEDOUT) system_error("rendezvous: connect()");
    if (Clock::now() + pause >= deadline)
      throw Error(ErrorCode::timeout, "rendezvous: " + rank_name(at_.rank) + " found no rank 0 listening on " +
                                          at_.address + ":" + std::to_string(at_.port) + " before the timeout");
    std::this_thread::sleep_for(pause);
  }
}

std::vector<std::vector<std::byte>> Rendezvous::all_gather(std::span<const std::byte> blob, Deadline deadline) {
  std::vector<std::vector<std::byte>> all(std::size_t(at_.size));
  all[std::size_t(at_.rank)].assign(blob.begin(), blob.end());
  if (at_.size == 1) return all;
  if (at_.rank != 0) {
    const int fd = peers_.front().fd();
    send_blob(fd, blob, deadline, "rendezvous: " + rank_name(at_.rank) + " sending to rank 0");
    for (int r = 0; r < at_.size; ++r) {
      auto got = recv_blob(fd, deadline, "rendezvous: " + rank_name(at_.rank) + " waiting for rank 0");
      if (r != at_.rank) all[std::size_t(r)] = std::move(got);
    }
    return all;
  }
  // Rank 0 gathers from each in turn (a rank that never comes times out
  // here, naming itself), then sends every blob to every rank.
  for (int r = 1; r < at_.size; ++r)
    all[std::size_t(r)] = recv_blob(peers_[std::size_t(r - 1)].fd(), deadline, "rendezvous: rank 0 waiting for " + rank_name(r));
  for (int r = 1; r < at_.size; ++r)
    for (const auto& b : all) send_blob(peers_[std::size_t(r - 1)].fd(), b, deadline, "rendezvous: rank 0 sending to " + rank_name(r));
  return all;
}

void Rendezvous::barrier(Deadline deadline) { (void)all_gather({}, deadline); }

}  // namespace xylem::dist::detail
