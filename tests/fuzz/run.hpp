#pragma once
// Running one fuzzed op call: it must either throw xylem::Error, leaving
// every tensor's data as it was, or accept only arguments the reference
// accepts and give the reference's answer. Anything else (another
// exception, a wrong or missing result, a write outside the output, invalid
// arguments accepted) is a finding: the fuzzer prints it and aborts, and
// libFuzzer saves the input.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "args.hpp"

namespace xylem_fuzz {

struct Ctx {
  xylem::Backend backend;
  Picker& p;
};

[[noreturn]] inline void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "\nFINDING in %s:%s\n", what.c_str(), detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// A valid call rejected with a xylem::Error is allowed, but said once per op
// and code, so a run shows which checks are stricter than the reference.
inline void note_rejection(const std::string& op, const xylem::Error& e) {
  static std::set<std::string> said;
  const std::string key = op + " " + std::string(xylem::name(e.code()));
  if (std::getenv("XYLEM_FUZZ_QUIET") || !said.insert(key).second) return;
  std::fprintf(stderr, "note: %s rejected arguments the reference accepts: %s\n", op.c_str(), e.what());
}

// Calls that gave an answer (checked) and calls that raised, by op; printed
// at exit when XYLEM_FUZZ_STATS is set, to see that the fuzzer reaches
// past the argument checks.
struct Counts {
  std::map<std::string, std::pair<long, long>> by_op;
  ~Counts() {
    if (!std::getenv("XYLEM_FUZZ_STATS")) return;
    for (const auto& [op, n] : by_op) std::fprintf(stderr, "stats: %-18s %7ld checked %7ld raised\n", op.c_str(), n.first, n.second);
  }
};
inline void count(const std::string& op, bool answered) {
  static Counts counts;
  auto& n = counts.by_op[op];
  ++(answered ? n.first : n.second);
}

// `call` runs the op; `valid` says whether the reference accepts the
// arguments, `expect` computes its answer for each output's logical
// elements (a vector of Expect, in the order of `outs`).
template <class Call, class Expect>
void run_outputs(const std::string& op, const std::string& what, bool valid, const std::vector<const Arg*>& args,
                 const std::vector<const Arg*>& outs, Call&& call, Expect&& expect) {
  std::vector<const Arg*> all = args;
  all.insert(all.end(), outs.begin(), outs.end());
  try {
    call();
  } catch (const xylem::Error& e) {
    const std::string diff = check(all, nullptr, {});
    if (!diff.empty()) finding(what, std::string(" failed (") + e.what() + ") but changed data:" + diff);
    if (valid) note_rejection(op, e);
    count(op, false);
    return;
  } catch (const std::exception& e) {
    finding(what, std::string(" threw an exception that is not a xylem::Error: ") + e.what());
  }
  if (!valid) finding(what, " accepted arguments the reference rejects");
  count(op, true);
  const std::vector<xylem_ref::Expect> expected = expect();
  std::vector<Checked> checked;
  for (std::size_t i = 0; i < outs.size(); ++i) checked.push_back({outs[i], &expected.at(i)});
  const std::string diff = check(all, checked);
  if (!diff.empty()) finding(what, diff);
}

// run_outputs for one output (or none: `out` null).
template <class Call, class Expect>
void run(const std::string& op, const std::string& what, bool valid, const std::vector<const Arg*>& args,
         const Arg* out, Call&& call, Expect&& expect) {
  std::vector<const Arg*> outs;
  if (out) outs.push_back(out);
  run_outputs(op, what, valid, args, outs, call, [&] {
    std::vector<xylem_ref::Expect> e{expect()};
    if (!out) e.clear();
    return e;
  });
}

// The same for the forms that return a new tensor: it must have `dims` and
// `dtype` and hold the reference's answer.
template <class Call, class Expect>
void run_new(const std::string& op, const std::string& what, bool valid, const std::vector<const Arg*>& args,
             const Dims& dims, DType dtype, Call&& call, Expect&& expect) {
  Tensor r;
  run(op, what, valid, args, nullptr, [&] { r = call(); }, [] { return xylem_ref::Expect{}; });
  if (!r.defined()) return;
  const auto got_dims = r.layout().dims();
  if (Dims(got_dims.begin(), got_dims.end()) != dims || r.dtype() != dtype)
    finding(what, " returned " + r.layout().dims_string() + " " + std::string(xylem::name(r.dtype())) +
                      ", expected " + dims_string(dims) + " " + std::string(xylem::name(dtype)));
  const xylem_ref::Expect e = expect();
  const auto got = r.to_doubles();
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!xylem_ref::matches(dtype, e.v[k], e.mag[k], got[k]))
      finding(what, " (new tensor) element " + std::to_string(k) + ": got " + std::to_string(got[k]) +
                        ", expected " + std::to_string(e.v[k]));
}

}  // namespace xylem_fuzz
