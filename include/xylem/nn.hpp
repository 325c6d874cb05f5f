#pragma once
// xylem::nn: neural-network operations on any backend. f32 and f64.
// Outputs must have the input's shape and dtype; they may be the input
// itself (in place).
#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem::nn {

void sigmoid(const Backend& b, const Tensor& x, Tensor& y);
void relu(const Backend& b, const Tensor& x, Tensor& y);
void tanh(const Backend& b, const Tensor& x, Tensor& y);

// Gradients: dx from the forward output y (sigmoid, tanh) or input x (relu)
// and the incoming gradient dy.
void sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx);
void relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);
void tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx);

}  // namespace xylem::nn
