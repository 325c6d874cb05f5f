// The plugin loader: frameworks present and absent with the reason, the
// working test framework "mirror", and broken plugins that must make their
// framework unavailable (never crash): truncated and garbage files, a
// directory named like a plugin, a broken file earlier on the path than a
// working one. Plugins load lazily: a native-only program maps none.
// XYLEM_PLUGIN_PATH points at the test plugins (set by ctest, or by the test
// main).
#include <elf.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>
#include <optional>
#include <random>
#include <sstream>

#include "common/support.hpp"
#include "core/plugin_file_check.hpp"
#include "unit/child_process.hpp"
#include "xylem/plugin/args.hpp"

namespace {

using xylem::Backend;
using xylem::ErrorCode;
using xylem::FrameworkStatus;
using xylem_test::contains;

std::optional<FrameworkStatus> status_of(const std::string& name) {
  for (auto& s : Backend::frameworks()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

TEST(Plugins, KnownFrameworksAlwaysListed) {
  for (const char* name : {"native", "opencl", "cuda"}) {
    auto s = status_of(name);
    ASSERT_TRUE(s) << name << " missing from Backend::frameworks()";
    if (!s->available) {
      EXPECT_FALSE(s->reason.empty()) << name << " is unavailable without a reason";
    }
  }
}

TEST(Plugins, NativeIsBuiltIn) {
  auto s = status_of("native");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->available);
  EXPECT_EQ(s->source, "built in");
  ASSERT_FALSE(s->hardware.empty());
  EXPECT_EQ(s->hardware[0].kind, xylem::HardwareKind::cpu);
  EXPECT_EQ(s->hardware[0].framework, "native");
  EXPECT_GE(s->hardware[0].compute_units, 1);
  EXPECT_EQ(s->hardware[0].id(), "native:0");
  auto native = Backend::native();
  EXPECT_EQ(native.framework(), "native");
  EXPECT_EQ(native.id(), "native:0");
  EXPECT_EQ(Backend::open("native"), native);
  EXPECT_EQ(Backend::open("native:0"), native);
}

TEST(Plugins, MirrorLoadsFromThePluginPath) {
  auto s = status_of("mirror");
  const char* path = std::getenv("XYLEM_PLUGIN_PATH");
  ASSERT_TRUE(s) << "the test plugin was not found; XYLEM_PLUGIN_PATH=" << (path ? path : "(unset)");
  EXPECT_TRUE(s->available) << s->reason;
  EXPECT_TRUE(contains(s->source, "libxylem_mirror.so")) << s->source;
  ASSERT_EQ(s->hardware.size(), 1u);
  EXPECT_EQ(s->hardware[0].kind, xylem::HardwareKind::other);
  EXPECT_EQ(s->hardware[0].name, "mirror host heap");

  auto m = Backend::open("mirror:0");
  EXPECT_EQ(m.framework(), "mirror");
  EXPECT_EQ(m.id(), "mirror:0");
  EXPECT_EQ(m.hardware().kind, xylem::HardwareKind::other);
  EXPECT_EQ(m.hardware().framework, "mirror");
  EXPECT_EQ(Backend::open("mirror"), m);
  EXPECT_FALSE(m == Backend::native());

  xylem::BackendConfig config;
  config.framework = "mirror";
  config.device = 0;
  Backend from_config(config);
  EXPECT_EQ(from_config.id(), "mirror:0");
  EXPECT_EQ(from_config.config().framework, "mirror");
}

TEST(Plugins, SupportsAsksTheFramework) {
  using OpId = xylem::Op;
  auto m = xylem_test::mirror();
  EXPECT_TRUE(m.supports(OpId::math_unary, xylem::f32));
  EXPECT_TRUE(m.supports(OpId::blas_scal, xylem::f64));
  EXPECT_FALSE(m.supports(OpId::blas_gemm, xylem::f32));
  EXPECT_FALSE(m.supports(OpId::math_unary, xylem::i32));
  auto native = Backend::native();
  for (std::size_t i = 0; i < xylem::kOpCount; ++i) {
    auto op = static_cast<OpId>(i);
    // index::check dispatches on its indices' dtype; transforms of complex
    // data on the complex dtype of each precision.
    auto [a, b] = std::pair{xylem::f32, xylem::f64};
    if (op == OpId::index_check) std::tie(a, b) = std::pair{xylem::i32, xylem::i64};
    if (op == OpId::fft_c2c || op == OpId::fft_c2r) std::tie(a, b) = std::pair{xylem::c64, xylem::c128};
    // The whole-stack recurrent ops are cuDNN's and (f32 only, with
    // oneDNN) native's; the layers run per step elsewhere.
    if (op == OpId::nn_rnn_sequence_reserve || op == OpId::nn_rnn_sequence || op == OpId::nn_rnn_sequence_grad_data ||
        op == OpId::nn_rnn_sequence_grad_weights)
      continue;
    // A convolution's epilogue is cuDNN's fusion; elsewhere the core runs
    // the convolution and then its tail.
    if (op == OpId::nn_conv2d_epilogue) continue;
    EXPECT_TRUE(native.supports(op, a)) << xylem::op_name(op);
    EXPECT_TRUE(native.supports(op, b)) << xylem::op_name(op);
  }
}

// The op list is the contract: names, slots and access modes come from it.
TEST(OpContract, AccessModesComeFromTheList) {
  using xylem::plugin::Access;
  using xylem::plugin::OpId;
  const auto gemm = xylem::plugin::tensor_params(OpId::blas_gemm);
  ASSERT_EQ(gemm.size(), 3u);
  EXPECT_EQ(gemm[0].name, "a");
  EXPECT_EQ(gemm[0].access, Access::read);
  EXPECT_EQ(gemm[2].name, "c");
  EXPECT_EQ(gemm[2].access, Access::read_write);
  EXPECT_EQ(gemm[2].scaled_by, "beta");
  const auto norm = xylem::plugin::tensor_params(OpId::nn_layer_norm);
  ASSERT_EQ(norm.size(), 6u);
  EXPECT_TRUE(norm[1].optional);
  EXPECT_EQ(norm[5].name, "rstd");
  EXPECT_EQ(norm[5].access, Access::write);
  EXPECT_EQ(xylem::plugin::op_signature(OpId::blas_axpy), "x:read y:read_write");
}

TEST(OpContract, PackAndUnpackUseTheListsSlots) {
  namespace args = xylem::plugin::args;
  args::blas_gemm<> gemm;
  gemm.a.dtype = xylem::f64;
  gemm.c.dtype = xylem::f16;
  gemm.transpose_b = 1;
  gemm.alpha = 2.5;
  gemm.beta = -1;
  const xylem::plugin::OpCall call = xylem::plugin::pack(gemm);
  EXPECT_EQ(call.op, xylem::plugin::OpId::blas_gemm);
  EXPECT_EQ(call.num_tensors, 3);
  EXPECT_EQ(call.t[0].dtype, xylem::f64);
  EXPECT_EQ(call.t[2].dtype, xylem::f16);
  EXPECT_EQ(call.i[0], 0);
  EXPECT_EQ(call.i[1], 1);
  EXPECT_EQ(call.f[0], 2.5);
  EXPECT_EQ(call.f[1], -1);
  const auto back = xylem::plugin::unpack<args::blas_gemm>(call);
  EXPECT_EQ(back.c.dtype, xylem::f16);
  EXPECT_EQ(back.transpose_b, 1);
  EXPECT_EQ(back.beta, -1);
}

struct Broken {
  const char* name;
  const char* reason_part;
};

class BrokenPlugin : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenPlugin, IsUnavailableWithTheReason) {
  const auto& p = GetParam();
  auto s = status_of(p.name);
  ASSERT_TRUE(s) << p.name << " not listed";
  EXPECT_FALSE(s->available);
  EXPECT_TRUE(s->hardware.empty());
  EXPECT_TRUE(contains(s->reason, p.reason_part)) << "reason: " << s->reason;
  EXPECT_TRUE(contains(s->source, std::string("libxylem_") + p.name + ".so")) << s->source;
}

TEST_P(BrokenPlugin, OpenThrowsPluginUnavailable) {
  const auto& p = GetParam();
  for (const std::string& spec : {std::string(p.name), std::string(p.name) + ":0"}) {
    const auto what = XY_EXPECT_ERROR(ErrorCode::plugin_unavailable, (void)Backend::open(spec));
    EXPECT_TRUE(contains(what, p.reason_part)) << what;
    EXPECT_TRUE(contains(what, p.name)) << what;
  }
  xylem::BackendConfig config;
  config.framework = p.name;
  XY_EXPECT_ERROR(ErrorCode::plugin_unavailable, (void)Backend{config});
}

INSTANTIATE_TEST_SUITE_P(Plugins, BrokenPlugin,
                         ::testing::Values(Broken{"nosymbol", "xylem_plugin_entry"},
                                           Broken{"badversion", "API version"},
                                           Broken{"baddigest", "0123456789abcdef"},
                                           Broken{"refuses", "no hardware on purpose"}),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(Plugins, OpenRejectsBadSpecs) {
  // Unknown frameworks: unavailable or invalid, but always an Error that names it.
  try {
    (void)Backend::open("nosuchframework:0");
    ADD_FAILURE() << "opened a framework that does not exist";
  } catch (const xylem::Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::plugin_unavailable || e.code() == ErrorCode::invalid_argument) << e.what();
    EXPECT_TRUE(contains(e.what(), "nosuchframework")) << e.what();
  }
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Backend::open("mirror:7"));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Backend::open("native:x"));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Backend::open("native:-1"));
}

// XYLEM_BACKEND overrides Backend::best().
class BestBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("XYLEM_BACKEND")) saved_ = old;
  }
  void TearDown() override {
    if (saved_) {
      setenv("XYLEM_BACKEND", saved_->c_str(), 1);
    } else {
      unsetenv("XYLEM_BACKEND");
    }
  }
  std::optional<std::string> saved_;
};

TEST_F(BestBackend, EnvironmentOverrides) {
  setenv("XYLEM_BACKEND", "mirror:0", 1);
  EXPECT_EQ(Backend::best().id(), "mirror:0");
  setenv("XYLEM_BACKEND", "native", 1);
  EXPECT_EQ(Backend::best(), Backend::native());
  unsetenv("XYLEM_BACKEND");
  // Without the override: never a test framework of kind "other", never a
  // broken one; native when nothing better is present.
  auto best = Backend::best();
  EXPECT_TRUE(best.framework() == "native" || best.framework() == "opencl" || best.framework() == "cuda")
      << best.id();
}

TEST_F(BestBackend, OverrideNamingABrokenPluginIsAnError) {
  setenv("XYLEM_BACKEND", "refuses", 1);
  const auto what = XY_EXPECT_ERROR(ErrorCode::plugin_unavailable, (void)Backend::best());
  EXPECT_TRUE(contains(what, "no hardware on purpose")) << what;
}

// ---- Plugin files that must be refused before dlopen ----

namespace fs = std::filesystem;
using xylem_test::Bytes;
using xylem_test::read_bytes;
using xylem_test::TempDir;
using xylem_test::write_bytes;
using xylem::detail::check_plugin_file;

fs::path real_plugin() { return fs::path(XYLEM_TEST_PLUGIN_DIR) / "libxylem_mirror.so"; }

// The sizes a truncated copy of a plugin of `size` bytes is cut to.
std::vector<std::size_t> cut_sizes(std::size_t size) { return {0, 16, 64, size / 2, size - 1}; }

TEST(PluginFile, ARealPluginPasses) {
  const Bytes plugin = read_bytes(real_plugin());
  ASSERT_GT(plugin.size(), 4096u) << real_plugin();
  EXPECT_EQ(check_plugin_file(plugin), "");
}

TEST(PluginFile, TruncatedCopiesAreRefused) {
  const Bytes plugin = read_bytes(real_plugin());
  for (std::size_t size : cut_sizes(plugin.size())) {
    const Bytes cut(plugin.begin(), plugin.begin() + static_cast<std::ptrdiff_t>(size));
    const std::string reason = check_plugin_file(cut);
    EXPECT_FALSE(reason.empty()) << "a copy cut to " << size << " of " << plugin.size() << " bytes passed";
    EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  }
}

TEST(PluginFile, GarbageIsRefused) {
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  Bytes garbage(8192);
  for (auto& b : garbage) b = static_cast<unsigned char>(rng());
  EXPECT_TRUE(contains(check_plugin_file(garbage), "not an ELF file")) << xylem_test::seed_message(seed);
  // A real header followed by garbage program headers: never passes.
  const Bytes plugin = read_bytes(real_plugin());
  Bytes mixed = plugin;
  Elf64_Ehdr header;
  std::memcpy(&header, plugin.data(), sizeof header);
  for (std::size_t i = header.e_phoff; i < header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr); ++i)
    mixed[i] = static_cast<unsigned char>(rng());
  // Random program headers may by chance describe segments inside the file;
  // what matters is that the check reads nothing outside the bytes (ASan).
  (void)check_plugin_file(mixed);
}

// One header field changed at a time: each must be refused with its reason.
TEST(PluginFile, HeaderFieldsAreChecked) {
  const Bytes plugin = read_bytes(real_plugin());
  Elf64_Ehdr header;
  std::memcpy(&header, plugin.data(), sizeof header);
  auto with_header = [&](auto change) {
    Elf64_Ehdr h = header;
    change(h);
    Bytes bytes = plugin;
    std::memcpy(bytes.data(), &h, sizeof h);
    return check_plugin_file(bytes);
  };
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_ident[EI_CLASS] = ELFCLASS32; }), "64-bit"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_ident[EI_DATA] = ELFDATA2MSB; }), "little-endian"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_type = ET_EXEC; }), "ET_DYN"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_machine = EM_ARM; }), "another machine"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_phoff = ~std::uint64_t{0} - 8; }), "program headers"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_phnum = 0xffff; }), "program headers"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_phentsize = 12; }), "program header entries"));
  EXPECT_TRUE(contains(with_header([](Elf64_Ehdr& h) { h.e_shoff = ~std::uint64_t{0} - 100; }), "section headers"));

  // The first PT_LOAD segment reaching past the end, and wrapping around.
  auto with_load = [&](auto change) {
    Bytes bytes = plugin;
    for (std::size_t i = 0; i < header.e_phnum; ++i) {
      Elf64_Phdr ph;
      const std::size_t at = header.e_phoff + i * sizeof ph;
      std::memcpy(&ph, bytes.data() + at, sizeof ph);
      if (ph.p_type != PT_LOAD) continue;
      change(ph);
      std::memcpy(bytes.data() + at, &ph, sizeof ph);
      break;
    }
    return check_plugin_file(bytes);
  };
  const std::uint64_t size = plugin.size();
  EXPECT_TRUE(contains(with_load([&](Elf64_Phdr& ph) { ph.p_filesz = ph.p_memsz = size + 1; }), "PT_LOAD"));
  EXPECT_TRUE(contains(with_load([](Elf64_Phdr& ph) { ph.p_offset = ~std::uint64_t{0} - 4; }), "PT_LOAD"));
  EXPECT_TRUE(contains(with_load([](Elf64_Phdr& ph) {
                         ph.p_offset = 4096;
                         ph.p_filesz = ph.p_memsz = ~std::uint64_t{0} - 100;
                       }),
                       "PT_LOAD"));
}

// ---- Whole processes: loading from a path holding broken files ----

struct ChildStatus {
  bool available = false;
  std::string reason, source;
};

// The frameworks a PluginChild.Report child printed, by name.
std::map<std::string, ChildStatus> parse_report(const std::string& output) {
  std::map<std::string, ChildStatus> report;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("XYLEM-STATUS\t", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::string name, available;
    ChildStatus status;
    std::getline(fields, name, '\t');
    std::getline(fields, available, '\t');
    std::getline(fields, status.reason, '\t');
    std::getline(fields, status.source, '\t');
    status.available = available == "1";
    report[name] = status;
  }
  return report;
}

TEST(PluginLoading, BrokenFilesAreRefusedAndNeverHideAWorkingOne) {
  const Bytes plugin = read_bytes(real_plugin());
  TempDir tmp;
  const fs::path broken = tmp.path() / "broken", wrong = tmp.path() / "wrong";
  fs::create_directories(broken);
  fs::create_directories(wrong);
  std::vector<std::string> cut_names;
  for (std::size_t size : cut_sizes(plugin.size())) {
    cut_names.push_back("cut" + std::to_string(size));
    write_bytes(broken / ("libxylem_" + cut_names.back() + ".so"), Bytes(plugin.begin(), plugin.begin() + static_cast<std::ptrdiff_t>(size)));
  }
  Bytes garbage(4096);
  std::mt19937_64 rng(xylem_test::fresh_seed());
  for (auto& b : garbage) b = static_cast<unsigned char>(rng());
  write_bytes(broken / "libxylem_garbage.so", garbage);
  fs::create_directories(broken / "libxylem_folder.so");
  // mirror: cut in half first on the path, then a plugin of another API
  // version under its name, then the real one.
  write_bytes(broken / "libxylem_mirror.so", Bytes(plugin.begin(), plugin.begin() + static_cast<std::ptrdiff_t>(plugin.size() / 2)));
  fs::copy_file(fs::path(XYLEM_TEST_PLUGIN_DIR) / "libxylem_badversion.so", wrong / "libxylem_mirror.so");

  const auto child = xylem_test::run_this_test(
      "PluginChild.Report", {{"XYLEM_TEST_CHILD", "report"},
                             {"XYLEM_PLUGIN_PATH", broken.string() + ":" + wrong.string() + ":" + XYLEM_TEST_PLUGIN_DIR}});
  ASSERT_TRUE(child.passed()) << child.describe();
  const auto report = parse_report(child.output);
  for (const auto& name : cut_names) {
    ASSERT_TRUE(report.count(name)) << name << " not listed; " << child.describe();
    EXPECT_FALSE(report.at(name).available);
    EXPECT_TRUE(contains(report.at(name).reason, "refused")) << name << ": " << report.at(name).reason;
  }
  ASSERT_TRUE(report.count("garbage") && report.count("folder")) << child.describe();
  EXPECT_TRUE(contains(report.at("garbage").reason, "not an ELF file")) << report.at("garbage").reason;
  EXPECT_TRUE(contains(report.at("folder").reason, "directory")) << report.at("folder").reason;

  ASSERT_TRUE(report.count("mirror")) << child.describe();
  const ChildStatus& mirror = report.at("mirror");
  EXPECT_TRUE(mirror.available) << mirror.reason;
  EXPECT_EQ(fs::path(mirror.source), fs::path(XYLEM_TEST_PLUGIN_DIR) / "libxylem_mirror.so");
  // The files passed over, each with its reason, for `xylem info`.
  EXPECT_TRUE(contains(mirror.reason, (broken / "libxylem_mirror.so").string())) << mirror.reason;
  EXPECT_TRUE(contains(mirror.reason, "truncated")) << mirror.reason;
  EXPECT_TRUE(contains(mirror.reason, (wrong / "libxylem_mirror.so").string())) << mirror.reason;
  EXPECT_TRUE(contains(mirror.reason, "API version")) << mirror.reason;
  EXPECT_TRUE(contains(child.output, "mirror op ok")) << child.describe();
}

// The original failure: a truncated plugin on the path killed programs that
// never asked for it. Native-only work must not even map a plugin.
TEST(PluginLoading, NativeOnlyProgramsNeverLoadAPlugin) {
  const Bytes plugin = read_bytes(real_plugin());
  TempDir tmp;
  const Bytes half(plugin.begin(), plugin.begin() + static_cast<std::ptrdiff_t>(plugin.size() / 2));
  for (const char* name : {"opencl", "cuda", "mirror"}) write_bytes(tmp.path() / ("libxylem_" + std::string(name) + ".so"), half);
  const auto child = xylem_test::run_this_test(
      "PluginChild.NativeOnly", {{"XYLEM_TEST_CHILD", "native_only"},
                                 {"XYLEM_BACKEND", "native"},
                                 {"XYLEM_PLUGIN_PATH", tmp.path().string() + ":" + XYLEM_TEST_PLUGIN_DIR}});
  EXPECT_TRUE(child.passed()) << child.describe();
  EXPECT_TRUE(contains(child.output, "[  PASSED  ] 1 test")) << child.describe();
}

// XYLEM_NATIVE_THREADS=n caps the host's worker threads: the native device
// counts n compute units and computes as before; a value that is not a
// positive number is ignored (the child's count is then that of a child
// with the variable empty, whatever this process was started with).
TEST(PluginLoading, NativeThreadsComeFromTheEnvironment) {
  const auto units = [](const std::string& value) {
    const auto child = xylem_test::run_this_test(
        "PluginChild.NativeThreads", {{"XYLEM_TEST_CHILD", "native_threads"}, {"XYLEM_NATIVE_THREADS", value}});
    EXPECT_TRUE(child.passed()) << "XYLEM_NATIVE_THREADS=" << value << ": " << child.describe();
    const auto at = child.output.find("compute units ");
    return at == std::string::npos ? -1 : std::atoi(child.output.c_str() + at + 14);
  };
  const int all = units("");
  EXPECT_GE(all, 1);
  EXPECT_EQ(units("1"), 1);
  EXPECT_EQ(units("0"), all);
  EXPECT_EQ(units("two"), all);
}

// ---- The children those tests start (skipped in a normal run) ----

TEST(PluginChild, Report) {
  if (!xylem_test::is_child("report")) GTEST_SKIP() << "runs only as PluginLoading's child process";
  for (const auto& s : Backend::frameworks())
    std::cout << "XYLEM-STATUS\t" << s.name << '\t' << s.available << '\t' << s.reason << '\t' << s.source << '\n';
  // The mirror found behind the broken files works.
  auto m = Backend::open("mirror");
  const std::vector<double> data{0.5, -1.25, 3.0};
  auto x = xylem::Tensor::from(data);
  xylem::Tensor y(xylem::Layout{3}, xylem::f64);
  xylem::nn::sigmoid(m, x, y);
  const auto result = y.to_vector<double>();
  for (std::size_t i = 0; i < data.size(); ++i) ASSERT_NEAR(result[i], 1.0 / (1.0 + std::exp(-data[i])), 1e-12);
  std::cout << "mirror op ok\n";
}

TEST(PluginChild, NativeThreads) {
  if (!xylem_test::is_child("native_threads")) GTEST_SKIP() << "runs only as PluginLoading's child process";
  auto native = Backend::native();
  std::cout << "compute units " << native.hardware().compute_units << '\n';
  // Enough elements for several chunks (whatever workers there are), few
  // enough for ThreadSanitizer, which sifts each one a worker writes.
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  const auto data = xylem_test::random_vector<double>(rng, 1 << 16, -4, 4);
  xylem::Tensor y(xylem::Layout{1 << 16}, xylem::f64);
  xylem::nn::sigmoid(native, xylem::Tensor::from(data), y);
  const auto result = y.to_vector<double>();
  for (std::size_t i = 0; i < data.size(); ++i)
    ASSERT_NEAR(result[i], 1.0 / (1.0 + std::exp(-data[i])), 1e-12) << xylem_test::seed_message(seed);
}

// Lines of /proc/self/maps naming a plugin (libxylem_<name>.so).
std::vector<std::string> mapped_plugins() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  for (std::string line; std::getline(maps, line);)
    if (contains(line, "libxylem_")) found.push_back(line);
  return found;
}

TEST(PluginChild, NativeOnly) {
  if (!xylem_test::is_child("native_only")) GTEST_SKIP() << "runs only as PluginLoading's child process";
  auto native = Backend::native();
  const auto seed = xylem_test::fresh_seed();
  std::mt19937_64 rng(seed);
  const auto data = xylem_test::random_vector<double>(rng, 64, -4, 4);
  auto x = xylem::Tensor::from(data);
  xylem::Tensor y(xylem::Layout{64}, xylem::f64);
  xylem::nn::sigmoid(native, x, y);
  const auto result = y.to_vector<double>();
  for (std::size_t i = 0; i < data.size(); ++i)
    ASSERT_NEAR(result[i], 1.0 / (1.0 + std::exp(-data[i])), 1e-12) << xylem_test::seed_message(seed);
  EXPECT_EQ(Backend::open("native"), native);
  EXPECT_EQ(Backend::open("native:0"), native);
  EXPECT_EQ(Backend::best(), native);  // XYLEM_BACKEND=native
  const auto mapped = mapped_plugins();
  EXPECT_TRUE(mapped.empty()) << "a native-only program mapped a plugin: " << mapped.front();
}

}  // namespace
