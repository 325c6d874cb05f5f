#pragma once
// The tuning cache: for an op with several ways to run (kernel variants,
// work-group sizes, vendor library algorithms), the way that ran fastest
// for a class of shapes on one device, measured once and kept on disk so
// later processes skip the measurement.
//
// Policy (the core's, src/core/tune_cache.*): one versioned text file in
// the cache directory, one checksummed line per entry, written whole to a
// temporary file and renamed under a lock file, so concurrent writers
// (threads or processes) keep each other's entries and readers never see a
// part. A line that fails its checksum or does not parse, and a file of
// another format version, is dropped and never trusted; the op then runs
// its default (or measures again when tuning is on) and the store rewrites
// the file. Mechanism (the framework's): which candidates exist, how to
// time them, and what each `choice` name means. Every candidate computes
// the same result within the op's tolerance, so a cached choice changes
// speed only.
//
// No function here throws: the cache is an optimisation, and none of its
// errors reaches an op.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace xylem::plugin::tune {

// What a choice is for. An entry matches a key only on every field.
struct Key {
  std::string device;  // the hardware's name
  std::string driver;  // its driver version
  std::string op;      // the framework and op: "opencl gemm", "cuda conv2d forward"
  std::string shape;   // the shape class with its dtype: "f32 m512 n512 k512"
  // The version of the op's candidate set: a framework bumps it when its
  // candidates change, so entries chosen among the old ones go stale.
  std::uint32_t candidates = 0;
};

struct Winner {
  std::string choice;  // the candidate's name, as the framework spells it
  double seconds = 0;  // the time it took when measured
};

struct Entry {
  Key key;
  Winner winner;
};

// Whether ops measure their candidates on the first use of a shape class
// with no entry: XYLEM_TUNE=1 (read once), or set_enabled (`xylem tune`).
[[nodiscard]] bool enabled() noexcept;
void set_enabled(bool on) noexcept;

// The cache file: set_path's, else tune-v<format>.txt in
// cache_directory(); empty where there is none (entries then live in this
// process alone).
[[nodiscard]] std::filesystem::path path() noexcept;
// Uses `file` from now on (tests, tools); forgets what was read before.
void set_path(const std::filesystem::path& file) noexcept;

// The choice stored for key; nullopt when none, or when the stored one is
// for another candidate set. Reads the file on first use.
[[nodiscard]] std::optional<Winner> lookup(const Key& key) noexcept;
// Stores key's winner, replacing an entry for the same device, driver, op
// and shape (of any candidate set). False when the file could not be
// written; the entry still serves this process.
bool store(const Key& key, const Winner& winner) noexcept;
// Every valid entry in the file now, in file order.
[[nodiscard]] std::vector<Entry> entries() noexcept;

// $XYLEM_CACHE_DIR, else $XDG_CACHE_HOME/xylem, else ~/.cache/xylem; empty
// when none of them is set. The OpenCL program cache lives there too.
[[nodiscard]] std::filesystem::path cache_directory();

}  // namespace xylem::plugin::tune
