// What makes libxylem more than the core: the frameworks linked into it,
// handed to the core as it loads, through the entry a plugin would export.
// Native holds the host memory (Tensor::from, reads, staging between
// frameworks); the GPU frameworks stay plugins, loaded at run time.
#include "frameworks/native/framework.hpp"
#include "xylem/plugin/builtin.hpp"

namespace {

// A static initialiser of libxylem: it runs when the library is loaded,
// before any code that links libxylem can ask for a framework.
[[maybe_unused]] const bool native_registered =
    (xylem::plugin::register_builtin(xylem::native::plugin_info(), xylem::plugin::BuiltinMemory::host), true);

}  // namespace
