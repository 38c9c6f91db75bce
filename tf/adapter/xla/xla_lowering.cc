// SPDX-License-Identifier: Apache-2.0
#include "adapter/xla/xla_lowering.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/platform/logging.h"
#include "xla/ffi/api/ffi.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/shape_util.h"

namespace constmem {
namespace tf_adapter {
namespace {

namespace ffi = ::xla::ffi;

// The custom call's result dimensions before the op's describe: the data's.
std::vector<std::int64_t> DataDims(tensorflow::XlaOpKernelContext* ctx) {
  const absl::StatusOr<xla::Shape> shape = ctx->InputXlaShape(0);
  if (!shape.ok()) return {};
  return std::vector<std::int64_t>(shape->dimensions().begin(), shape->dimensions().end());
}

struct Form {
  const XlaLowering* lowering;
  TableFrom from;
};

// tf2xla takes a plain function as a kernel factory: it finds its lowering by the node's op.
std::map<std::string, Form>& Forms() {
  static auto* forms = new std::map<std::string, Form>();
  return *forms;
}
std::mutex& FormsMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

// An attr table's values, read when the kernel is built: int32 entries, or those of the data's
// compute type (float for float32 and uint8 data).
struct AttrTable {
  std::vector<std::int32_t> ints;
  std::vector<float> floats;
  std::vector<double> doubles;
};

class TableCallKernel : public tensorflow::XlaOpKernel {
 public:
  TableCallKernel(tensorflow::OpKernelConstruction* ctx, const Form& form)
      : XlaOpKernel(ctx), lowering_(*form.lowering), from_(form.from) {
    if (from_ != TableFrom::kAttr) return;
    tensorflow::DataType dtype;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("T", &dtype));
    double_tables_ = ComputesInDouble(dtype);
    attr_tables_.resize(lowering_.tables.size());
    for (std::size_t i = 0; i < lowering_.tables.size(); ++i) {
      const TableSpec& spec = lowering_.tables[i];
      AttrTable& table = attr_tables_[i];
      if (spec.int32) {
        OP_REQUIRES_OK(ctx,
                       ReadAttrTable(ctx, spec.name, spec.max_size, &table.ints, spec.min_size));
      } else if (!double_tables_) {
        OP_REQUIRES_OK(ctx,
                       ReadAttrTable(ctx, spec.name, spec.max_size, &table.floats, spec.min_size));
      } else {
        OP_REQUIRES_OK(ctx,
                       ReadAttrTable(ctx, spec.name, spec.max_size, &table.doubles, spec.min_size));
      }
    }
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    xla::XlaBuilder* builder = ctx->builder();
    // The operands: the data (below), then each table in order.
    std::vector<xla::XlaOp> operands(1 + lowering_.tables.size());
    TableSizes sizes;
    sizes.count = static_cast<int>(lowering_.tables.size());
    for (int i = 0; i < sizes.count; ++i) {
      const TableSpec& spec = lowering_.tables[i];
      std::int64_t size = 0;
      if (from_ == TableFrom::kAttr) {
        const AttrTable& table = attr_tables_[i];
        if (spec.int32) {
          operands[1 + i] = xla::ConstantR1<std::int32_t>(builder, table.ints);
          size = static_cast<std::int64_t>(table.ints.size());
        } else if (!double_tables_) {
          operands[1 + i] = xla::ConstantR1<float>(builder, table.floats);
          size = static_cast<std::int64_t>(table.floats.size());
        } else {
          operands[1 + i] = xla::ConstantR1<double>(builder, table.doubles);
          size = static_cast<std::int64_t>(table.doubles.size());
        }
      } else {
        const absl::StatusOr<xla::Shape> shape = ctx->InputXlaShape(1 + i);
        OP_REQUIRES_OK(ctx, shape.status());
        OP_REQUIRES(
            ctx, shape->dimensions().size() == 1,
            absl::InvalidArgumentError(std::string(spec.name) + " must be a vector, got shape " +
                                       shape->ToString()));
        // A custom call takes static shapes.
        OP_REQUIRES(ctx, shape->is_static(),
                    absl::UnimplementedError(lowering_.op + " under XLA needs " + spec.name +
                                             " of static size"));
        size = shape->dimensions(0);
        operands[1 + i] = ctx->Input(1 + i);
      }
      OP_REQUIRES_OK(ctx, ValidateTableSize(size, spec.name, spec.max_size, spec.min_size));
      sizes.size[i] = size;
    }
    std::vector<std::vector<std::int64_t>> dims;
    std::string attributes;
    OP_REQUIRES_OK(ctx, lowering_.describe(ctx->op_kernel().def(), ctx->input_type(0), sizes,
                                           DataDims(ctx), &dims, &attributes));
    // Dimensions XLA marks dynamic (their size known only when the program runs) are passed at
    // their bound and marked again on the result, where each element depends on its own position
    // only; a dynamic row is refused.
    const absl::StatusOr<xla::Shape> data_shape = ctx->InputXlaShape(0);
    OP_REQUIRES_OK(ctx, data_shape.status());
    xla::XlaOp data = ctx->Input(0);
    std::vector<std::int64_t> dynamic;
    const auto rank = static_cast<std::int64_t>(data_shape->dimensions().size());
    for (std::int64_t d = 0; d < rank; ++d) {
      if (!data_shape->is_dynamic_dimension(d)) continue;
      OP_REQUIRES(
          ctx, lowering_.elementwise || d + 1 != rank,
          absl::UnimplementedError(lowering_.op + " under XLA needs rows of static length"));
      // Several outputs' dimensions need not follow the data's.
      OP_REQUIRES(
          ctx, dims.size() == 1,
          absl::UnimplementedError(lowering_.op + " under XLA needs data of static shape (it gives "
                                                  "several outputs)"));
      dynamic.push_back(d);
      data = xla::RemoveDynamicDimension(data, d);
    }
    operands[0] = data;
    // One result, or a tuple of several (the FFI handler gets each as a result buffer).
    std::vector<xla::Shape> results;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      results.push_back(
          xla::ShapeUtil::MakeShape(ctx->output_xla_type(static_cast<int>(i)), dims[i]));
    }
    const xla::Shape result =
        results.size() == 1 ? results[0] : xla::ShapeUtil::MakeTupleShape(results);
    xla::XlaOp call = xla::CustomCall(builder, lowering_.target, operands, result, attributes,
                                      /*has_side_effect=*/false,
                                      /*output_operand_aliasing=*/{}, /*literal=*/nullptr,
                                      xla::CustomCallSchedule::SCHEDULE_NONE,
                                      xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    if (results.size() > 1) {
      for (std::size_t i = 0; i < results.size(); ++i) {
        ctx->SetOutput(static_cast<int>(i),
                       xla::GetTupleElement(call, static_cast<std::int64_t>(i)));
      }
      return;
    }
    for (std::int64_t d : dynamic) {
      call = xla::SetDimensionSize(call, xla::GetDimensionSize(ctx->Input(0), d), d);
    }
    ctx->SetOutput(0, call);
  }

 private:
  const XlaLowering& lowering_;
  TableFrom from_;
  bool double_tables_ = false;
  std::vector<AttrTable> attr_tables_;
};

tensorflow::OpKernel* MakeTableCallKernel(tensorflow::OpKernelConstruction* ctx) {
  Form form;
  {
    std::lock_guard<std::mutex> lock(FormsMutex());
    form = Forms().at(ctx->def().op());
  }
  return new TableCallKernel(ctx, form);
}

void RegisterHandler(const XlaLowering& lowering, const char* platform, XLA_FFI_Handler* handler) {
  if (handler == nullptr) return;
  XLA_FFI_Error* error =
      ffi::Ffi::RegisterStaticHandler(XLA_FFI_GetApi(), lowering.target, platform, handler);
  if (error != nullptr) {
    LOG(WARNING) << "constmem: XLA did not take the handler " << lowering.target << " for "
                 << platform;
  }
}

// Whether tf2xla has made the kernels of its registered ops on the compilation devices
// (XlaOpRegistry::RegisterCompilationKernels, once per process, when TensorFlow first sets up XLA):
// an op registered after that has none unless it makes its own. Identity is one of tf2xla's.
bool CompilationKernelsMade() {
  const tensorflow::KernelList kernels = tensorflow::GetRegisteredKernelsForOp("Identity");
  const std::vector<std::string> backends = tensorflow::XlaOpRegistry::BackendNames();
  for (const tensorflow::KernelDef& kernel : kernels.kernel()) {
    if (std::find(backends.begin(), backends.end(), kernel.device_type()) != backends.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool RegisterXlaLowering(const XlaLowering& lowering) {
  const std::vector<std::string> registered = tensorflow::XlaOpRegistry::GetAllRegisteredOps();
  if (std::find(registered.begin(), registered.end(), lowering.op) != registered.end()) {
    LOG(WARNING) << "constmem: the XLA lowering of " << lowering.op
                 << " is registered by another copy of the op library; this copy adds none";
    return false;
  }
  const XlaLowering* kept = new XlaLowering(lowering);  // the kernels refer to it for good
  for (const auto& [suffix, from] : {std::pair<const char*, TableFrom>{"", TableFrom::kInput},
                                     {"HostTable", TableFrom::kInput},
                                     {"Attr", TableFrom::kAttr}}) {
    const std::string name = kept->op + suffix;
    {
      std::lock_guard<std::mutex> lock(FormsMutex());
      Forms()[name] = Form{kept, from};
    }
    new tensorflow::XlaOpRegistrar(
        tensorflow::XlaOpRegistrationBuilder::Name(name).Build(MakeTableCallKernel));
  }
  // A library loaded after TensorFlow set up XLA (load_library once devices are listed) registers
  // its forms' kernels on each compilation device itself, as tf2xla would have.
  if (CompilationKernelsMade()) {
    for (const std::string& backend : tensorflow::XlaOpRegistry::BackendNames()) {
      for (const char* suffix : {"", "HostTable", "Attr"}) {
        const std::string name = kept->op + suffix;
        tensorflow::KernelDefBuilder builder(name.c_str());
        builder.Device(backend.c_str());
        new tensorflow::kernel_factory::OpKernelRegistrar(builder.Build(), "XlaJitOp",
                                                          MakeTableCallKernel);
      }
    }
  }
  RegisterHandler(*kept, "Host", kept->host_handler);
  RegisterHandler(*kept, "CUDA", kept->cuda_handler);
  return true;
}

}  // namespace tf_adapter
}  // namespace constmem
