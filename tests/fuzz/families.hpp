#pragma once
// The entry every op fuzzer shares: the input's first byte picks a family,
// the next four seed the tensors' values, the rest drive the family's
// choices (a Picker over the input).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>

#include "run.hpp"

namespace xylem_fuzz {

using Family = void (*)(Ctx&);

// One input through one of `families`, on the native backend.
template <std::size_t N>
void fuzz_families(const std::uint8_t* data, std::size_t size, const Family (&families)[N]) {
  static const xylem::Backend backend = xylem::Backend::native();
  FuzzedDataProvider in(data, size);
  const auto family = in.ConsumeIntegral<std::uint8_t>() % N;
  const auto seed = in.ConsumeIntegral<std::uint32_t>();
  Picker picker([&in](std::uint32_t n) { return in.ConsumeIntegralInRange<std::uint32_t>(0, n - 1); }, seed);
  Ctx ctx{backend, picker};
  families[family](ctx);
}

}  // namespace xylem_fuzz
