// What the command's subcommands share: the progress bar (redrawn in place
// on a terminal, plain lines elsewhere) and the SVG training curves.
#include <gtest/gtest.h>

#include <sstream>

#include "curve_svg.hpp"
#include "progress.hpp"

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

}  // namespace
