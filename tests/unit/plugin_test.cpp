// The plugin loader: frameworks present and absent with the reason, the
// working test framework "mirror", and broken plugins that must make their
// framework unavailable (never crash). XYLEM_PLUGIN_PATH points at the test
// plugins (set by ctest, or by the test main).
#include <cstdlib>
#include <optional>

#include "common/support.hpp"

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
  using xylem::plugin::OpId;
  auto m = xylem_test::mirror();
  EXPECT_TRUE(m.supports(OpId::math_unary, xylem::f32));
  EXPECT_TRUE(m.supports(OpId::blas_scal, xylem::f64));
  EXPECT_FALSE(m.supports(OpId::blas_gemm, xylem::f32));
  EXPECT_FALSE(m.supports(OpId::math_unary, xylem::i32));
  auto native = Backend::native();
  for (std::size_t i = 0; i < xylem::plugin::kOpCount; ++i) {
    auto op = static_cast<OpId>(i);
    EXPECT_TRUE(native.supports(op, xylem::f32)) << xylem::plugin::op_name(op);
    EXPECT_TRUE(native.supports(op, xylem::f64)) << xylem::plugin::op_name(op);
  }
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

}  // namespace
