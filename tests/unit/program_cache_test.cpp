// The OpenCL program cache (frameworks/opencl/program_cache.*, package.*):
// the entry format on its own, then whole processes running OpenCL ops on a
// cache whose entries were damaged every way we know (truncated, bytes
// flipped, two entries swapped, another program's binary under a valid
// header, a directory or garbage in an entry's place, a directory that
// cannot be written). Every run must give the right answer and rebuild what
// it could not use. Each run is a child process: the plugin keeps programs
// per process. Skipped, by name, when OpenCL is absent.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "common/support.hpp"
#include "frameworks/opencl/program_cache.hpp"
#include "unit/child_process.hpp"

namespace {

namespace fs = std::filesystem;
using xylem::opencl::CacheEntry;
using xylem_test::Bytes;
using xylem_test::contains;
using xylem_test::TempDir;

Bytes random_bytes(std::mt19937_64& rng, std::size_t n) {
  Bytes bytes(n);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  return bytes;
}

// ---- The entry format ----

TEST(CacheEntry, RoundTripsAndHoldsItsKey) {
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::string key = "xylem-opencl\nfamily=blas\ndevice=test\nseed=" + std::to_string(seed) + "\n";
  const CacheEntry entry{"axpy_f32;scal_f32", random_bytes(rng, 1000 + rng() % 1000)};
  const Bytes file = xylem::opencl::format_entry(key, entry);
  const auto back = xylem::opencl::parse_entry(file, key);
  ASSERT_TRUE(back) << xylem_test::seed_message(seed);
  EXPECT_EQ(back->kernel_names, entry.kernel_names);
  EXPECT_EQ(back->binary, entry.binary);
  EXPECT_EQ(xylem::opencl::parse_cache_entry(file, key), entry.binary);
  EXPECT_FALSE(xylem::opencl::parse_entry(file, key + "x"));
  EXPECT_FALSE(xylem::opencl::parse_entry(file, ""));
  const auto parts = xylem::opencl::split_entry(file);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->key, key);
}

TEST(CacheEntry, EveryCutAndEveryFlippedByteIsRejected) {
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::string key = "family=copy\n";
  const Bytes file = xylem::opencl::format_entry(key, CacheEntry{"copy_f32", random_bytes(rng, 64)});
  for (std::size_t size = 0; size < file.size(); ++size)
    EXPECT_FALSE(xylem::opencl::parse_entry(std::span(file).first(size), key)) << "cut to " << size;
  for (std::size_t at = 0; at < file.size(); ++at) {
    Bytes flipped = file;
    flipped[at] ^= static_cast<unsigned char>(1u << (rng() % 8));
    EXPECT_FALSE(xylem::opencl::parse_entry(flipped, key)) << "byte " << at << "; " << xylem_test::seed_message(seed);
  }
  Bytes longer = file;
  longer.push_back(0);
  EXPECT_FALSE(xylem::opencl::parse_entry(longer, key));
  EXPECT_FALSE(xylem::opencl::parse_entry(random_bytes(rng, 4096), key));
}

TEST(CacheEntry, KernelNameListsCompareAsSets) {
  EXPECT_EQ(xylem::opencl::kernel_name_list("scal_f64;axpy_f32;;copy"), "axpy_f32;copy;scal_f64");
  EXPECT_EQ(xylem::opencl::kernel_name_list(""), "");
}

// ---- Whole processes on OpenCL ----

// What one child run did: which programs ("softmax f32": a program and
// its pass) it compiled and which it loaded
// from the cache (XYLEM_OPENCL_VERBOSE), and its output.
struct OpRun {
  xylem_test::ChildResult child;
  std::set<std::string> compiled, loaded;
};

OpRun run_op(const fs::path& cache_dir) {
  OpRun run;
  const char* plugins = std::getenv("XYLEM_PLUGIN_PATH");
  run.child = xylem_test::run_this_test("ProgramCacheChild.RunOp", {{"XYLEM_TEST_CHILD", "cache_op"},
                                                                   {"XYLEM_CACHE_DIR", cache_dir.string()},
                                                                   {"XYLEM_OPENCL_VERBOSE", "1"},
                                                                   {"XYLEM_PLUGIN_PATH", plugins ? plugins : ""}});
  static const std::regex line(R"(xylem opencl: (\w+ \w+) kernels for .* (loaded from cache|compiled) in )");
  std::istringstream lines(run.child.output);
  for (std::string text; std::getline(lines, text);) {
    std::smatch m;
    if (std::regex_search(text, m, line)) (m[2] == "compiled" ? run.compiled : run.loaded).insert(m[1]);
  }
  return run;
}

// The cache's entries by program and pass, "softmax f32" (from the key each
// holds).
std::map<std::string, fs::path> entries(const fs::path& dir) {
  std::map<std::string, fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const Bytes file = xylem_test::read_bytes(it->path());
    const auto parts = xylem::opencl::split_entry(file);
    if (!parts) continue;
    const auto field = [&](std::string_view name) {
      const auto at = parts->key.find(name);
      if (at == std::string_view::npos) return std::string_view();
      const auto begin = at + name.size();
      return parts->key.substr(begin, parts->key.find('\n', begin) - begin);
    };
    const auto program = field("\nprogram="), pass = field("\npass=");
    if (program.empty() || pass.empty()) continue;
    found[std::string(program) + " " + std::string(pass)] = it->path();
  }
  return found;
}

std::string describe(const OpRun& run) {
  std::string text = "compiled:";
  for (const auto& f : run.compiled) text += " " + f;
  text += "; loaded:";
  for (const auto& f : run.loaded) text += " " + f;
  return text + "; " + run.child.describe();
}

class ProgramCacheRecovery : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const auto& s : xylem::Backend::frameworks())
      if (s.name == "opencl" && !s.available) skip_reason_ = new std::string("opencl: " + s.reason);
    if (skip_reason_ != nullptr) {
      std::cout << "[  SKIPPED ] " << *skip_reason_ << "\n";  // CTest's skip pattern
      return;
    }
    warm_ = new TempDir();
    const OpRun first = run_op(warm_->path());
    ASSERT_TRUE(first.child.passed()) << describe(first);
    warm_families_ = new std::set<std::string>(first.compiled);
  }
  static void TearDownTestSuite() {
    delete warm_;
    delete warm_families_;
    delete skip_reason_;
    warm_ = nullptr;
    warm_families_ = nullptr;
    skip_reason_ = nullptr;
  }
  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
    ASSERT_TRUE(warm_ != nullptr && warm_families_ != nullptr);
    ASSERT_GE(warm_families_->size(), 2u) << "the op should build two families";
    fs::copy(warm_->path(), dir_.path(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    entries_ = entries(dir_.path());
    ASSERT_EQ(entries_.size(), warm_families_->size()) << "the warm cache should hold an entry per family";
  }

  // Runs the op on the damaged cache (it must give the right answer and
  // compile every family in `rebuilt`), then again: now everything loads
  // from the rewritten cache.
  void expect_recovers(const std::set<std::string>& rebuilt) {
    const OpRun damaged = run_op(dir_.path());
    ASSERT_TRUE(damaged.child.passed()) << describe(damaged);
    ASSERT_TRUE(contains(damaged.child.output, "cache op ok")) << describe(damaged);
    for (const auto& family : rebuilt) EXPECT_TRUE(damaged.compiled.count(family)) << family << ": " << describe(damaged);
    const OpRun again = run_op(dir_.path());
    ASSERT_TRUE(again.child.passed()) << describe(again);
    EXPECT_TRUE(again.compiled.empty()) << "the rebuilt entries were not rewritten: " << describe(again);
    EXPECT_EQ(again.loaded, *warm_families_) << describe(again);
  }

  std::set<std::string> all_families() const { return *warm_families_; }

  TempDir dir_;
  std::map<std::string, fs::path> entries_;
  static inline TempDir* warm_ = nullptr;
  static inline std::set<std::string>* warm_families_ = nullptr;
  static inline std::string* skip_reason_ = nullptr;
};

TEST_F(ProgramCacheRecovery, TruncatedEntries) {
  std::size_t i = 0;
  for (const auto& [family, path] : entries_) {
    const auto size = fs::file_size(path);
    fs::resize_file(path, i++ % 2 == 0 ? size / 2 : size - 1);
  }
  expect_recovers(all_families());
}

TEST_F(ProgramCacheRecovery, FlippedBytes) {
  std::mt19937_64 rng(xylem_test::fresh_seed());
  for (const auto& [family, path] : entries_) {
    Bytes file = xylem_test::read_bytes(path);
    file[file.size() / 2 + rng() % (file.size() / 2)] ^= 0x5a;  // in the binary
    xylem_test::write_bytes(path, file);
  }
  expect_recovers(all_families());
}

TEST_F(ProgramCacheRecovery, FlippedKeyByte) {
  const auto& [family, path] = *entries_.begin();
  Bytes file = xylem_test::read_bytes(path);
  file[48] ^= 0x01;  // inside the key, just after the fixed header
  xylem_test::write_bytes(path, file);
  expect_recovers({family});
}

TEST_F(ProgramCacheRecovery, SwappedEntries) {
  auto a = entries_.begin(), b = std::next(a);
  const Bytes first = xylem_test::read_bytes(a->second);
  xylem_test::write_bytes(a->second, xylem_test::read_bytes(b->second));
  xylem_test::write_bytes(b->second, first);
  expect_recovers({a->first, b->first});
}

// A well-formed entry, with this program's key and kernel names, holding
// another program's binary: only the program's own kernel names can tell.
TEST_F(ProgramCacheRecovery, AnotherProgramsBinaryUnderAValidHeader) {
  auto a = entries_.begin(), b = std::next(a);
  const Bytes file_a = xylem_test::read_bytes(a->second), file_b = xylem_test::read_bytes(b->second);
  const auto parts_a = xylem::opencl::split_entry(file_a), parts_b = xylem::opencl::split_entry(file_b);
  ASSERT_TRUE(parts_a && parts_b);
  const CacheEntry forged{std::string(parts_a->kernel_names), Bytes(parts_b->binary.begin(), parts_b->binary.end())};
  xylem_test::write_bytes(a->second, xylem::opencl::format_entry(parts_a->key, forged));
  expect_recovers({a->first});
}

TEST_F(ProgramCacheRecovery, GarbageInAnEntry) {
  std::mt19937_64 rng(xylem_test::fresh_seed());
  const auto& [family, path] = *entries_.begin();
  xylem_test::write_bytes(path, random_bytes(rng, 4096));
  expect_recovers({family});
}

// An empty directory where the file goes is removed and the entry
// rewritten; a non-empty one stays, and every run compiles that family.
TEST_F(ProgramCacheRecovery, DirectoryInPlaceOfAnEntry) {
  auto a = entries_.begin(), b = std::next(a);
  fs::remove(a->second);
  fs::create_directory(a->second);
  expect_recovers({a->first});

  fs::remove(b->second);
  fs::create_directories(b->second / "inside");
  for (int run = 0; run < 2; ++run) {
    const OpRun damaged = run_op(dir_.path());
    ASSERT_TRUE(damaged.child.passed()) << describe(damaged);
    EXPECT_TRUE(contains(damaged.child.output, "cache op ok")) << describe(damaged);
    EXPECT_TRUE(damaged.compiled.count(b->first)) << describe(damaged);
  }
}

// A cache that cannot be written: the op works, compiling what it needs.
TEST_F(ProgramCacheRecovery, UnwritableDirectory) {
  for (const auto& [family, path] : entries_) fs::remove(path);
  fs::permissions(dir_.path(), fs::perms::owner_read | fs::perms::owner_exec);
  const OpRun readonly = run_op(dir_.path());
  fs::permissions(dir_.path(), fs::perms::owner_all);
  ASSERT_TRUE(readonly.child.passed()) << describe(readonly);
  EXPECT_TRUE(contains(readonly.child.output, "cache op ok")) << describe(readonly);
  // Root writes through the permissions; these cannot be written by anyone:
  // a cache directory under a regular file, and one under /proc.
  xylem_test::write_bytes(dir_.path() / "file", Bytes{1, 2, 3});
  for (const fs::path& dir : {dir_.path() / "file" / "cache", fs::path("/proc/xylem-no-such-cache")}) {
    const OpRun unwritable = run_op(dir);
    ASSERT_TRUE(unwritable.child.passed()) << dir << ": " << describe(unwritable);
    EXPECT_TRUE(contains(unwritable.child.output, "cache op ok")) << describe(unwritable);
    EXPECT_EQ(unwritable.compiled, all_families()) << describe(unwritable);
  }
}

// ---- The child those tests start (skipped in a normal run) ----

// arange (the creation kernels) then scal (the blas kernels) on OpenCL,
// against float64.
TEST(ProgramCacheChild, RunOp) {
  if (!xylem_test::is_child("cache_op")) GTEST_SKIP() << "runs only as ProgramCacheRecovery's child process";
  const auto backend = xylem::Backend::open("opencl");
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pick(-2, 2);
  const double start = pick(rng), step = pick(rng), alpha = pick(rng);
  const std::int64_t n = 1000;
  auto x = xylem::arange(backend, n, xylem::f32, start, step);
  xylem::blas::scal(backend, alpha, x);
  const auto result = x.to_vector<float>();
  ASSERT_EQ(result.size(), static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const double expected = alpha * (start + static_cast<double>(k) * step);
    ASSERT_NEAR(result[static_cast<std::size_t>(k)], expected, 1e-5 * (1 + std::abs(expected)))
        << "element " << k << "; " << xylem_test::seed_message(seed);
  }
  std::cout << "cache op ok on " << backend << "\n";
}

}  // namespace
