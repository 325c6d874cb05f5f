#pragma once
// The ways our gemm kernel (kernels/gemm.cl) can run, which the tuning
// cache (xylem/plugin/tune.hpp, ops/gemm_tune.cpp) chooses among: a tile
// shape, compiled as one variant of the gemm program each, times a
// work-group sizing. Candidate 0 is the default, run when nothing is
// cached. Plain data, no OpenCL: the conformance suite forces each one
// (XYLEM_OPENCL_GEMM_CANDIDATE) and checks it against the reference.
#include <cstddef>
#include <cstdint>
#include <string>

namespace xylem::opencl {

// One work-item computes `rows` rows of c by `vectors` vectors across, each
// of the pass's vector width (16 floats or 8 doubles: one 512-bit
// register), or of half of it when `narrow` (256-bit registers).
struct GemmTile {
  int rows, vectors;
  bool narrow;
};
inline constexpr GemmTile kGemmTiles[] = {
    {8, 2, false},   // the default: 16 accumulators, half an AVX-512 register file
    {4, 4, false},   // wider tiles: fewer loads of a per flop
    {8, 1, false},   // narrower: more items for small n
    {14, 2, false},  // 28 accumulators: nearly every register
    {8, 4, true},    // the same tile as the default in 256-bit vectors
};
inline constexpr int kGemmTileCount = static_cast<int>(std::size(kGemmTiles));

// Work-groups per compute unit the launch aims for (a group of a CPU
// device runs on one thread: more groups balance better, fewer share more
// of b's panel).
inline constexpr int kGemmGroupsPerUnit[] = {8, 2, 32};
inline constexpr int kGemmGroupChoices = static_cast<int>(std::size(kGemmGroupsPerUnit));

inline constexpr int kGemmCandidateCount = kGemmTileCount * kGemmGroupChoices;
// Bumped whenever the lists above change, so cached choices among the old
// candidates go stale.
inline constexpr std::uint32_t kGemmCandidatesVersion = 1;

struct GemmCandidate {
  int tile;             // index into kGemmTiles: the program variant
  int groups_per_unit;  // kGemmGroupsPerUnit's value
};

[[nodiscard]] constexpr GemmCandidate gemm_candidate(int index) noexcept {
  return {index / kGemmGroupChoices, kGemmGroupsPerUnit[index % kGemmGroupChoices]};
}

// "r8v2", "r8v4n": a tile's name (rows, vectors, n for narrow).
[[nodiscard]] inline std::string gemm_tile_name(int tile) {
  const GemmTile& t = kGemmTiles[tile];
  return "r" + std::to_string(t.rows) + "v" + std::to_string(t.vectors) + (t.narrow ? "n" : "");
}

// "r8v2 g8", "r8v4n g32": a candidate's name, what the cache stores.
[[nodiscard]] inline std::string gemm_candidate_name(int index) {
  const GemmCandidate c = gemm_candidate(index);
  return gemm_tile_name(c.tile) + " g" + std::to_string(c.groups_per_unit);
}

}  // namespace xylem::opencl
