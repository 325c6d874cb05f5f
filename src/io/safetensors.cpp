#include "xylem/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "io/file.hpp"
#include "io/safetensors_header.hpp"

namespace xylem {

// The format is little-endian; tensors' bytes go to and from the file as
// they are in memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

struct Checked {
  std::uint64_t header_bytes;
  io::SafetensorsHeader header;
};

// Reads and checks everything but the tensors' bytes.
Checked read_header(const io::InputFile& file, const std::string& source) {
  if (file.size() < 8)
    throw Error(ErrorCode::io, source + ": truncated: " + std::to_string(file.size()) +
                                   " bytes, fewer than the 8 of the header length");
  unsigned char length[8];
  file.read_at(0, length, 8);
  std::uint64_t n = 0;
  std::memcpy(&n, length, 8);
  if (n > io::kMaxSafetensorsHeader)
    throw Error(ErrorCode::invalid_argument, source + ": the header length at byte 0 is " + std::to_string(n) +
                                                 ", over the format's limit of " +
                                                 std::to_string(io::kMaxSafetensorsHeader) + " bytes");
  if (n > file.size() - 8)
    throw Error(ErrorCode::io, source + ": truncated: the header length at byte 0 is " + std::to_string(n) +
                                   " but only " + std::to_string(file.size() - 8) + " bytes follow");
  std::string json(n, '\0');
  file.read_at(8, json.data(), n);
  return Checked{n, io::parse_safetensors_header(json, file.size() - 8 - n, source)};
}

}  // namespace

std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path) {
  const std::string source = "load_safetensors: " + path.string();
  const io::InputFile file(path, source);
  const Checked checked = read_header(file, source);
  std::map<std::string, Tensor> out;
  std::vector<unsigned char> bytes;
  for (const io::SafetensorsEntry& e : checked.header.tensors) {
    bytes.resize(e.end - e.begin);
    file.read_at(8 + checked.header_bytes + e.begin, bytes.data(), bytes.size());
    out.emplace(e.name, Tensor::from_bytes(bytes.data(), bytes.size(), Layout(std::span(e.shape)), e.dtype));
  }
  return out;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::filesystem::path& path) {
  const std::string source = "load_safetensors_metadata: " + path.string();
  return read_header(io::InputFile(path, source), source).header.metadata;
}

void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string source = "save_safetensors: " + path.string();
  struct Item {
    io::SafetensorsEntry entry;
    const Tensor* tensor;
  };
  std::vector<Item> items;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw Error(ErrorCode::invalid_argument,
                  source + ": \"__metadata__\" is the format's reserved name, not a tensor's");
    if (!t.defined()) throw Error(ErrorCode::invalid_argument, source + ": tensor \"" + name + "\" is an empty handle");
    if (is_complex(t.dtype()))
      throw Error(ErrorCode::dtype_mismatch, source + ": tensor \"" + name + "\" is " + std::string(xylem::name(t.dtype())) +
                                                 ", which safetensors files do not hold; save its real and "
                                                 "imaginary parts as two tensors");
    io::SafetensorsEntry e;
    e.name = name;
    e.dtype = t.dtype();
    e.shape.assign(t.shape().begin(), t.shape().end());
    items.push_back({std::move(e), &t});
  }
  // Hugging Face's order: larger element types first, then by name (the
  // map's order, kept by the stable sort).
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return io::safetensors_layout_rank(a.entry.dtype) > io::safetensors_layout_rank(b.entry.dtype);
  });
  std::uint64_t offset = 0;
  std::vector<io::SafetensorsEntry> entries;
  for (Item& item : items) {
    item.entry.begin = offset;
    offset += static_cast<std::uint64_t>(item.tensor->numel()) * size_of(item.entry.dtype);
    item.entry.end = offset;
    entries.push_back(item.entry);
  }
  const std::string header = io::format_safetensors_header(entries, metadata);

  io::AtomicFile file(path, source);
  const std::uint64_t length = header.size();
  file.write(&length, 8);
  file.write(header.data(), header.size());
  for (const Item& item : items) {
    // No elements, no bytes: nothing to read, even from a tensor never written.
    if (item.tensor->numel() == 0) continue;
    // One tensor on the host at a time: a model larger than memory twice
    // over still saves.
    const std::vector<unsigned char> bytes = item.tensor->read_bytes().get();
    file.write(bytes.data(), bytes.size());
  }
  file.commit();
}

}  // namespace xylem
