#pragma once
// The DLPack ABI (dlpack.h of dmlc/dlpack, version 1.x): the structs a
// capsule carries between array libraries. Declared here and used
// directly rather than through nb::ndarray: nanobind keeps its versioned
// struct private (and older nanobinds lack it), and its export cannot
// order the consumer's CUDA stream after xylem's queue, which
// __dlpack__(stream=...) must.
#include <cstdint>

namespace xylem::python::dlpack {

enum DeviceType : std::int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum TypeCode : std::uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

struct Device {
  std::int32_t device_type;
  std::int32_t device_id;
};

struct DataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null: compact row-major
  std::uint64_t byte_offset;
};

// The legacy struct, in a capsule named "dltensor".
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

struct Version {
  std::uint32_t major;
  std::uint32_t minor;
};

inline constexpr std::uint64_t kFlagReadOnly = 1ULL << 0;
inline constexpr std::uint64_t kFlagIsCopied = 1ULL << 1;

// DLPack 1.x's struct, in a capsule named "dltensor_versioned".
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;
  Tensor dl_tensor;
};

}  // namespace xylem::python::dlpack
