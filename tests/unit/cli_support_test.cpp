// What the command's subcommands share: the progress bar (redrawn in place
// on a terminal, plain lines elsewhere), the SVG training curves, and the
// Fashion-MNIST training (its --capture steps against eager ones).
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>

#include "curve_svg.hpp"
#include "fashion_mnist.hpp"
#include "progress.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem::cli::CurvePanel;
using xylem::cli::ProgressBar;

std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
  return n;
}

TEST(ProgressBar, PlainLinesOffATerminal) {
  std::ostringstream out;
  ProgressBar bar(out, false, "job");
  bar.update(1, 2, "half");
  bar.update(2, 2, "all");
  EXPECT_EQ(out.str(), "job: half\njob: all\n");
}

TEST(ProgressBar, PlainLinesAreThrottledButTheLastShows) {
  std::ostringstream out;
  ProgressBar bar(out, false, "job", 0.1, 3600);
  for (int k = 1; k <= 5; ++k) bar.update(k, 5, "step " + std::to_string(k));
  EXPECT_EQ(out.str(), "job: step 1\njob: step 5\n");
}

TEST(ProgressBar, RedrawnInPlaceOnATerminal) {
  std::ostringstream out;
  ProgressBar bar(out, true, "job", 0);
  bar.update(1, 3, "one");
  bar.update(3, 3, "three");
  const std::string s = out.str();
  EXPECT_EQ(count(s, "\r\033[K["), 2u);
  EXPECT_NE(s.find("[##########....................] one"), std::string::npos) << s;
  EXPECT_NE(s.find("[##############################] three\n"), std::string::npos) << s;
  EXPECT_EQ(count(s, "\n"), 1u) << "only the last step ends the line";
}

TEST(CurveSvg, OnePolylinePerSeriesAndAxesPerPanel) {
  const std::vector<CurvePanel> panels{{"loss", {{"train", "#d62728", {1, 2, 3}, {0.9, 0.5, 0.4}}}},
                                       {"accuracy", {{"train", "#1f77b4", {1, 2, 3}, {70, 80, 85}},
                                                     {"test", "#2ca02c", {1, 2, 3}, {72, 81, 84}}}}};
  const std::string svg = xylem::cli::curve_svg(panels);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 3u + 2u);  // the series, then one pair of axes per panel
  EXPECT_NE(svg.find(">accuracy</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.9</text>"), std::string::npos) << "the extreme values are labelled";
}

TEST(CurveSvg, FlatAndSinglePointSeriesStayFinite) {
  const std::string svg = xylem::cli::curve_svg({{"flat", {{"one", "black", {1}, {5}}}}});
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

// A step replayed from a captured graph computes what the eager step does:
// the same loss and accuracies, to the bit (the same kernels in the same
// order), including the smaller last batch (a second graph).
TEST(TrainCapture, SameEpochAsEager) {
  for (const char* framework : {"native", "opencl"}) {
    try {
      (void)xylem::Backend::open(framework);
    } catch (const xylem::Error& e) {
      std::cout << framework << " skipped: " << e.message() << "\n";
      continue;
    }
    xylem::cli::TrainOptions o;
    o.backend = framework;
    o.epochs = 1;
    o.limit = 300;  // 4 batches of 64 and one of 44
    std::ostringstream quiet;
    std::vector<xylem::cli::EpochResult> eager, captured;
    try {
      eager = xylem::cli::train_fashion_mnist(o, quiet, false);
    } catch (const xylem::Error& e) {
      if (e.code() != xylem::ErrorCode::io) throw;
      GTEST_SKIP() << "no Fashion-MNIST (Debian: dataset-fashion-mnist): " << e.message();
    }
    o.capture = true;
    captured = xylem::cli::train_fashion_mnist(o, quiet, false);
    ASSERT_EQ(eager.size(), 1u);
    ASSERT_EQ(captured.size(), 1u);
    EXPECT_EQ(captured[0].loss, eager[0].loss) << framework;
    EXPECT_EQ(captured[0].train_accuracy, eager[0].train_accuracy) << framework;
    EXPECT_EQ(captured[0].test_accuracy, eager[0].test_accuracy) << framework;
  }
}

}  // namespace
