#pragma once
// A progress bar for long work: on a terminal one line redrawn in place
// ("\r", erase, bar, text); elsewhere (a log, a pipe, CI) plain lines, so
// the output reads well in a file.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace xylem::cli {

class ProgressBar {
 public:
  // `prefix` starts each plain line ("warm: ..."). On a terminal the line is
  // redrawn at most every `redraw` seconds; plain lines come at most every
  // `plain_every` seconds (0: at every update). The last step (done ==
  // total) always shows, and ends the line.
  ProgressBar(std::ostream& out, bool terminal, std::string prefix, double redraw = 0.1, double plain_every = 0);

  // Whether standard output is a terminal (the usual `terminal` argument).
  [[nodiscard]] static bool stdout_is_terminal();

  // Shows step `done` of `total` with `text`.
  void update(std::int64_t done, std::int64_t total, std::string_view text);

 private:
  std::ostream& out_;
  bool terminal_;
  std::string prefix_;
  std::chrono::duration<double> every_;
  std::chrono::steady_clock::time_point last_{};
  bool shown_ = false;
};

}  // namespace xylem::cli
