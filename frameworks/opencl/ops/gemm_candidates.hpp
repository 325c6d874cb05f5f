#pragma once
// The ways our gemm kernel (kernels/gemm.cl) can run, which the tuning
// cache (xylem/plugin/tune.hpp, ops/gemm_tune.cpp) chooses among: a tile
// shape, compiled as one variant of the gemm program each, times a
// work-group sizing, times a slicing of k. Candidate 0 is the default, run when nothing is
// cached. Plain data, no OpenCL: the conformance suite forces each one
// (XYLEM_OPENCL_GEMM_CANDIDATE) and checks it against the reference.
#include <cstddef>
#include <cstdint>
#include <string>

namespace xylem::opencl {

// One work-item computes `rows` rows of c by `vectors` vectors across, each
// of the pass's vector width (16 floats or 8 doubles: one 512-bit
// register), or of half of it when `narrow` (256-bit registers). With a
// `band`, b is packed into panels first and items walk bands of that many
// row tiles across all of n (kernels/gemm.cl says why: a large m*k).
struct GemmTile {
  int rows, vectors;
  bool narrow;
  int band = 0;
};
inline constexpr GemmTile kGemmTiles[] = {
    {8, 2, false},      // the default: 16 accumulators, half an AVX-512 register file
    {4, 4, false},      // wider tiles: fewer loads of a per flop
    {8, 1, false},      // narrower: more items for small n
    {14, 2, false},     // 28 accumulators: nearly every register
    {8, 4, true},       // the same tile as the default in 256-bit vectors
    {8, 2, false, 8},   // banded, 64 rows a band: a's strip of k=256 is 64 KiB, in L2
    {8, 2, false, 32},  // banded, 256 rows
    {4, 4, false, 16},  // banded, 64 rows
    {4, 4, false, 64},  // banded, 256 rows
};
inline constexpr int kGemmTileCount = static_cast<int>(std::size(kGemmTiles));

// Work-groups per compute unit the launch aims for (a group of a CPU
// device runs on one thread: more groups balance better, fewer share more
// of b's panel).
inline constexpr int kGemmGroupsPerUnit[] = {8, 2};
inline constexpr int kGemmGroupChoices = static_cast<int>(std::size(kGemmGroupsPerUnit));

// Steps of k per launch (0: all of k at once). A long k runs as several
// launches over slices of it, each adding to c, so the slice of a that
// every column of tiles reads again stays in the cache.
inline constexpr int kGemmKBlocks[] = {0, 256, 128};
inline constexpr int kGemmKBlockChoices = static_cast<int>(std::size(kGemmKBlocks));

inline constexpr int kGemmCandidateCount = kGemmTileCount * kGemmGroupChoices * kGemmKBlockChoices;
// Bumped whenever the lists above change, so cached choices among the old
// candidates go stale.
inline constexpr std::uint32_t kGemmCandidatesVersion = 3;

struct GemmCandidate {
  int tile;             // index into kGemmTiles: the program variant
  int groups_per_unit;  // kGemmGroupsPerUnit's value
  int k_block;          // kGemmKBlocks' value
};

[[nodiscard]] constexpr GemmCandidate gemm_candidate(int index) noexcept {
  return {index / (kGemmGroupChoices * kGemmKBlockChoices),
          kGemmGroupsPerUnit[index / kGemmKBlockChoices % kGemmGroupChoices], kGemmKBlocks[index % kGemmKBlockChoices]};
}

// "r8v2", "r8v4n", "r8v2b8": a tile's name (rows, vectors, n for narrow, b
// and the band). Built by appending: GCC 12 warns falsely (-Wrestrict) on
// "r" + std::to_string(..).
[[nodiscard]] inline std::string gemm_tile_name(int tile) {
  const GemmTile& t = kGemmTiles[tile];
  std::string name = "r";
  name += std::to_string(t.rows);
  name += 'v';
  name += std::to_string(t.vectors);
  if (t.narrow) name += 'n';
  if (t.band) {
    name += 'b';
    name += std::to_string(t.band);
  }
  return name;
}

// "r8v2 g8", "r8v4n g2 k128": a candidate's name, what the cache stores.
[[nodiscard]] inline std::string gemm_candidate_name(int index) {
  const GemmCandidate c = gemm_candidate(index);
  std::string name = gemm_tile_name(c.tile);
  name += " g";
  name += std::to_string(c.groups_per_unit);
  if (c.k_block) {
    name += " k";
    name += std::to_string(c.k_block);
  }
  return name;
}

}  // namespace xylem::opencl
