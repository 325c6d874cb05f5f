// xylem math, broadcasts of a per-channel or per-row operand over a larger
// tensor (a convolution's bias [1,K,1,1] over [N,K,H,W], a scale [N,K,1,1],
// a row [K] over [M,K]) with odd run lengths (H*W = 1, 3, 77, 169, 3025),
// where a vector of a GPU kernel straddles the runs: sub (order matters)
// and mul in both operand orders, into contiguous outputs and outputs not
// 16-byte aligned, from inputs not aligned, in place, and where with a
// byte condition (the widest vectors), in f16, bf16, f32 and f64.
#include "conformance/math_common.hpp"

namespace conformance {
namespace {

struct RunCase {
  Dims big, small;  // small broadcasts over big
};

const RunCase kRunCases[] = {
    {{3, 5, 7, 11}, {1, 5, 1, 1}},      // runs of 77
    {{2, 3, 55, 55}, {1, 3, 1, 1}},     // runs of 3025, as AlexNet's first layer
    {{7, 5, 1, 1}, {1, 5, 1, 1}},       // runs of 1
    {{4, 6, 1, 3}, {1, 6, 1, 1}},       // runs of 3
    {{2, 16, 13, 13}, {1, 16, 1, 1}},   // runs of 169
    {{4, 6, 13, 13}, {4, 6, 1, 1}},     // a scale per sample and channel
    {{1, 5, 7, 7}, {5, 1, 1}},          // one sample, ranks differ
    {{9, 13}, {13}},                    // a row of odd length
    {{9, 13}, {9, 1}},                  // a column
    {{2, 3, 4, 4}, {1, 3, 1, 1}},       // runs of 16: whole vectors
    {{3, 5, 7, 11}, {1, 1, 1, 1}},      // one value
    {{3, 5, 7, 11}, {3, 1, 7, 1}},      // not constant along runs of the output
};

struct Layouts {
  ViewKind big, small, out;
};

const Layouts kLayouts[] = {
    {ViewKind::contiguous, ViewKind::contiguous, ViewKind::contiguous},
    {ViewKind::contiguous, ViewKind::contiguous, ViewKind::shifted},
    {ViewKind::shifted, ViewKind::contiguous, ViewKind::contiguous},
    {ViewKind::contiguous, ViewKind::shifted, ViewKind::contiguous},
    {ViewKind::strided, ViewKind::contiguous, ViewKind::contiguous},
};

using Binary = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);

struct RunOp {
  const char* name;
  Binary into;
  double (*ref)(double, double);
};

const RunOp kRunOps[] = {
    {"sub", [](const Backend& b, const Tensor& x, const Tensor& y, Tensor& out) { xylem::sub(b, x, y, out); },
     [](double x, double y) { return x - y; }},
    {"mul", [](const Backend& b, const Tensor& x, const Tensor& y, Tensor& out) { xylem::mul(b, x, y, out); },
     [](double x, double y) { return x * y; }},
};

class Broadcast : public MathConformance {
 protected:
  // op(x, y) into `out` of dims `dims`, checked element by element.
  void check(const RunOp& op, DType dtype, const Dims& dims, const Arg& x, const Dims& x_dims, const Arg& y,
             const Dims& y_dims, Arg& out) {
    op.into(backend, x.view, y.view, out.view);
    std::vector<double> e(static_cast<std::size_t>(numel(dims)));
    for (std::size_t k = 0; k < e.size(); ++k)
      e[k] = round_to(dtype, op.ref(x.at(broadcast_index(dims, x_dims, k)), y.at(broadcast_index(dims, y_dims, k))));
    expect_result(out, e, [&](std::size_t k) { return arith_tol(dtype) * std::abs(e[k]) + tiny(dtype); }, op.name);
  }
};

TEST_P(Broadcast, runs_of_any_length) {
  for_each_float_dtype([&](DType dtype) {
    if (!runs(OpId::math_binary, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {4});
          xylem::sub(backend, x.view, x.view, x.view);
        })) {
      return;
    }
    for (const RunOp& op : kRunOps)
      for (const RunCase& c : kRunCases)
        for (const Layouts& l : kLayouts)
          for (bool small_first : {false, true}) {
            SCOPED_TRACE(std::string(op.name) + " " + dims_string(c.big) + " " + name(l.big) + " with " +
                         dims_string(c.small) + " " + name(l.small) + " -> " + name(l.out) +
                         (small_first ? ", the small operand first" : ""));
            const auto big = input(dtype, l.big, c.big, 0.25, 4);
            const auto small = input(dtype, l.small, c.small, 0.25, 4);
            auto out = poisoned(dtype, l.out, c.big);
            if (small_first)
              check(op, dtype, c.big, small, c.small, big, c.big, out);
            else
              check(op, dtype, c.big, big, c.big, small, c.small, out);
          }
    for (const RunCase& c : kRunCases) {
      SCOPED_TRACE("in place, " + dims_string(c.big) + " with " + dims_string(c.small));
      auto big = input(dtype, ViewKind::contiguous, c.big, 0.25, 4);
      const auto small = input(dtype, ViewKind::contiguous, c.small, 0.25, 4);
      check(kRunOps[0], dtype, c.big, big, c.big, small, c.small, big);  // host values stay those before
    }
  });
}

TEST_P(Broadcast, where_with_runs) {
  for_each_float_dtype([&](DType dtype) {
    if (!runs_where(dtype)) return;
    for (const RunCase& c : kRunCases)
      for (ViewKind out_layout : {ViewKind::contiguous, ViewKind::shifted}) {
        SCOPED_TRACE(dims_string(c.big) + " with " + dims_string(c.small) + " -> " + name(out_layout));
        auto cond = random_bools(ViewKind::contiguous, c.big);
        const auto x = input(dtype, ViewKind::contiguous, c.big, -10, 10);
        const auto y = input(dtype, ViewKind::contiguous, c.small, -10, 10);
        auto r = poisoned(dtype, out_layout, c.big);
        xylem::where(backend, cond.view, x.view, y.view, r.view);
        std::vector<double> e(static_cast<std::size_t>(numel(c.big)));
        for (std::size_t k = 0; k < e.size(); ++k) e[k] = cond.at(k) != 0 ? x.at(k) : y.at(broadcast_index(c.big, c.small, k));
        expect_result(r, e, [](std::size_t) { return 0.0; }, "where");
      }
  });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Broadcast, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
