#include "xylem/error.hpp"

namespace xylem {

std::string_view name(ErrorCode code) noexcept {
  switch (code) {
#define XYLEM_ERROR_NAME(e) \
  case ErrorCode::e:        \
    return #e;
    XYLEM_ERROR_CODES(XYLEM_ERROR_NAME)
#undef XYLEM_ERROR_NAME
  }
  return "?";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(name(code)) + ": " + message), code_(code), message_(message) {}

}  // namespace xylem
