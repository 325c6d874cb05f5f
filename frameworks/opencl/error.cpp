// CL status codes by name, and what kind of xylem failure each one is.
#include <string>

#include "frameworks/opencl/cl.hpp"

namespace xylem::opencl {

namespace {

#define XYLEM_CL_ERRORS(X)                       \
  X(CL_DEVICE_NOT_FOUND)                         \
  X(CL_DEVICE_NOT_AVAILABLE)                     \
  X(CL_COMPILER_NOT_AVAILABLE)                   \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE)            \
  X(CL_OUT_OF_RESOURCES)                         \
  X(CL_OUT_OF_HOST_MEMORY)                       \
  X(CL_PROFILING_INFO_NOT_AVAILABLE)             \
  X(CL_MEM_COPY_OVERLAP)                         \
  X(CL_IMAGE_FORMAT_MISMATCH)                    \
  X(CL_IMAGE_FORMAT_NOT_SUPPORTED)               \
  X(CL_BUILD_PROGRAM_FAILURE)                    \
  X(CL_MAP_FAILURE)                              \
  X(CL_MISALIGNED_SUB_BUFFER_OFFSET)             \
  X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) \
  X(CL_COMPILE_PROGRAM_FAILURE)                  \
  X(CL_LINKER_NOT_AVAILABLE)                     \
  X(CL_LINK_PROGRAM_FAILURE)                     \
  X(CL_DEVICE_PARTITION_FAILED)                  \
  X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)            \
  X(CL_INVALID_VALUE)                            \
  X(CL_INVALID_DEVICE_TYPE)                      \
  X(CL_INVALID_PLATFORM)                         \
  X(CL_INVALID_DEVICE)                           \
  X(CL_INVALID_CONTEXT)                          \
  X(CL_INVALID_QUEUE_PROPERTIES)                 \
  X(CL_INVALID_COMMAND_QUEUE)                    \
  X(CL_INVALID_HOST_PTR)                         \
  X(CL_INVALID_MEM_OBJECT)                       \
  X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)          \
  X(CL_INVALID_IMAGE_SIZE)                       \
  X(CL_INVALID_SAMPLER)                          \
  X(CL_INVALID_BINARY)                           \
  X(CL_INVALID_BUILD_OPTIONS)                    \
  X(CL_INVALID_PROGRAM)                          \
  X(CL_INVALID_PROGRAM_EXECUTABLE)               \
  X(CL_INVALID_KERNEL_NAME)                      \
  X(CL_INVALID_KERNEL_DEFINITION)                \
  X(CL_INVALID_KERNEL)                           \
  X(CL_INVALID_ARG_INDEX)                        \
  X(CL_INVALID_ARG_VALUE)                        \
  X(CL_INVALID_ARG_SIZE)                         \
  X(CL_INVALID_KERNEL_ARGS)                      \
  X(CL_INVALID_WORK_DIMENSION)                   \
  X(CL_INVALID_WORK_GROUP_SIZE)                  \
  X(CL_INVALID_WORK_ITEM_SIZE)                   \
  X(CL_INVALID_GLOBAL_OFFSET)                    \
  X(CL_INVALID_EVENT_WAIT_LIST)                  \
  X(CL_INVALID_EVENT)                            \
  X(CL_INVALID_OPERATION)                        \
  X(CL_INVALID_GL_OBJECT)                        \
  X(CL_INVALID_BUFFER_SIZE)                      \
  X(CL_INVALID_MIP_LEVEL)                        \
  X(CL_INVALID_GLOBAL_WORK_SIZE)                 \
  X(CL_INVALID_PROPERTY)                         \
  X(CL_INVALID_IMAGE_DESCRIPTOR)                 \
  X(CL_INVALID_COMPILER_OPTIONS)                 \
  X(CL_INVALID_LINKER_OPTIONS)                   \
  X(CL_INVALID_DEVICE_PARTITION_COUNT)

// From cl_ext.h / the ICD loader; not in every cl.h.
constexpr cl_int kPlatformNotFoundKhr = -1001;

}  // namespace

std::string cl_error_name(cl_int status) {
  switch (status) {
    case CL_SUCCESS:
      return "CL_SUCCESS";
#define XYLEM_CL_ERROR_CASE(e) \
  case e:                      \
    return #e;
      XYLEM_CL_ERRORS(XYLEM_CL_ERROR_CASE)
#undef XYLEM_CL_ERROR_CASE
    case kPlatformNotFoundKhr:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default: {
      std::string text = "CL error ";  // appended, not operator+: GCC 12 warns falsely (-Wrestrict)
      text += std::to_string(status);
      return text;
    }
  }
}

ErrorCode error_code_of(cl_int status) noexcept {
  switch (status) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE:
      return ErrorCode::out_of_memory;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
    case CL_COMPILER_NOT_AVAILABLE:
    case CL_LINKER_NOT_AVAILABLE:
    case CL_INVALID_BUILD_OPTIONS:
      return ErrorCode::compile_failed;
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
      return ErrorCode::device_lost;
    case kPlatformNotFoundKhr:
    case CL_DEVICE_NOT_FOUND:
      return ErrorCode::plugin_unavailable;
    default:
      return ErrorCode::internal;
  }
}

}  // namespace xylem::opencl
