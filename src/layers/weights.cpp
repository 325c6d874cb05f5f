// A layer's weights by name: state_dict, load_state_dict and their files.
#include "xylem/weights.hpp"

#include <string_view>
#include <utility>
#include <vector>

#include "xylem/safetensors.hpp"

namespace xylem::layers {
namespace {

// A parameter's or buffer's value slot, by name.
struct Slot {
  Tensor* value;
  bool may_be_absent;
};

std::map<std::string, Slot> slots(Layer& layer) {
  std::map<std::string, Slot> all;
  for (Parameter* p : layer.parameters()) all.emplace(p->name, Slot{&p->value, false});
  for (Buffer* buffer : layer.buffers()) all.emplace(buffer->name, Slot{&buffer->value, buffer->may_be_absent});
  return all;
}

[[noreturn]] void refuse(ErrorCode code, std::string_view name, const std::string& why) {
  throw Error(code, "load_state_dict: '" + std::string(name) + "' " + why);
}

}  // namespace

std::map<std::string, Tensor> state_dict(Layer& layer) {
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, slot] : slots(layer)) tensors.emplace(name, *slot.value);
  return tensors;
}

void load_state_dict(Layer& layer, const std::map<std::string, Tensor>& tensors) {
  const std::map<std::string, Slot> wanted = slots(layer);
  for (const auto& [name, t] : tensors)
    if (!wanted.contains(name)) refuse(ErrorCode::invalid_argument, name, "is not a parameter or buffer of the layer");
  std::vector<std::pair<Tensor*, Tensor>> assignments;
  for (const auto& [name, slot] : wanted) {
    const auto given = tensors.find(name);
    if (given == tensors.end()) {
      if (slot.may_be_absent) continue;
      refuse(ErrorCode::invalid_argument, name, "is missing");
    }
    const Tensor& t = given->second;
    if (!t.defined()) refuse(ErrorCode::invalid_argument, name, "is an empty Tensor handle");
    if (!t.layout().same_dims(slot.value->layout()))
      refuse(ErrorCode::shape_mismatch, name,
             "is " + t.layout().dims_string() + "; the layer's is " + slot.value->layout().dims_string());
    if (t.dtype() != slot.value->dtype())
      refuse(ErrorCode::dtype_mismatch, name,
             "is " + std::string(xylem::name(t.dtype())) + "; the layer's is " +
                 std::string(xylem::name(slot.value->dtype())));
    assignments.emplace_back(slot.value, t);
  }
  for (auto& [value, t] : assignments) *value = std::move(t);
}

void save_weights(const std::filesystem::path& path, Layer& layer) {
  save_safetensors(path, state_dict(layer), {{"format", "pt"}});
}

void load_weights(const std::filesystem::path& path, Layer& layer) {
  const std::map<std::string, Tensor> tensors = load_safetensors(path);
  try {
    load_state_dict(layer, tensors);
  } catch (const Error& e) {
    throw Error(e.code(), path.string() + ": " + e.message());
  }
}

}  // namespace xylem::layers
