#include "dist/tensor_uses.hpp"

#include <algorithm>
#include <string>

#include "core/storage.hpp"
#include "core/fusion.hpp"

namespace xylem::dist::detail {

TensorUses::TensorUses(plugin::Device& device, std::span<const TensorUse> uses, const char* op) {
  xylem::detail::flush_fusion();
  std::vector<std::size_t> storage_of(uses.size());
  for (std::size_t i = 0; i < uses.size(); ++i) {
    xylem::detail::Storage* s = uses[i].tensor.storage().get();
    auto it = std::find_if(storages_.begin(), storages_.end(), [&](const StorageUse& u) { return u.storage == s; });
    if (it == storages_.end()) it = storages_.insert(storages_.end(), StorageUse{s, &uses[i].tensor.storage()});
    // A read of no elements needs no data; a write of part of a storage
    // keeps the rest, so it needs the current copy too.
    const bool empty = uses[i].tensor.numel() == 0;
    const bool whole = size_of(uses[i].tensor.dtype()) * std::size_t(uses[i].tensor.numel()) == s->bytes();
    it->reads |= !empty && (uses[i].reads || !whole);
    it->writes |= uses[i].writes;
    storage_of[i] = std::size_t(it - storages_.begin());
  }

  std::vector<StorageUse*> order;
  for (auto& s : storages_) order.push_back(&s);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return std::less<>()(a->storage, b->storage); });
  for (auto* s : order) locks_.emplace_back(s->storage->mutex);

  for (std::size_t i = 0; i < uses.size(); ++i) {
    const StorageUse& s = storages_[storage_of[i]];
    if (s.reads && uses[i].reads && !s.storage->written() && uses[i].tensor.numel() > 0)
      throw Error(ErrorCode::uninitialized_read,
                  std::string(op) + ": the tensor (shape " + uses[i].tensor.layout().dims_string() + ", " +
                      std::string(name(uses[i].tensor.dtype())) +
                      ") was never written; initialise it first (xylem::fill, Tensor::from, or an op)");
  }
  for (auto& s : storages_) s.copy = &s.storage->allocated_copy(device);
  for (auto& s : storages_)
    if (s.reads) s.storage->make_current(*s.copy);

  for (const auto& s : storages_) {
    if (s.copy->last_write) (s.reads ? data_deps_ : order_deps_).push_back(s.copy->last_write);
    if (s.writes) order_deps_.insert(order_deps_.end(), s.copy->reads.begin(), s.copy->reads.end());
  }
  data_.resize(uses.size());
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const Tensor& t = uses[i].tensor;
    auto* base = static_cast<std::byte*>(storages_[storage_of[i]].copy->data);
    data_[i] = t.numel() == 0 || base == nullptr ? nullptr
                                                 : base + std::size_t(t.layout().offset()) * size_of(t.dtype());
  }
}

std::vector<xylem::detail::RecordedUse> TensorUses::recorded_uses() const {
  std::vector<xylem::detail::RecordedUse> recorded;
  for (const auto& s : storages_) recorded.push_back({s.owner, s.reads, s.writes});
  return recorded;
}

void TensorUses::record(const EventPtr& done) {
  for (auto& s : storages_) {
    if (s.writes) {
      s.storage->mark_written(*s.copy, done);
    } else {
      s.copy->add_read(done);
    }
  }
}

}  // namespace xylem::dist::detail
