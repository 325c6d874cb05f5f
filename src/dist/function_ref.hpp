#pragma once
// A callable borrowed for the length of one call, without std::function's
// copy of it onto the heap: a small collective's path makes no allocation
// for its closures (src/dist/host_work.hpp).
#include <type_traits>
#include <utility>

namespace xylem::dist::detail {

template <class Signature>
class FunctionRef;

template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  // Refers to `f`, which must outlive every call (a lambda passed as an
  // argument lives to the end of the caller's full expression).
  template <class F, class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): passed as a lambda is
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...); }) {}

  R operator()(A... a) const { return call_(object_, std::forward<A>(a)...); }

 private:
  void* object_;
  R (*call_)(void*, A...);
};

}  // namespace xylem::dist::detail
