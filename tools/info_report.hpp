#pragma once
// The report `xylem info` prints, shared by the command and the Python
// module's `python -m xylem info`, so both print the same lines.
#include <iosfwd>

namespace xylem::cli {

// Every framework xylem knows, available or not and why, each hardware it
// sees, and the backend Backend::best() picks.
void print_info(std::ostream& os);

}  // namespace xylem::cli
