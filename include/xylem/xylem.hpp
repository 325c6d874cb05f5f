#pragma once
/// @file
/// Everything a user needs: `#include <xylem/xylem.hpp>`

/// @namespace xylem
/// Tensors, backends and their operations. Start with Backend::best(),
/// Tensor::from() and the operations of xylem::nn, xylem::blas and math.hpp.

/// @namespace xylem::blas
/// BLAS levels 1 to 3 (OpenBLAS on the host, CLBlast on OpenCL, cuBLAS on CUDA).

/// @namespace xylem::nn
/// Neural-network operations and their gradients.

/// @namespace xylem::data
/// Data sets from files: IDX (MNIST, Fashion-MNIST); batches for training.
#include "xylem/backend.hpp"
#include "xylem/blas.hpp"
#include "xylem/capture.hpp"
#include "xylem/corpus.hpp"
#include "xylem/creation.hpp"
#include "xylem/data.hpp"
#include "xylem/data_parallel.hpp"
#include "xylem/dist.hpp"
#include "xylem/dtype.hpp"
#include "xylem/error.hpp"
#include "xylem/fft.hpp"
#include "xylem/fused.hpp"
#include "xylem/future.hpp"
#include "xylem/hardware.hpp"
#include "xylem/index.hpp"
#include "xylem/interop.hpp"
#include "xylem/math.hpp"
#include "xylem/models.hpp"
#include "xylem/nn.hpp"
#include "xylem/attention.hpp"
#include "xylem/layers.hpp"
#include "xylem/optim.hpp"
#include "xylem/rnn.hpp"
#include "xylem/rnn_sequence.hpp"
#include "xylem/layout.hpp"
#include "xylem/loader.hpp"
#include "xylem/losses.hpp"
#include "xylem/safetensors.hpp"
#include "xylem/shaping.hpp"
#include "xylem/tensor.hpp"
#include "xylem/weights.hpp"
