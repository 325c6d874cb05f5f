#pragma once
// Training curves as an SVG file: panels stacked top to bottom, each with
// its axes, the extreme values on them, and one polyline per series.
#include <filesystem>
#include <string>
#include <vector>

namespace xylem::cli {

struct CurveSeries {
  std::string label;       // in the panel's legend
  std::string colour;      // an SVG colour: "#1f77b4"
  std::vector<double> x, y;  // points, x ascending
};

struct CurvePanel {
  std::string title;  // "loss", "accuracy (%)"; plain text, no markup
  std::vector<CurveSeries> series;
};

// The SVG document of `panels`.
[[nodiscard]] std::string curve_svg(const std::vector<CurvePanel>& panels);

// Writes curve_svg(panels) to `path`; throws xylem::Error (io) when it cannot.
void write_curve_svg(const std::filesystem::path& path, const std::vector<CurvePanel>& panels);

}  // namespace xylem::cli
