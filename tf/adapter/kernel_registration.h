// SPDX-License-Identifier: Apache-2.0
// Kernel registration that survives a second copy of the op library in one process.
//
// TensorFlow keeps one kernel registry per process. Loading the same op library again from
// another path (a pip install and a local build, say) would register every kernel a second time,
// and from then on every node of the op fails with "Multiple OpKernel registrations match
// NodeDef". The op definitions are harmless (TensorFlow keeps the first), so a copy that finds
// its kernels already registered registers none and leaves the first copy in charge.
//
//   CONSTMEM_REGISTER_KERNELS("Constmem>MyOp", {
//     constmem::tf_adapter::RegisterKernel<MyCpuKernel<float>>(
//         Name("Constmem>MyOp").Device(tensorflow::DEVICE_CPU).TypeConstraint<float>("T"));
//   });
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "adapter/table_adapter.h"
#include "constmem/numeric.hpp"
#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/types.h"

namespace constmem {
namespace tf_adapter {

// True when kernels of `op_name` are already registered in this process (by another copy of the
// library); logs once which copy is skipped.
bool KernelsAlreadyRegistered(const char* op_name);

template <class Kernel>
void RegisterKernel(tensorflow::KernelDefBuilder& builder) {
  // The registrar only has to run; like TensorFlow's static registrars it lives for the process.
  new tensorflow::kernel_factory::OpKernelRegistrar(
      builder.Build(), "constmem",
      [](tensorflow::OpKernelConstruction* ctx) -> tensorflow::OpKernel* {
        return new Kernel(ctx);
      });
}
// TensorFlow's DataType of C++ element type T.
template <class T>
constexpr tensorflow::DataType TfDataTypeOf() {
  constexpr tensorflow::DataType kTypes[] = {
      tensorflow::DT_FLOAT, tensorflow::DT_DOUBLE, tensorflow::DT_HALF, tensorflow::DT_BFLOAT16,
      tensorflow::DT_UINT8, tensorflow::DT_INT8,   tensorflow::DT_INT32};
  return kTypes[static_cast<int>(DataTypeOf<T>())];
}

// TensorFlow's DataType of a DataType.
inline tensorflow::DataType TfDataType(DataType type) {
  constexpr tensorflow::DataType kTypes[] = {
      tensorflow::DT_FLOAT, tensorflow::DT_DOUBLE, tensorflow::DT_HALF, tensorflow::DT_BFLOAT16,
      tensorflow::DT_UINT8, tensorflow::DT_INT8,   tensorflow::DT_INT32};
  return kTypes[static_cast<int>(type)];
}

// A TensorFlow DataType as a DataType (float32 for one no op takes: an op definition's type
// attrs allow only the op's types).
inline DataType ToDataType(tensorflow::DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_DOUBLE:
      return DataType::kFloat64;
    case tensorflow::DT_HALF:
      return DataType::kFloat16;
    case tensorflow::DT_BFLOAT16:
      return DataType::kBFloat16;
    case tensorflow::DT_UINT8:
      return DataType::kUint8;
    case tensorflow::DT_INT8:
      return DataType::kInt8;
    case tensorflow::DT_INT32:
      return DataType::kInt32;
    default:
      return DataType::kFloat32;
  }
}

// Whether data of `dtype` is computed in float64, its tables float64 (ComputeTypeOf).
inline bool ComputesInDouble(tensorflow::DataType dtype) {
  return dtype == tensorflow::DT_DOUBLE || dtype == tensorflow::DT_INT32;
}

template <class Kernel>
void RegisterKernel(tensorflow::KernelDefBuilder&& builder) {
  RegisterKernel<Kernel>(builder);
}

// The kernels of an op's three table forms on `device`, for data type T (attr "T"; TableOp's
// kernels, adapter/table_op.h):
//   <op>           the tables are ordinary inputs            Kernel<T, TableFrom::kInput>
//   <op>HostTable  the same, the tables in host memory       Kernel<T, TableFrom::kInput>
//   <op>Attr       the tables are attrs                      Kernel<T, TableFrom::kAttr>
// `table_inputs` names the table inputs (one, or each of an op's several). Table, unless void, is
// the type of the table inputs not of int32, constrained by the attr "Ttable" of the input forms
// (ops that take uint8 data: their table's type is not the data's).
template <template <class, TableFrom> class Kernel, class T, class Table = void>
void RegisterTableFormKernels(const std::string& op, const char* device,
                              const std::vector<const char*>& table_inputs) {
  auto builder = [&](const std::string& name) {
    tensorflow::KernelDefBuilder* def = new tensorflow::KernelDefBuilder(name.c_str());
    def->Device(device);
    def->TypeConstraint("T", TfDataTypeOf<T>());
    return def;
  };
  auto table_type = [](tensorflow::KernelDefBuilder* def) {
    if constexpr (!std::is_void<Table>::value) def->TypeConstraint<Table>("Ttable");
    return def;
  };
  std::unique_ptr<tensorflow::KernelDefBuilder> input(table_type(builder(op)));
  RegisterKernel<Kernel<T, TableFrom::kInput>>(*input);
  std::unique_ptr<tensorflow::KernelDefBuilder> host(table_type(builder(op + "HostTable")));
  if (std::string(device) != tensorflow::DEVICE_CPU) {
    for (const char* table : table_inputs) host->HostMemory(table);
  }
  RegisterKernel<Kernel<T, TableFrom::kInput>>(*host);
  std::unique_ptr<tensorflow::KernelDefBuilder> attr(builder(op + "Attr"));
  RegisterKernel<Kernel<T, TableFrom::kAttr>>(*attr);
}
template <template <class, TableFrom> class Kernel, class T, class Table = void>
void RegisterTableFormKernels(const std::string& op, const char* device, const char* table_input) {
  RegisterTableFormKernels<Kernel, T, Table>(op, device, std::vector<const char*>{table_input});
}

}  // namespace tf_adapter
}  // namespace constmem

#define CONSTMEM_REGISTER_KERNELS_CONCAT(a, b) a##b
#define CONSTMEM_REGISTER_KERNELS_NAME(unique) \
  CONSTMEM_REGISTER_KERNELS_CONCAT(constmem_kernels_, unique)
// Runs `body` (RegisterKernel calls) at load unless `op_name`'s kernels are registered already.
#define CONSTMEM_REGISTER_KERNELS(op_name, ...)                                         \
  [[maybe_unused]] static const bool CONSTMEM_REGISTER_KERNELS_NAME(__COUNTER__) = [] { \
    using ::tensorflow::register_kernel::Name;                                          \
    if (::constmem::tf_adapter::KernelsAlreadyRegistered(op_name)) return false;        \
    __VA_ARGS__;                                                                        \
    return true;                                                                        \
  }()
