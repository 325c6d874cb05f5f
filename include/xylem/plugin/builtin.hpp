#pragma once
// Frameworks linked into the program instead of loaded from a plugin file:
// native, which libxylem links in, or a test's own framework. The core
// reaches them through the XylemPluginInfo a plugin exports, as it reaches
// a loaded plugin: it checks the API version and creates the framework the
// first time it is asked for.
#include <cstdint>

#include "xylem/plugin/plugin.hpp"

namespace xylem::plugin {

// Where a framework's device 0 keeps its allocations.
enum class BuiltinMemory : std::uint8_t {
  device,  // memory the host cannot address (cl_mem, device pointers)
  host,    // plain host pointers; its kernels also take host memory they did not allocate
};

// Registers a framework under info.name, before any framework is used (from
// a static initialiser of the library that links it in); a plugin file of
// that name is then never loaded. Throws Error(internal) when called after
// the frameworks were listed, for a name already registered, or for a
// second host framework.
//
// The host framework (BuiltinMemory::host, at most one) holds the core's
// host copies of tensors: Tensor::from writes there, reads gather there
// through core::copy_view, and copies between frameworks are staged there.
// Without one, tensors live on devices only.
void register_builtin(const XylemPluginInfo& info, BuiltinMemory memory);

}  // namespace xylem::plugin
