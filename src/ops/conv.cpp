// xylem::nn convolution, pooling and local response normalisation over
// NCHW images: shape arithmetic and checks here, the kernels take the views
// as they are (plugin.hpp).
#include <string>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "xylem/nn.hpp"

namespace xylem::nn {
namespace {

using plugin::OpId;

std::string str(std::int64_t v) { return std::to_string(v); }

void require_image(std::string_view name, const char* arg, const Tensor& t) {
  ops::require_float(name, arg, t);
  if (t.rank() != 4)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": '" + arg + "' has shape " +
                                               t.layout().dims_string() + "; expected rank 4 (NCHW)");
}

// Sizes derived from user parameters can pass int64's range: these give
// invalid_argument naming the shapes instead of a wrapped value.
// `describe()` names them; it runs only on failure, so a call costs no
// string formatting.
template <class Describe>
std::int64_t checked_mul(std::string_view name, std::int64_t a, std::int64_t b, const char* what, Describe&& describe) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(ErrorCode::invalid_argument, std::string(name) + ": " + what + " overflows int64 (" + describe() + ")");
  return r;
}

// Output extent of one spatial axis; invalid_argument when nothing fits.
// `window` >= 1 (checked by the callers).
template <class Describe>
std::int64_t out_extent(std::string_view name, const char* axis, std::int64_t in, std::int64_t window,
                        std::int64_t stride, std::int64_t pad, std::int64_t dilation, Describe&& describe) {
  const std::int64_t span = checked_mul(name, dilation, window - 1, "the dilated window", describe) + 1;
  std::int64_t padded = 0;
  if (__builtin_add_overflow(in, checked_mul(name, 2, pad, "the padding", describe), &padded))
    throw Error(ErrorCode::invalid_argument,
                std::string(name) + ": the padded " + axis + " overflows int64 (" + describe() + ")");
  if (padded < span)
    throw Error(ErrorCode::invalid_argument, std::string(name) + ": the " + axis + " window (" + str(span) +
                                                 " with dilation) is larger than the padded input (" + str(padded) +
                                                 "; " + describe() + ")");
  return (padded - span) / stride + 1;
}

void require_conv_params(std::string_view name, const Conv2d& p) {
  ops::require_argument(p.stride_h >= 1 && p.stride_w >= 1, name, "strides must be at least 1");
  ops::require_argument(p.dilation_h >= 1 && p.dilation_w >= 1, name, "dilations must be at least 1");
  ops::require_argument(p.pad_h >= 0 && p.pad_w >= 0, name, "padding must not be negative");
  ops::require_argument(p.groups >= 1, name, "groups must be at least 1");
}

std::string describe_conv(const Layout& x, const Layout& w, const Conv2d& p) {
  return "x " + x.dims_string() + ", w " + w.dims_string() + ", stride " + str(p.stride_h) + "x" + str(p.stride_w) +
         ", padding " + str(p.pad_h) + "x" + str(p.pad_w) + ", dilation " + str(p.dilation_h) + "x" +
         str(p.dilation_w) + ", groups " + str(p.groups);
}

Layout conv_output(std::string_view name, const Layout& x, const Layout& w, const Conv2d& p) {
  require_conv_params(name, p);
  const auto shapes = [&] { return describe_conv(x, w, p); };
  const std::int64_t n = x.dims()[0], c = x.dims()[1], k = w.dims()[0];
  // PyTorch and cuDNN refuse an empty filter window too: it would give an
  // output larger than the input, of nothing but padding.
  if (w.dims()[2] < 1 || w.dims()[3] < 1)
    throw Error(ErrorCode::invalid_argument,
                std::string(name) + ": the filter window is empty (" + shapes() + "); R and S must be at least 1");
  ops::require_argument(c % p.groups == 0 && k % p.groups == 0, name, [&] {
    return "groups " + str(p.groups) + " must divide the input channels (" + str(c) + ") and the output channels (" +
           str(k) + ")";
  });
  if (w.dims()[1] != c / p.groups)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": w has shape " + w.dims_string() + " but x " +
                                               x.dims_string() + " with groups " + str(p.groups) + " needs " +
                                               str(c / p.groups) + " input channels per filter");
  const std::int64_t ph =
      out_extent(name, "height", x.dims()[2], w.dims()[2], p.stride_h, p.pad_h, p.dilation_h, shapes);
  const std::int64_t pw =
      out_extent(name, "width", x.dims()[3], w.dims()[3], p.stride_w, p.pad_w, p.dilation_w, shapes);
  const std::int64_t plane = checked_mul(name, ph, pw, "the output plane", shapes);
  (void)checked_mul(name, checked_mul(name, n, k, "y's size", shapes), plane, "y's size", shapes);
  // The im2col engines lower one image and group to a [C/groups*R*S, P*Q]
  // matrix; its bytes (f64 at most) must be a size too.
  const char* col = "the im2col matrix of one image";
  const std::int64_t crs =
      checked_mul(name, checked_mul(name, w.dims()[1], w.dims()[2], col, shapes), w.dims()[3], col, shapes);
  (void)checked_mul(name, checked_mul(name, crs, plane, col, shapes), std::int64_t(sizeof(double)), col, shapes);
  return Layout{n, k, ph, pw};
}

// One tensor of a convolution op and the name its caller knows it by.
struct ConvArg {
  const char* name;
  const Tensor& t;
};

// The checks the three convolution ops share. Each passes its tensors in
// the roles of the forward op: the image x [N, C, H, W], the filter w
// [K, C/groups, R, S] and the result y [N, K, P, Q] (grad_data passes dx as
// x and dy as y; grad_filter dw as w and dy as y). x and w decide y's shape,
// so they must be NCHW images; y must then have their dtype and that shape.
void require_conv(std::string_view op, ConvArg x, ConvArg w, ConvArg y, const Conv2d& p) {
  require_image(op, x.name, x.t);
  require_image(op, w.name, w.t);
  ops::require_same_dtype(op, x.name, x.t, w.name, w.t);
  ops::require_defined(op, y.name, y.t);
  ops::require_same_dtype(op, x.name, x.t, y.name, y.t);
  ops::require_dims(op, y.name, y.t, conv_output(op, x.t.layout(), w.t.layout(), p));
}

// The convolution geometry, the same fields in conv2d and its gradients.
template <class Args>
Args with_geometry(Args args, const Conv2d& p) {
  args.stride_h = p.stride_h;
  args.stride_w = p.stride_w;
  args.pad_h = p.pad_h;
  args.pad_w = p.pad_w;
  args.dilation_h = p.dilation_h;
  args.dilation_w = p.dilation_w;
  args.groups = p.groups;
  return args;
}

}  // namespace

Layout conv2d_output_shape(const Layout& x, const Layout& w, const Conv2d& p) {
  ops::require_argument(x.rank() == 4 && w.rank() == 4, "nn::conv2d_output_shape", "x and w must have rank 4");
  return conv_output("nn::conv2d_output_shape", x, w, p);
}

void conv2d(const Backend& b, const Tensor& x, const Tensor& w, Tensor& y, const Conv2d& p) {
  constexpr std::string_view name = "nn::conv2d";
  require_conv(name, {"x", x}, {"w", w}, {"y", y}, p);
  // y empty (N or K 0): written, holding nothing. x empty but y not (C 0,
  // or an empty plane in padding): every term is padding or absent, y = 0.
  if (y.numel() == 0 || x.numel() == 0) {
    ops::fill_output(b, name, y);
    return;
  }
  detail::launch(b, with_geometry(detail::args::nn_conv2d<Tensor>{.x = x, .w = w, .y = y}, p), name);
}

void conv2d_grad_data(const Backend& b, const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2d& p) {
  constexpr std::string_view name = "nn::conv2d_grad_data";
  require_conv(name, {"dx", dx}, {"w", w}, {"dy", dy}, p);
  // dx empty: written, holding nothing; no output channels (K 0): dx sums
  // over nothing, 0.
  if (dx.numel() == 0 || dy.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  detail::launch(b, with_geometry(detail::args::nn_conv2d_grad_data<Tensor>{.dy = dy, .w = w, .dx = dx}, p), name);
}

void conv2d_grad_filter(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dw, const Conv2d& p) {
  constexpr std::string_view name = "nn::conv2d_grad_filter";
  require_conv(name, {"x", x}, {"dw", dw}, {"dy", dy}, p);
  // An empty batch (or input plane): dw sums over nothing, 0.
  if (dw.numel() == 0 || x.numel() == 0 || dy.numel() == 0) {
    ops::fill_output(b, name, dw);
    return;
  }
  detail::launch(b, with_geometry(detail::args::nn_conv2d_grad_filter<Tensor>{.x = x, .dy = dy, .dw = dw}, p), name);
}

namespace {

Pool2d resolved(const Pool2d& p) {
  Pool2d r = p;
  if (r.stride_h == 0) r.stride_h = r.kernel_h;
  if (r.stride_w == 0) r.stride_w = r.kernel_w;
  return r;
}

std::string describe_pool(const Layout& x, const Pool2d& p) {
  return "x " + x.dims_string() + ", window " + str(p.kernel_h) + "x" + str(p.kernel_w) + ", stride " +
         str(p.stride_h) + "x" + str(p.stride_w) + ", padding " + str(p.pad_h) + "x" + str(p.pad_w);
}

Layout pool_output(std::string_view name, const Layout& x, const Pool2d& p) {
  const auto shapes = [&] { return describe_pool(x, p); };
  const auto require = [&](bool ok, const char* what) {
    if (!ok) throw Error(ErrorCode::invalid_argument, std::string(name) + ": " + what + " (" + shapes() + ")");
  };
  require(p.kernel_h >= 1 && p.kernel_w >= 1, "the window must be at least 1x1");
  require(p.stride_h >= 1 && p.stride_w >= 1, "strides must be at least 1");
  // Every window must hold a real element (as PyTorch requires), so the
  // image plane may not be empty either (N and C may be 0).
  require(p.pad_h >= 0 && p.pad_w >= 0 && 2 * std::int64_t(p.pad_h) <= p.kernel_h &&
              2 * std::int64_t(p.pad_w) <= p.kernel_w,
          "padding must be between 0 and half the window");
  require(x.dims()[2] >= 1 && x.dims()[3] >= 1, "the image plane is empty: H and W must be at least 1");
  const std::int64_t ph = out_extent(name, "height", x.dims()[2], p.kernel_h, p.stride_h, p.pad_h, 1, shapes);
  const std::int64_t pw = out_extent(name, "width", x.dims()[3], p.kernel_w, p.stride_w, p.pad_w, 1, shapes);
  (void)checked_mul(name, checked_mul(name, x.dims()[0], x.dims()[1], "y's size", shapes),
                    checked_mul(name, ph, pw, "y's size", shapes), "y's size", shapes);
  return Layout{x.dims()[0], x.dims()[1], ph, pw};
}

// The pooling window, the same fields in every pooling op; the averages
// also say what they divide by.
template <class Args>
Args with_window(Args args, const Pool2d& p) {
  args.window_h = p.kernel_h;
  args.window_w = p.kernel_w;
  args.stride_h = p.stride_h;
  args.stride_w = p.stride_w;
  args.pad_h = p.pad_h;
  args.pad_w = p.pad_w;
  if constexpr (requires { args.count_include_pad; }) args.count_include_pad = p.count_include_pad ? 1 : 0;
  return args;
}

template <template <class> class Pool>
void pool_forward(const Backend& b, std::string_view name, const Tensor& x, Tensor& y, const Pool2d& params) {
  const Pool2d p = resolved(params);
  require_image(name, "x", x);
  ops::require_defined(name, "y", y);
  ops::require_same_dtype(name, "x", x, "y", y);
  ops::require_dims(name, "y", y, pool_output(name, x.layout(), p));
  if (y.numel() == 0) {  // N or C 0: written, holding nothing
    ops::fill_output(b, name, y);
    return;
  }
  detail::launch(b, with_window(Pool<Tensor>{.x = x, .y = y}, p), name);
}

}  // namespace

Layout pool2d_output_shape(const Layout& x, const Pool2d& p) {
  ops::require_argument(x.rank() == 4, "nn::pool2d_output_shape", "x must have rank 4");
  return pool_output("nn::pool2d_output_shape", x, resolved(p));
}

void max_pool2d(const Backend& b, const Tensor& x, Tensor& y, const Pool2d& p) {
  pool_forward<detail::args::nn_max_pool2d>(b, "nn::max_pool2d", x, y, p);
}
void avg_pool2d(const Backend& b, const Tensor& x, Tensor& y, const Pool2d& p) {
  pool_forward<detail::args::nn_avg_pool2d>(b, "nn::avg_pool2d", x, y, p);
}

void max_pool2d_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, const Pool2d& params) {
  constexpr std::string_view name = "nn::max_pool2d_grad";
  const Pool2d p = resolved(params);
  require_image(name, "x", x);
  ops::require_same_dtype(name, "x", x, "dy", dy);
  ops::require_dims(name, "dy", dy, pool_output(name, x.layout(), p));
  ops::require_like(name, "x", x, "dx", dx);
  if (dx.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  detail::launch(b, with_window(detail::args::nn_max_pool2d_grad<Tensor>{.x = x, .dy = dy, .dx = dx}, p), name);
}

void avg_pool2d_grad(const Backend& b, const Tensor& dy, Tensor& dx, const Pool2d& params) {
  constexpr std::string_view name = "nn::avg_pool2d_grad";
  const Pool2d p = resolved(params);
  require_image(name, "dx", dx);
  ops::require_same_dtype(name, "dx", dx, "dy", dy);
  ops::require_dims(name, "dy", dy, pool_output(name, dx.layout(), p));
  if (dx.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  detail::launch(b, with_window(detail::args::nn_avg_pool2d_grad<Tensor>{.dy = dy, .dx = dx}, p), name);
}

namespace {

// An [N, C, S] view as [N, C, S, 1]: the kernels' rank 4.
Tensor as4(const Tensor& t3) {
  const Layout& s = t3.layout();
  const std::int64_t dims[] = {s.dims()[0], s.dims()[1], s.dims()[2], 1};
  const std::int64_t strides[] = {s.strides()[0], s.strides()[1], s.strides()[2], 1};
  return t3.as_strided(Layout::strided(dims, strides, s.offset()));
}

// [N, C, ...] as [N, C, rest, 1].
Tensor channels4(const Backend& b, const Tensor& t) { return as4(ops::grouped3(b, t, t.layout(), 1, 2)); }

void require_lrn(std::string_view name, const Tensor& x, const Lrn& p) {
  ops::require_float(name, "x", x);
  if (x.rank() < 2)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": x has shape " + x.layout().dims_string() +
                                               "; expected [N, C, ...]");
  ops::require_argument(p.size >= 1, name, "size must be at least 1");
}

}  // namespace

void lrn(const Backend& b, const Tensor& x, Tensor& y, const Lrn& p) {
  constexpr std::string_view name = "nn::lrn";
  require_lrn(name, x, p);
  ops::require_like(name, "x", x, "y", y);
  if (x.numel() == 0) {
    ops::fill_output(b, name, y);
    return;
  }
  ops::GroupedOutput y3(b, y, y.layout(), 1, 2);
  detail::launch(b,
                 detail::args::nn_lrn<Tensor>{.x = channels4(b, x),
                                              .y = as4(y3.tensor()),
                                              .size = p.size,
                                              .alpha = p.alpha,
                                              .beta = p.beta,
                                              .k = p.k},
                 name);
  y3.finish();
}

void lrn_grad(const Backend& b, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, const Lrn& p) {
  constexpr std::string_view name = "nn::lrn_grad";
  require_lrn(name, x, p);
  ops::require_like(name, "x", x, "y", y);
  ops::require_like(name, "x", x, "dy", dy);
  ops::require_like(name, "x", x, "dx", dx);
  if (x.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  ops::GroupedOutput dx3(b, dx, dx.layout(), 1, 2);
  detail::launch(b,
                 detail::args::nn_lrn_grad<Tensor>{.x = channels4(b, x),
                                                   .y = channels4(b, y),
                                                   .dy = channels4(b, dy),
                                                   .dx = as4(dx3.tensor()),
                                                   .size = p.size,
                                                   .alpha = p.alpha,
                                                   .beta = p.beta,
                                                   .k = p.k},
                 name);
  dx3.finish();
}

Tensor conv2d(const Backend& b, const Tensor& x, const Tensor& w, const Conv2d& p) {
  constexpr std::string_view name = "nn::conv2d";
  require_image(name, "x", x);
  require_image(name, "w", w);
  Tensor y(conv_output(name, x.layout(), w.layout(), p), x.dtype());
  conv2d(b, x, w, y, p);
  return y;
}
Tensor conv2d_grad_data(const Backend& b, const Tensor& dy, const Tensor& w, const Layout& x_shape, const Conv2d& p) {
  ops::require_defined("nn::conv2d_grad_data", "dy", dy);
  Tensor dx(Layout(x_shape.dims()), dy.dtype());
  conv2d_grad_data(b, dy, w, dx, p);
  return dx;
}
Tensor conv2d_grad_filter(const Backend& b, const Tensor& x, const Tensor& dy, const Layout& w_shape,
                          const Conv2d& p) {
  ops::require_defined("nn::conv2d_grad_filter", "x", x);
  Tensor dw(Layout(w_shape.dims()), x.dtype());
  conv2d_grad_filter(b, x, dy, dw, p);
  return dw;
}

Tensor max_pool2d(const Backend& b, const Tensor& x, const Pool2d& p) {
  require_image("nn::max_pool2d", "x", x);
  Tensor y(pool2d_output_shape(x.layout(), p), x.dtype());
  max_pool2d(b, x, y, p);
  return y;
}
Tensor avg_pool2d(const Backend& b, const Tensor& x, const Pool2d& p) {
  require_image("nn::avg_pool2d", "x", x);
  Tensor y(pool2d_output_shape(x.layout(), p), x.dtype());
  avg_pool2d(b, x, y, p);
  return y;
}
Tensor max_pool2d_grad(const Backend& b, const Tensor& x, const Tensor& dy, const Pool2d& p) {
  Tensor dx = ops::new_like("nn::max_pool2d_grad", "x", x);
  max_pool2d_grad(b, x, dy, dx, p);
  return dx;
}
Tensor avg_pool2d_grad(const Backend& b, const Tensor& dy, const Layout& x_shape, const Pool2d& p) {
  ops::require_defined("nn::avg_pool2d_grad", "dy", dy);
  Tensor dx(Layout(x_shape.dims()), dy.dtype());
  avg_pool2d_grad(b, dy, dx, p);
  return dx;
}

Tensor lrn(const Backend& b, const Tensor& x, const Lrn& p) {
  Tensor y = ops::new_like("nn::lrn", "x", x);
  lrn(b, x, y, p);
  return y;
}
Tensor lrn_grad(const Backend& b, const Tensor& x, const Tensor& y, const Tensor& dy, const Lrn& p) {
  Tensor dx = ops::new_like("nn::lrn_grad", "x", x);
  lrn_grad(b, x, y, dy, dx, p);
  return dx;
}

}  // namespace xylem::nn
