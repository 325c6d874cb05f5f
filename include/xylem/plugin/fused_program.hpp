#pragma once
// The program of math::fused: a chain of math.h's unary and binary codes
// run over registers, packed into the op's eight integers so that a call
// stays a fixed-size OpCall. Every framework decodes it with this header:
// the native tile evaluator, and the source generator the OpenCL and CUDA
// frameworks compile.
//
// Layout: instruction k (k < kFusedMaxInstructions) is the 32-bit word k % 2
// of integer k / 2 (low word first). An instruction of kind `end` (all zero)
// stops the program. Its fields, from bit 0:
//   kind    3 bits  FusedKind
//   dst     3 bits  the register written (load, unary, binary), or the
//                   output index (store)
//   a       3 bits  the input index (load), or the register read (unary,
//                   binary, store)
//   b       3 bits  binary's second register
//   code    6 bits  XY_UN_* (unary) or XY_BIN_* (binary)
//   params  2 bits  the pair of reals (f[2*params], f[2*params + 1]) that are
//                   the code's p0 and p1
//
// Semantics, per element: instructions run in order on registers of the
// compute type (f32 for f16, bf16 and f32; f64 for f64); loads read the
// inputs, stores round to the storage type. No load follows a store, so
// every input element is read before any output element is written (an
// output may then be an input, exactly: in place). Intermediate registers
// are never rounded to the storage type.
#include <array>
#include <cstdint>
#include <string>

#include "xylem/plugin/math.h"

namespace xylem::plugin::fused {

inline constexpr int kMaxInputs = 5;         // x0..x4
inline constexpr int kMaxOutputs = 3;        // y0..y2
inline constexpr int kRegisters = 8;
inline constexpr int kParamPairs = 4;        // the eight reals
inline constexpr int kMaxInstructions = 16;  // two per integer

enum class Kind : std::uint8_t { end = 0, load = 1, unary = 2, binary = 3, store = 4 };

struct Instruction {
  Kind kind = Kind::end;
  int dst = 0;     // register (load, unary, binary) or output index (store)
  int a = 0;       // input index (load) or register
  int b = 0;       // register (binary)
  int code = 0;    // XY_UN_* or XY_BIN_*
  int params = 0;  // reals pair
};

using Words = std::array<std::int64_t, 8>;

[[nodiscard]] constexpr std::uint32_t encode(const Instruction& in) noexcept {
  return std::uint32_t(in.kind) | std::uint32_t(in.dst & 7) << 3 | std::uint32_t(in.a & 7) << 6 |
         std::uint32_t(in.b & 7) << 9 | std::uint32_t(in.code & 63) << 12 | std::uint32_t(in.params & 3) << 18;
}

[[nodiscard]] constexpr Instruction decode(std::uint32_t w) noexcept {
  return Instruction{Kind(w & 7), int(w >> 3 & 7), int(w >> 6 & 7), int(w >> 9 & 7), int(w >> 12 & 63),
                     int(w >> 18 & 3)};
}

[[nodiscard]] constexpr std::uint32_t word_at(const Words& words, int k) noexcept {
  return std::uint32_t(std::uint64_t(words[std::size_t(k / 2)]) >> (32 * (k % 2)));
}

constexpr void put_word(Words& words, int k, std::uint32_t w) noexcept {
  auto& slot = words[std::size_t(k / 2)];
  const int shift = 32 * (k % 2);
  const std::uint64_t mask = std::uint64_t(0xffffffffu) << shift;
  slot = std::int64_t((std::uint64_t(slot) & ~mask) | std::uint64_t(w) << shift);
}

// The decoded instructions, up to the first `end`.
struct Program {
  std::array<Instruction, kMaxInstructions> code{};
  int size = 0;
};

[[nodiscard]] constexpr Program decode_program(const Words& words) noexcept {
  Program p;
  for (int k = 0; k < kMaxInstructions; ++k) {
    const Instruction in = decode(word_at(words, k));
    if (in.kind == Kind::end) break;
    p.code[std::size_t(p.size++)] = in;
  }
  return p;
}

// Why the program cannot run with the inputs and outputs present (bit k of
// each mask), or "" when it can: a field out of range, a register read
// before it is written, an absent input loaded, a load after a store, a
// present output never stored or an absent one stored, nothing after the
// first `end` but `end`.
[[nodiscard]] inline std::string validate(const Words& words, unsigned inputs_present, unsigned outputs_present) {
  const Program p = decode_program(words);
  for (int k = p.size; k < kMaxInstructions; ++k)
    if (word_at(words, k) != 0) return "instruction " + std::to_string(k) + " follows the end of the program";
  if (p.size == 0) return "the program is empty";
  unsigned defined = 0, stored = 0;
  bool any_store = false;
  for (int k = 0; k < p.size; ++k) {
    const Instruction& in = p.code[std::size_t(k)];
    const std::string at = "instruction " + std::to_string(k) + ": ";
    const auto readable = [&](int r) { return (defined >> r & 1u) != 0; };
    switch (in.kind) {
      case Kind::load:
        if (in.a >= kMaxInputs || !(inputs_present >> in.a & 1u)) return at + "loads an absent input";
        if (any_store) return at + "a load after a store";
        defined |= 1u << in.dst;
        break;
      case Kind::unary:
        if (in.code >= XY_UN_COUNT) return at + "unknown unary code " + std::to_string(in.code);
        if (!readable(in.a)) return at + "reads a register never written";
        defined |= 1u << in.dst;
        break;
      case Kind::binary:
        if (in.code >= XY_BIN_COUNT) return at + "unknown binary code " + std::to_string(in.code);
        if (!readable(in.a) || !readable(in.b)) return at + "reads a register never written";
        defined |= 1u << in.dst;
        break;
      case Kind::store:
        if (in.dst >= kMaxOutputs || !(outputs_present >> in.dst & 1u)) return at + "stores to an absent output";
        if (!readable(in.a)) return at + "stores a register never written";
        stored |= 1u << in.dst;
        any_store = true;
        break;
      default:
        return at + "unknown kind " + std::to_string(int(in.kind));
    }
  }
  if (stored != outputs_present) return "an output is never stored";
  return {};
}

}  // namespace xylem::plugin::fused
