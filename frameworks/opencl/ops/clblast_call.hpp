#pragma once
// One CLBlast call as a step of a launch: gemm_clblast.cpp and
// blas_extra_clblast.cpp make theirs through clblast_call. CLBlast takes no
// event wait list, so the call's dependencies become a barrier on our
// in-order queue first.
#include <clblast.h>

#include <string>

#include "frameworks/opencl/ops/launch.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::opencl {

inline std::string clblast_status(clblast::StatusCode status) {
  const int code = static_cast<int>(status);
  // Codes above -1000 are OpenCL's own.
  if (code > -1000) return cl_error_name(code);
  std::string text = "CLBlast status ";
  text += std::to_string(code);
  return text;
}

// Makes one CLBlast call (`call(queue, event)` returns its status), behind
// the library-call fault point, after the call's dependencies; takes the
// event it enqueued, or throws with its status. CLBlast passes OpenCL's own
// codes through (out of resources, a failed build of its kernels), which
// mean what they mean elsewhere. While a recording is collected, the call
// is kept to be made again at each replay: it reads and writes only the
// buffers it is given (those of the graph's tensors, or temporaries the
// recording keeps), so making it again computes the same thing.
template <class Call>
void clblast_call(Launcher& launch, const char* routine, Call call) {
  if (CommandList* list = launch.collecting()) {
    list->add_call([call](cl_command_queue* queue, cl_event* event) { return static_cast<cl_int>(call(queue, event)); },
                   launch.describe() + ": CLBlast " + routine);
    return;
  }
  launch.wait_for_deps();
  cl_command_queue queue = launch.device().queue();
  cl_event event = nullptr;
  const clblast::StatusCode status = plugin::should_fail(plugin::FaultSite::library_call, "opencl")
                                         ? clblast::StatusCode::kUnknownError
                                         : call(&queue, &event);
  if (status != clblast::StatusCode::kSuccess) {
    if (event) clReleaseEvent(event);
    const int code = static_cast<int>(status);
    throw Error(code > -1000 ? error_code_of(code) : ErrorCode::internal,
                launch.describe() + ": CLBlast " + routine + " failed: " + clblast_status(status));
  }
  launch.enqueued(event);
}

// CLBlast's name for a transpose flag.
inline clblast::Transpose clblast_transpose(bool t) { return t ? clblast::Transpose::kYes : clblast::Transpose::kNo; }

}  // namespace xylem::opencl
