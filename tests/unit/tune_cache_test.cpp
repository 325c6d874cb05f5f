// The tuning cache (xylem/plugin/tune.hpp, src/core/tune_*): the file
// format on its own (round trip, every flipped byte dropping its line and
// only its line, another format version dropped whole), then the process
// side over real files: lookups across a reload, stale candidate sets, a
// garbage file and a damaged entry dropped and the file rewritten clean,
// and writers in several threads and several processes keeping every
// entry. Then native FFT's measured plans, kept as FFTW wisdom beside the
// cache: written when tuning, a damaged file ignored and rewritten.
#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/support.hpp"
#include "core/tune_file.hpp"
#include "unit/child_process.hpp"
#include "xylem/fft.hpp"
#include "xylem/plugin/tune.hpp"

namespace {

namespace tune = xylem::plugin::tune;
namespace fmt = xylem::core::tune;
using xylem_test::TempDir;

tune::Entry entry(const std::string& shape, const std::string& choice, double seconds, std::uint32_t candidates = 1) {
  return {{"test device", "driver 1.0 (platform 3)", "test gemm", shape, candidates}, {choice, seconds}};
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

bool same(const tune::Entry& a, const tune::Entry& b) {
  return fmt::same_slot(a.key, b.key) && a.key.candidates == b.key.candidates && a.winner.choice == b.winner.choice &&
         a.winner.seconds == b.winner.seconds;
}

// Points the process's cache at a file for one test, then back.
class UsePath {
 public:
  explicit UsePath(const std::filesystem::path& file) : old_(tune::path()) { tune::set_path(file); }
  ~UsePath() { tune::set_path(old_); }
  UsePath(const UsePath&) = delete;
  UsePath& operator=(const UsePath&) = delete;

 private:
  std::filesystem::path old_;
};

// ---- The format ----

TEST(TuneFormat, RoundTripsWithFieldsCleaned) {
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  std::vector<tune::Entry> entries;
  for (int i = 0; i < 20; ++i) {
    const double seconds = std::uniform_real_distribution<double>(1e-7, 10)(rng);
    entries.push_back(entry("f32 m" + std::to_string(rng() % 4096), "r8v2 g" + std::to_string(i), seconds,
                            static_cast<std::uint32_t>(rng())));
  }
  const fmt::Parsed back = fmt::parse(fmt::format(entries));
  EXPECT_TRUE(back.clean) << xylem_test::seed_message(seed);
  ASSERT_EQ(back.entries.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) EXPECT_TRUE(same(back.entries[i], entries[i])) << i;

  // Tabs and line breaks would split fields and lines: they become spaces.
  const auto odd = entry("f32\tm1\nn2", "a\rb", 0.5);
  const auto parsed = fmt::parse(fmt::format(std::vector{odd}));
  ASSERT_EQ(parsed.entries.size(), 1u);
  EXPECT_EQ(parsed.entries[0].key.shape, "f32 m1 n2");
  EXPECT_EQ(parsed.entries[0].winner.choice, "a b");
  EXPECT_TRUE(fmt::parse("").clean);
}

TEST(TuneFormat, EveryFlippedByteDropsItsLineAlone) {
  const std::vector<tune::Entry> entries = {entry("f32 m1", "a", 1), entry("f32 m2", "b", 2), entry("f32 m3", "c", 3)};
  const std::string text = fmt::format(entries);
  const std::size_t body = text.find('\n') + 1;
  for (std::size_t at = body; at < text.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = text;
      damaged[at] = static_cast<char>(damaged[at] ^ (1 << bit));
      const fmt::Parsed parsed = fmt::parse(damaged);
      SCOPED_TRACE("byte " + std::to_string(at) + " bit " + std::to_string(bit));
      EXPECT_FALSE(parsed.clean);
      // A damaged line break joins two lines (both dropped); anything else
      // costs its own line only. Nothing damaged is ever returned.
      EXPECT_GE(parsed.entries.size(), text[at] == '\n' ? 1u : 2u);
      for (const auto& e : parsed.entries) {
        bool known = false;
        for (const auto& original : entries) known = known || same(e, original);
        EXPECT_TRUE(known) << "a damaged entry was trusted: " << e.key.shape << " -> " << e.winner.choice;
      }
    }
  }
}

TEST(TuneFormat, AnotherVersionOrGarbageIsDroppedWhole) {
  std::string text = fmt::format(std::vector{entry("f32 m1", "a", 1)});
  std::string other = text;
  other.replace(0, text.find('\n'), "xylem-tune " + std::to_string(fmt::kFormatVersion + 1));
  EXPECT_TRUE(fmt::parse(other).entries.empty());
  EXPECT_FALSE(fmt::parse(other).clean);
  EXPECT_TRUE(fmt::parse("\x7f" "ELF\x02\x01").entries.empty());
  EXPECT_FALSE(fmt::parse("garbage").clean);
  // A file cut inside its last line keeps the lines before.
  text += fmt::format(std::vector{entry("f32 m2", "b", 2)}).substr(text.find('\n') + 1);
  const fmt::Parsed cut = fmt::parse(text.substr(0, text.size() - 3));
  EXPECT_FALSE(cut.clean);
  ASSERT_EQ(cut.entries.size(), 1u);
  EXPECT_EQ(cut.entries[0].winner.choice, "a");
}

// ---- The cache over files ----

TEST(TuneCache, StoresLooksUpAndReloads) {
  const TempDir dir;
  const auto file = dir.path() / "sub" / "tune.txt";  // its directory is made on the first store
  const UsePath use(file);
  const auto e = entry("f32 m512", "r4v4 g2", 0.01, 3);
  EXPECT_FALSE(tune::lookup(e.key));
  EXPECT_TRUE(tune::store(e.key, e.winner));
  ASSERT_TRUE(tune::lookup(e.key));
  EXPECT_EQ(tune::lookup(e.key)->choice, "r4v4 g2");
  tune::set_path(file);  // forgets what it read: the file alone answers now
  ASSERT_TRUE(tune::lookup(e.key));
  EXPECT_EQ(tune::lookup(e.key)->seconds, 0.01);
  // Chosen among another candidate set: stale, not used, then replaced.
  auto newer = e.key;
  newer.candidates = 4;
  EXPECT_FALSE(tune::lookup(newer));
  EXPECT_TRUE(tune::store(newer, {"r8v1 g8", 0.02}));
  ASSERT_EQ(tune::entries().size(), 1u);
  EXPECT_EQ(tune::entries()[0].key.candidates, 4u);
  EXPECT_EQ(tune::path(), file);
}

TEST(TuneCache, GarbageFileIsDroppedAndRebuilt) {
  const TempDir dir;
  const auto file = dir.path() / "tune.txt";
  write_text(file, "xylem-tune 1\nthis is not an entry\n\x01\x02\x03");
  const UsePath use(file);
  const auto e = entry("f64 m64", "r8v2 g8", 0.5);
  EXPECT_FALSE(tune::lookup(e.key));
  // Read once, found damaged, rewritten without the damage at once.
  const fmt::Parsed rewritten = fmt::parse(read_text(file));
  EXPECT_TRUE(rewritten.clean) << read_text(file);
  EXPECT_TRUE(rewritten.entries.empty());
  EXPECT_TRUE(tune::store(e.key, e.winner));
  tune::set_path(file);
  ASSERT_TRUE(tune::lookup(e.key));
  EXPECT_EQ(tune::lookup(e.key)->choice, "r8v2 g8");

  // Another format version: dropped whole, the same way.
  std::string text = read_text(file);
  text.replace(0, text.find('\n'), "xylem-tune 999");
  write_text(file, text);
  tune::set_path(file);
  EXPECT_FALSE(tune::lookup(e.key));
  EXPECT_TRUE(fmt::parse(read_text(file)).clean);
}

TEST(TuneCache, DamagedEntryIsDroppedAndItsNeighboursKept) {
  const TempDir dir;
  const auto file = dir.path() / "tune.txt";
  const std::vector<tune::Entry> entries = {entry("f32 m1", "a", 1), entry("f32 m2", "b", 2), entry("f32 m3", "c", 3)};
  std::string text = fmt::format(entries);
  const std::size_t second = text.find("f32 m2");
  text[second + 5] = 'X';  // "f32 mX": its checksum no longer matches
  write_text(file, text);
  const UsePath use(file);
  ASSERT_TRUE(tune::lookup(entries[0].key));
  EXPECT_FALSE(tune::lookup(entries[1].key)) << "a damaged entry was trusted";
  ASSERT_TRUE(tune::lookup(entries[2].key));
  EXPECT_EQ(tune::lookup(entries[2].key)->choice, "c");
  const fmt::Parsed rewritten = fmt::parse(read_text(file));
  EXPECT_TRUE(rewritten.clean);
  EXPECT_EQ(rewritten.entries.size(), 2u);
  // Rebuilt: the next measurement stores it again.
  EXPECT_TRUE(tune::store(entries[1].key, entries[1].winner));
  EXPECT_EQ(fmt::parse(read_text(file)).entries.size(), 3u);
}

TEST(TuneCache, UnwritableDirectoryServesThisProcess) {
  const TempDir dir;
  const auto blocker = dir.path() / "file";
  write_text(blocker, "a file where a directory should be");
  const UsePath use(blocker / "tune.txt");
  const auto e = entry("f32 m8", "r8v2 g8", 1);
  EXPECT_FALSE(tune::store(e.key, e.winner));
  ASSERT_TRUE(tune::lookup(e.key));
  EXPECT_TRUE(tune::entries().empty());
}

TEST(TuneCache, ConcurrentThreadsKeepEveryEntry) {
  const TempDir dir;
  const auto file = dir.path() / "tune.txt";
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const fmt::TuneFile writer(file);
      for (int i = 0; i < kEach; ++i) {
        // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "t" + to_string(t).
        std::string shape = "t";
        shape += std::to_string(t);
        shape += " i";
        shape += std::to_string(i);
        const auto e = entry(shape, "c", 1);
        EXPECT_TRUE(writer.update([&](std::vector<tune::Entry>& all) { all.push_back(e); }));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const fmt::Parsed parsed = fmt::parse(read_text(file));
  EXPECT_TRUE(parsed.clean);
  EXPECT_EQ(parsed.entries.size(), std::size_t{kThreads * kEach});
}

// A child: stores XYLEM_TEST_COUNT entries named after XYLEM_TEST_NAME in
// XYLEM_TEST_FILE through the process-wide cache.
TEST(TuneCache, ChildWriter) {
  if (!xylem_test::is_child("tune-writer")) GTEST_SKIP() << "run by ConcurrentProcessesKeepEveryEntry";
  tune::set_path(std::getenv("XYLEM_TEST_FILE"));
  const int count = std::atoi(std::getenv("XYLEM_TEST_COUNT"));
  for (int i = 0; i < count; ++i) {
    const auto e = entry(std::string(std::getenv("XYLEM_TEST_NAME")) + " " + std::to_string(i), "c", 1);
    ASSERT_TRUE(tune::store(e.key, e.winner));
  }
}

TEST(TuneCache, ConcurrentProcessesKeepEveryEntry) {
  if (xylem_test::is_child("tune-writer")) GTEST_SKIP();
  const TempDir dir;
  const auto file = dir.path() / "tune.txt";
  constexpr int kProcesses = 3, kEach = 30;
  std::vector<xylem_test::ChildResult> results(kProcesses);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProcesses; ++p) {
    threads.emplace_back([&, p] {
      results[static_cast<std::size_t>(p)] = xylem_test::run_this_test(
          "TuneCache.ChildWriter", {{"XYLEM_TEST_CHILD", "tune-writer"},
                                    {"XYLEM_TEST_FILE", file.string()},
                                    {"XYLEM_TEST_COUNT", std::to_string(kEach)},
                                    {"XYLEM_TEST_NAME", "p" + std::to_string(p)}});
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& r : results) EXPECT_TRUE(r.passed()) << r.describe();
  const fmt::Parsed parsed = fmt::parse(read_text(file));
  EXPECT_TRUE(parsed.clean);
  EXPECT_EQ(parsed.entries.size(), std::size_t{kProcesses * kEach});
}

TEST(TuneCache, EnabledFollowsTheSwitch) {
  const bool before = tune::enabled();
  tune::set_enabled(true);
  EXPECT_TRUE(tune::enabled());
  tune::set_enabled(false);
  EXPECT_FALSE(tune::enabled());
  tune::set_enabled(before);
}

// A child: fft of a [3, 96] c64 tensor on native against the DFT's sum in
// double, with the cache directory and tuning its environment gives.
TEST(TuneCache, FftChild) {
  if (!xylem_test::is_child("fft")) GTEST_SKIP() << "run by FftWisdomKeptAndDamagedFileRebuilt";
  constexpr std::int64_t kBatch = 3, kN = 96;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::complex<float>> x(std::size_t(kBatch * kN));
  for (auto& e : x) e = {u(rng), u(rng)};
  const auto y = xylem::fft::fft(xylem::Backend::native(), xylem::Tensor::from(x, xylem::Layout{kBatch, kN}))
                     .to_vector<std::complex<float>>();
  ASSERT_EQ(y.size(), x.size());
  for (std::int64_t b = 0; b < kBatch; ++b)
    for (std::int64_t k = 0; k < kN; ++k) {
      std::complex<double> want = 0;
      for (std::int64_t j = 0; j < kN; ++j)
        want += std::complex<double>(x[std::size_t(b * kN + j)]) * std::polar(1.0, -2 * M_PI * double(j * k) / kN);
      const auto got = std::complex<double>(y[std::size_t(b * kN + k)]);
      EXPECT_NEAR(std::abs(got - want), 0.0, 1e-4 * std::sqrt(double(kN))) << b << ", " << k;
    }
}

TEST(TuneCache, FftWisdomKeptAndDamagedFileRebuilt) {
  if (xylem_test::is_child("fft")) GTEST_SKIP();
  const TempDir dir;
  const auto wisdom = dir.path() / "fftw-wisdom-f32.txt";
  const auto run = [&](const char* tune) {
    const auto r = xylem_test::run_this_test(
        "TuneCache.FftChild",
        {{"XYLEM_TEST_CHILD", "fft"}, {"XYLEM_CACHE_DIR", dir.path().string()}, {"XYLEM_TUNE", tune}});
    EXPECT_TRUE(r.passed()) << r.describe();
  };
  const auto is_wisdom = [&] { return read_text(wisdom).starts_with("(fftw-3"); };
  run("1");  // measured: its wisdom stored
  EXPECT_TRUE(is_wisdom()) << read_text(wisdom);
  const std::string garbage = "(fftw-3.3.10 fftwf_wisdom #x0 ((( not wisdom\n";
  std::ofstream(wisdom) << garbage;
  run("0");  // the damaged file ignored: an estimated plan, the file left alone
  EXPECT_EQ(read_text(wisdom), garbage);
  run("1");  // measured again, the file rewritten whole
  EXPECT_TRUE(is_wisdom()) << read_text(wisdom);
  EXPECT_EQ(read_text(wisdom).find("not wisdom"), std::string::npos);
}

}  // namespace
