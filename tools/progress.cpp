#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <ostream>

namespace xylem::cli {

ProgressBar::ProgressBar(std::ostream& out, bool terminal, std::string prefix, double redraw, double plain_every)
    : out_(out),
      terminal_(terminal),
      prefix_(std::move(prefix)),
      every_(terminal ? redraw : plain_every) {}

bool ProgressBar::stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

void ProgressBar::update(std::int64_t done, std::int64_t total, std::string_view text) {
  const bool last = done >= total;
  const auto now = std::chrono::steady_clock::now();
  if (!last && shown_ && now - last_ < every_) return;
  last_ = now;
  shown_ = true;
  if (!terminal_) {
    out_ << prefix_ << ": " << text << std::endl;
    return;
  }
  constexpr std::int64_t kWidth = 30;
  const std::int64_t filled = total > 0 ? std::min(done, total) * kWidth / total : kWidth;
  out_ << "\r\033[K[" << std::string(static_cast<std::size_t>(filled), '#')
       << std::string(static_cast<std::size_t>(kWidth - filled), '.') << "] " << text << std::flush;
  if (last) out_ << "\n";
}

}  // namespace xylem::cli
