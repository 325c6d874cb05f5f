#pragma once
// nn::rnn_sequence and its gradients on the host (rnn_onednn.cpp): whole
// LSTM / GRU stacks through oneDNN's RNN primitives, f32, where the build
// found oneDNN. Called from register_rnn (rnn.cpp).
#include "frameworks/native/ops/kernels.hpp"

namespace xylem::native {

// Fills the four rnn_sequence slots for f32 (nothing without oneDNN).
void register_rnn_sequence(KernelTable& table);

}  // namespace xylem::native
