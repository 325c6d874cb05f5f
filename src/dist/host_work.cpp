#include "dist/host_work.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/storage.hpp"
#include "dist/work_queue.hpp"

namespace xylem::dist::detail {
namespace core = xylem::detail;

namespace {

struct StorageUse {
  core::Storage* storage = nullptr;
  bool reads = false;
  bool writes = false;
  core::DeviceCopy* copy = nullptr;
};

}  // namespace

EventPtr enqueue_host_work(std::span<const HostUse> uses, HostWork work, const char* op) {
  plugin::Device& host = core::host_device();
  std::vector<StorageUse> storages;
  std::vector<std::size_t> storage_of(uses.size());
  for (std::size_t i = 0; i < uses.size(); ++i) {
    core::Storage* s = uses[i].tensor.storage().get();
    auto it = std::find_if(storages.begin(), storages.end(), [&](const StorageUse& u) { return u.storage == s; });
    if (it == storages.end()) it = storages.insert(storages.end(), StorageUse{s});
    // A read of no elements needs no data; a write of part of a storage
    // keeps the rest, so it needs the current copy too.
    const bool empty = uses[i].tensor.numel() == 0;
    const bool whole = size_of(uses[i].tensor.dtype()) * std::size_t(uses[i].tensor.numel()) == s->bytes();
    it->reads |= !empty && (uses[i].reads || !whole);
    it->writes |= uses[i].writes;
    storage_of[i] = std::size_t(it - storages.begin());
  }

  // Every storage locked, in address order (as ops lock them).
  std::vector<StorageUse*> order;
  for (auto& s : storages) order.push_back(&s);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return std::less<>()(a->storage, b->storage); });
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto* s : order) locks.emplace_back(s->storage->mutex);

  for (std::size_t i = 0; i < uses.size(); ++i) {
    const StorageUse& s = storages[storage_of[i]];
    if (s.reads && uses[i].reads && !s.storage->written() && uses[i].tensor.numel() > 0)
      throw Error(ErrorCode::uninitialized_read,
                  std::string(op) + ": the tensor (shape " + uses[i].tensor.layout().dims_string() + ", " +
                      std::string(name(uses[i].tensor.dtype())) +
                      ") was never written; initialise it first (xylem::fill, Tensor::from, or an op)");
  }
  for (auto& s : storages) s.copy = &s.storage->allocated_copy(host);
  for (auto& s : storages)
    if (s.reads) s.storage->make_current(*s.copy);

  // Data dependencies (the last write of what is read) carry their
  // failure into this work, whose input would be garbage; those kept only
  // for order (earlier reads, the last write of what is overwritten whole)
  // are merely waited for.
  std::vector<EventPtr> data_deps, order_deps;
  for (const auto& s : storages) {
    if (s.copy->last_write) (s.reads ? data_deps : order_deps).push_back(s.copy->last_write);
    if (s.writes) order_deps.insert(order_deps.end(), s.copy->reads.begin(), s.copy->reads.end());
  }
  std::vector<std::byte*> data(uses.size());
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const Tensor& t = uses[i].tensor;
    auto* base = static_cast<std::byte*>(storages[storage_of[i]].copy->data);
    data[i] = t.numel() == 0 || base == nullptr ? nullptr
                                                : base + std::size_t(t.layout().offset()) * size_of(t.dtype());
  }

  EventPtr done = enqueue([data_deps = std::move(data_deps), order_deps = std::move(order_deps),
                           data = std::move(data), work = std::move(work)] {
    for (const auto& dep : order_deps) {
      try {
        dep->wait();
      } catch (...) {  // its failure is its readers' business, not this work's
      }
    }
    for (const auto& dep : data_deps) dep->wait();
    work(data);
  });
  for (auto& s : storages) {
    if (s.writes) {
      s.storage->mark_written(*s.copy, done);
    } else {
      s.copy->add_read(done);
    }
  }
  return done;
}

}  // namespace xylem::dist::detail
