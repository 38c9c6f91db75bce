// SPDX-License-Identifier: Apache-2.0
#include "adapter/xla/xla_lowering.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
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

class TableCallKernel : public tensorflow::XlaOpKernel {
 public:
  TableCallKernel(tensorflow::OpKernelConstruction* ctx, const Form& form)
      : XlaOpKernel(ctx), lowering_(*form.lowering), from_(form.from) {
    if (from_ != TableFrom::kAttr) return;
    const char* attr = lowering_.table_attr;
    if (lowering_.int32_table) {
      OP_REQUIRES_OK(ctx,
                     ReadAttrTable(ctx, attr, lowering_.max_table, &ints_, lowering_.min_table));
      return;
    }
    tensorflow::DataType dtype;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("T", &dtype));
    double_table_ = dtype == tensorflow::DT_DOUBLE;  // float for float32 and uint8 data
    if (!double_table_) {
      OP_REQUIRES_OK(ctx,
                     ReadAttrTable(ctx, attr, lowering_.max_table, &floats_, lowering_.min_table));
    } else {
      OP_REQUIRES_OK(ctx,
                     ReadAttrTable(ctx, attr, lowering_.max_table, &doubles_, lowering_.min_table));
    }
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    xla::XlaBuilder* builder = ctx->builder();
    xla::XlaOp table;
    std::int64_t size = 0;
    if (from_ == TableFrom::kAttr) {
      if (lowering_.int32_table) {
        table = xla::ConstantR1<std::int32_t>(builder, ints_);
        size = static_cast<std::int64_t>(ints_.size());
      } else if (!double_table_) {
        table = xla::ConstantR1<float>(builder, floats_);
        size = static_cast<std::int64_t>(floats_.size());
      } else {
        table = xla::ConstantR1<double>(builder, doubles_);
        size = static_cast<std::int64_t>(doubles_.size());
      }
    } else {
      const absl::StatusOr<xla::Shape> shape = ctx->InputXlaShape(1);
      OP_REQUIRES_OK(ctx, shape.status());
      OP_REQUIRES(ctx, shape->dimensions().size() == 1,
                  absl::InvalidArgumentError(std::string(lowering_.table_attr) +
                                             " must be a vector, got shape " + shape->ToString()));
      size = shape->dimensions(0);
      table = ctx->Input(1);
    }
    OP_REQUIRES_OK(ctx, ValidateTableSize(size, lowering_.table_attr, lowering_.max_table,
                                          lowering_.min_table));
    std::vector<std::int64_t> dims = DataDims(ctx);
    std::string attributes;
    OP_REQUIRES_OK(ctx, lowering_.describe(ctx->op_kernel().def(), ctx->input_type(0), size, &dims,
                                           &attributes));
    // A custom call takes static shapes. Dimensions XLA marks dynamic (their size known only when
    // the program runs) are passed at their bound and marked again on the result, where each
    // element depends on its own position only; a dynamic table or row is refused.
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
      dynamic.push_back(d);
      data = xla::RemoveDynamicDimension(data, d);
    }
    if (from_ != TableFrom::kAttr) {
      const absl::StatusOr<xla::Shape> table_shape = ctx->InputXlaShape(1);
      OP_REQUIRES_OK(ctx, table_shape.status());
      OP_REQUIRES(
          ctx, table_shape->is_static(),
          absl::UnimplementedError(lowering_.op + " under XLA needs a table of static size"));
    }
    const xla::Shape result = xla::ShapeUtil::MakeShape(ctx->input_xla_type(0), dims);
    xla::XlaOp output = xla::CustomCall(
        builder, lowering_.target, {data, table}, result, attributes,
        /*has_side_effect=*/false,
        /*output_operand_aliasing=*/{}, /*literal=*/nullptr, xla::CustomCallSchedule::SCHEDULE_NONE,
        xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    for (std::int64_t d : dynamic) {
      output = xla::SetDimensionSize(output, xla::GetDimensionSize(ctx->Input(0), d), d);
    }
    ctx->SetOutput(0, output);
  }

 private:
  const XlaLowering& lowering_;
  TableFrom from_;
  bool double_table_ = false;
  std::vector<std::int32_t> ints_;
  std::vector<float> floats_;
  std::vector<double> doubles_;
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
  RegisterHandler(*kept, "Host", kept->host_handler);
  RegisterHandler(*kept, "CUDA", kept->cuda_handler);
  return true;
}

}  // namespace tf_adapter
}  // namespace constmem
