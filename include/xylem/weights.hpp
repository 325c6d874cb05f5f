#pragma once
/// @file
/// A layer's weights by name, to and from memory and safetensors files, with
/// the names, shapes and dtypes PyTorch's state_dict has for the same network
/// ("0.weight", "1.running_mean", "1.num_batches_tracked", ...): a file one
/// writes, the other loads.
#include <filesystem>
#include <map>
#include <string>

#include "xylem/layers.hpp"
#include "xylem/tensor.hpp"

namespace xylem::layers {

/// Every parameter's and buffer's value by its name (handles, not copies).
[[nodiscard]] std::map<std::string, Tensor> state_dict(Layer& layer);

/// Makes `tensors` the values of the layer's parameters and buffers: the
/// layer takes the handles (a loaded file's host tensors move to a device at
/// their first use there). Every name must be one of the layer's, and every
/// parameter and buffer must be present, except a buffer that may be absent
/// (which then keeps its value). Raises, naming the tensor, before anything
/// changes: invalid_argument for an unknown or missing name or an empty
/// handle, shape_mismatch for other dims, dtype_mismatch for another dtype.
void load_state_dict(Layer& layer, const std::map<std::string, Tensor>& tensors);

/// Writes state_dict(layer) as safetensors (metadata "format": "pt", as
/// PyTorch's safetensors writes a state dict).
void save_weights(const std::filesystem::path& path, Layer& layer);

/// load_state_dict of the file's tensors; raises what load_safetensors and
/// load_state_dict raise, each message naming the file.
void load_weights(const std::filesystem::path& path, Layer& layer);

}  // namespace xylem::layers
