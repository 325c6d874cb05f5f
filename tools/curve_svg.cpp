#include "curve_svg.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "xylem/error.hpp"

namespace xylem::cli {

namespace {

constexpr double kWidth = 640, kPanelHeight = 260;
constexpr double kLeft = 70, kRight = 150, kTop = 30, kBottom = 40;  // margins around each plot area

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.4g", v);
  return s;
}

struct Range {
  double low = std::numeric_limits<double>::infinity(), high = -std::numeric_limits<double>::infinity();
  void add(double v) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  // Where v falls between `from` (at low) and `to` (at high); a flat range
  // maps to the middle.
  double map(double v, double from, double to) const {
    if (!(high > low)) return (from + to) / 2;
    return from + (v - low) / (high - low) * (to - from);
  }
};

void panel(std::string& svg, const CurvePanel& p, double top) {
  Range xr, yr;
  for (const auto& s : p.series) {
    for (double v : s.x) xr.add(v);
    for (double v : s.y) yr.add(v);
  }
  const double x0 = kLeft, x1 = kWidth - kRight, y0 = top + kPanelHeight - kBottom, y1 = top + kTop;
  svg += "<text x=\"" + number(x0) + "\" y=\"" + number(top + 20) + "\" font-weight=\"bold\">" + p.title + "</text>\n";
  svg += "<polyline fill=\"none\" stroke=\"black\" points=\"" + number(x0) + "," + number(y1) + " " + number(x0) + "," +
         number(y0) + " " + number(x1) + "," + number(y0) + "\"/>\n";
  if (xr.low <= xr.high) {
    svg += "<text x=\"" + number(x0) + "\" y=\"" + number(y0 + 16) + "\">" + number(xr.low) + "</text>\n";
    svg += "<text x=\"" + number(x1) + "\" y=\"" + number(y0 + 16) + "\" text-anchor=\"end\">" + number(xr.high) +
           "</text>\n";
    svg += "<text x=\"" + number(x0 - 6) + "\" y=\"" + number(y0) + "\" text-anchor=\"end\">" + number(yr.low) +
           "</text>\n";
    svg += "<text x=\"" + number(x0 - 6) + "\" y=\"" + number(y1 + 10) + "\" text-anchor=\"end\">" + number(yr.high) +
           "</text>\n";
  }
  double legend = y1;
  for (const auto& s : p.series) {
    std::string points;
    for (std::size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k)
      points += number(xr.map(s.x[k], x0, x1)) + "," + number(yr.map(s.y[k], y0, y1)) + " ";
    svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + s.colour + "\" points=\"" + points + "\"/>\n";
    svg += "<text x=\"" + number(x1 + 10) + "\" y=\"" + number(legend + 10) + "\" fill=\"" + s.colour + "\">" +
           s.label + "</text>\n";
    legend += 18;
  }
}

}  // namespace

std::string curve_svg(const std::vector<CurvePanel>& panels) {
  const double height = kPanelHeight * static_cast<double>(std::max<std::size_t>(panels.size(), 1));
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) + "\" height=\"" +
                    number(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t k = 0; k < panels.size(); ++k) panel(svg, panels[k], kPanelHeight * static_cast<double>(k));
  return svg + "</svg>\n";
}

void write_curve_svg(const std::filesystem::path& path, const std::vector<CurvePanel>& panels) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << curve_svg(panels);
  out.flush();
  if (!out) throw Error(ErrorCode::io, "cannot write the curve to " + path.string());
}

}  // namespace xylem::cli
