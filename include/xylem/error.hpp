#pragma once
/// @file
/// One exception type for everything xylem reports. The code says what kind
/// of failure it is; the message names the operation, shapes, dtypes and
/// device, and what to do about it.
#include <stdexcept>
#include <string>
#include <string_view>

namespace xylem {

/// The error codes, one X(name) each: the table ErrorCode and name() come from.
#define XYLEM_ERROR_CODES(X) \
  X(invalid_argument)        \
  X(shape_mismatch)          \
  X(dtype_mismatch)          \
  X(out_of_memory)           \
  X(unsupported)             \
  X(uninitialized_read)      \
  X(compile_failed)          \
  X(plugin_unavailable)      \
  X(device_lost)             \
  X(io)                      \
  X(timeout)                 \
  X(communication)           \
  X(index_out_of_range)      \
  X(internal)

/// What kind of failure an Error reports.
enum class ErrorCode {
/// @cond
#define XYLEM_ERROR_ENUM(e) e,
/// @endcond
  XYLEM_ERROR_CODES(XYLEM_ERROR_ENUM)
#undef XYLEM_ERROR_ENUM
};

/// The code's name: "shape_mismatch"...
[[nodiscard]] std::string_view name(ErrorCode code) noexcept;

/// The exception every xylem failure raises; raised before any tensor changes.
class Error : public std::runtime_error {
 public:
  /// what() reads "code: message".
  Error(ErrorCode code, const std::string& message);
  /// What kind of failure it is.
  [[nodiscard]] ErrorCode code() const noexcept { return code_; }
  /// The message without the "code: " prefix what() carries.
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace xylem
