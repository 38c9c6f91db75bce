// SPDX-License-Identifier: Apache-2.0
// A fuzzer of an op library's C entry points, driven as a direct caller would drive them, with no
// framework in between: the XLA FFI handlers that constmem_ffi_handler hands out (the CPU ones,
// called with call frames built here against XLA's FFI C API, buffers of any dtype and shape,
// attributes of any kind and value, frames of the wrong arity), and the op registry's
// constmem_op_registry_check_call and constmem_op_registry_table_placement (null pointers,
// negative counts, overflowing shapes, out-of-range floats and ints).
//
//   entry_fuzz [--seed S] [--count N]
//
// Every call must end in a result or a clean error (an FFI error of kind InvalidArgument or
// ResourceExhausted with a message; check_call's 0 or 1 with a message), with AddressSanitizer
// and UndefinedBehaviorSanitizer watching (scripts/sanitize.sh builds it so). A call whose
// buffers are too large to allocate here is given one it must refuse, and its refusal is checked.
// After every batch of bad calls a known-good call is checked against the arithmetic done here.
// Prints one summary line; exits 1 when anything was found.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "constmem/op_description.hpp"
#include "constmem_ops.h"
#include "xla/ffi/api/c_api.h"

extern "C" void* constmem_ffi_handler(const char* target, const char* platform);
extern "C" int constmem_op_registry_check_call(const char* name, const char* dtype,
                                               const long long* dims, int rank,
                                               const long long* table_sizes, int table_count,
                                               const char* const* choices, const double* floats,
                                               const long long* ints, long long* y_dims,
                                               int* y_rank, char* error, int error_size);
extern "C" const char* constmem_op_registry_table_placement(const char* name, int table,
                                                            const char* dtype, long long count,
                                                            int source, long long elements);

namespace {

using constmem::AttrKind;
using constmem::AttrSpec;
using constmem::Dims;
using constmem::TableSpec;

// An op as its description declares it: what the fuzzer needs to call it well or badly.
struct OpInfo {
  std::string library;
  std::string name;
  std::vector<TableSpec> tables;
  std::vector<AttrSpec> attrs;
  std::vector<XLA_FFI_DataType> types;  // the data types the op takes
};

template <class... Ops>
std::vector<OpInfo> OpsOf() {
  std::vector<OpInfo> ops;
  auto one = [&](auto* op) {
    using Op = std::remove_pointer_t<decltype(op)>;
    OpInfo info{Op::kNames.library, Op::kNames.name, {}, {}, {}};
    constexpr XLA_FFI_DataType kTypes[] = {
        XLA_FFI_DataType_F32, XLA_FFI_DataType_F64, XLA_FFI_DataType_F16, XLA_FFI_DataType_BF16,
        XLA_FFI_DataType_U8,  XLA_FFI_DataType_S8,  XLA_FFI_DataType_S32};  // in DataType's order
    constmem::ForEachDataTypeOf<Op>([&](auto zero) {
      info.types.push_back(kTypes[static_cast<int>(constmem::DataTypeOf<decltype(zero)>())]);
    });
    for (int i = 0; i < constmem::TableCountOf<Op>(); ++i) {
      info.tables.push_back(constmem::TableSpecOf<Op>(i));
    }
    for (int i = 0; i < Op::kAttrCount; ++i) info.attrs.push_back(Op::kAttrs[i]);
    ops.push_back(info);
  };
  (one(static_cast<Ops*>(nullptr)), ...);
  return ops;
}

// The FFI API as far as a CPU handler uses it: errors.
struct FakeError {
  XLA_FFI_Error_Code code;
  std::string message;
};
XLA_FFI_Error* ErrorCreate(XLA_FFI_Error_Create_Args* args) {
  return reinterpret_cast<XLA_FFI_Error*>(
      new FakeError{args->errc, args->message != nullptr ? args->message : ""});
}
void ErrorGetMessage(XLA_FFI_Error_GetMessage_Args* args) {
  args->message = reinterpret_cast<FakeError*>(args->error)->message.c_str();
}
void ErrorDestroy(XLA_FFI_Error_Destroy_Args* args) {
  delete reinterpret_cast<FakeError*>(args->error);
}
XLA_FFI_Api MakeApi() {
  XLA_FFI_Api api{};
  api.struct_size = XLA_FFI_Api_STRUCT_SIZE;
  api.api_version = {XLA_FFI_Api_Version_STRUCT_SIZE, nullptr, XLA_FFI_API_MAJOR,
                     XLA_FFI_API_MINOR};
  api.XLA_FFI_Error_Create = ErrorCreate;
  api.XLA_FFI_Error_GetMessage = ErrorGetMessage;
  api.XLA_FFI_Error_Destroy = ErrorDestroy;
  return api;
}
const XLA_FFI_Api kApi = MakeApi();

std::size_t ByteSize(XLA_FFI_DataType type) {
  switch (type) {
    case XLA_FFI_DataType_F64:
    case XLA_FFI_DataType_S64:
    case XLA_FFI_DataType_C64:
      return 8;
    case XLA_FFI_DataType_F32:
    case XLA_FFI_DataType_S32:
      return 4;
    case XLA_FFI_DataType_F16:
    case XLA_FFI_DataType_BF16:
      return 2;
    default:
      return 1;
  }
}

const char* DtypeName(XLA_FFI_DataType type) {
  switch (type) {
    case XLA_FFI_DataType_F32:
      return "float32";
    case XLA_FFI_DataType_F64:
      return "float64";
    case XLA_FFI_DataType_U8:
      return "uint8";
    case XLA_FFI_DataType_S32:
      return "int32";
    default:
      return "float16";
  }
}

// A buffer argument or result: its dims, dtype and (when backed) memory of exactly its size, so
// that AddressSanitizer sees any access past it.
struct Buffer {
  XLA_FFI_Buffer ffi{};
  Dims dims;
  std::vector<std::int64_t> dims_storage;
  std::vector<unsigned char> bytes;
  bool backed = true;

  void Make(XLA_FFI_DataType dtype, const Dims& shape, bool back) {
    dims = shape;
    dims_storage.assign(shape.begin(), shape.end());
    backed = back;
    const std::int64_t count = constmem::ElementCount(shape);
    if (back) {
      bytes.assign(static_cast<std::size_t>(count) * ByteSize(dtype), 0);
    } else {
      bytes.assign(8, 0);  // memory a call that is refused never reads
    }
    ffi.struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
    ffi.dtype = dtype;
    ffi.data = bytes.empty() ? nullptr : bytes.data();
    ffi.rank = static_cast<std::int64_t>(shape.size());
    ffi.dims = dims_storage.data();
  }
};

// One attribute of a call frame, of any type.
struct Attr {
  std::string name;
  XLA_FFI_AttrType type;
  XLA_FFI_ByteSpan span{};  // string
  std::string text;
  XLA_FFI_Scalar scalar{};
  XLA_FFI_Array array{};
  std::int64_t i64 = 0;
  double f64 = 0;
  std::int32_t i32 = 0;
  std::vector<double> f64s;
  std::vector<std::int32_t> i32s;
  std::vector<float> f32s;
};

class Fuzzer {
 public:
  explicit Fuzzer(std::uint64_t seed) : rng_(seed), ops_(OpsOf<CONSTMEM_OPS>()) {}

  void Run(std::int64_t count) {
    while (calls_ < count) {
      for (int i = 0; i < 1000 && calls_ < count; ++i) OneCall();
      KnownGoodCalls();
    }
  }

  int Summary(std::uint64_t seed) const {
    std::printf(
        "entry_fuzz: seed %llu, %lld calls (ffi %lld, ffi static %lld, of which %lld ran; "
        "check_call %lld, table_placement %lld, known-good %lld), %lld findings\n",
        static_cast<unsigned long long>(seed), static_cast<long long>(calls_),
        static_cast<long long>(ffi_), static_cast<long long>(ffi_static_),
        static_cast<long long>(ffi_results_), static_cast<long long>(check_calls_),
        static_cast<long long>(placements_), static_cast<long long>(good_),
        static_cast<long long>(findings_));
    return findings_ == 0 ? 0 : 1;
  }

 private:
  std::uint64_t Next() { return rng_(); }
  std::int64_t Below(std::int64_t n) { return static_cast<std::int64_t>(Next() % n); }
  bool Chance(int percent) { return Below(100) < percent; }
  template <class T>
  T Pick(std::initializer_list<T> values) {
    return *(values.begin() + Below(static_cast<std::int64_t>(values.size())));
  }

  void Finding(const std::string& what) {
    ++findings_;
    if (findings_ <= 20)
      std::fprintf(stderr, "entry_fuzz: finding at call %lld: %s\n", static_cast<long long>(calls_),
                   what.c_str());
  }

  void OneCall() {
    ++calls_;
    const int kind = static_cast<int>(Below(100));
    if (kind < 45) {
      FfiCall(/*is_static=*/false);
    } else if (kind < 80) {
      FfiCall(/*is_static=*/true);
    } else if (kind < 95) {
      CheckCall();
    } else {
      Placement();
    }
  }

  // ---- values ----
  std::int64_t WildDim() {
    return Pick<std::int64_t>(
        {0, 1, 2, -1, -7, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 31, std::int64_t{1} << 40,
         std::int64_t{1} << 62, std::numeric_limits<std::int64_t>::max(),
         std::numeric_limits<std::int64_t>::min(), static_cast<std::int64_t>(Next())});
  }
  double WildDouble() {
    return Pick<double>({1e300, -1e300, INFINITY, -INFINITY, NAN, 1e-320, double{FLT_MAX} * 2,
                         double{FLT_MAX} + 0x1p103, double{FLT_MAX} + 0x1p102, -0.0, 0.0,
                         std::ldexp(static_cast<double>(Next() % 1000) - 500, Below(2100) - 1050)});
  }
  double GoodDouble() { return (static_cast<double>(Below(2001)) - 1000) / 100; }
  std::int64_t WildInt() {
    return Pick<std::int64_t>({0, -1, 1, 2, 3, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 31,
                               std::numeric_limits<std::int64_t>::max(),
                               std::numeric_limits<std::int64_t>::min(),
                               static_cast<std::int64_t>(Next())});
  }
  std::string WildChoice(const AttrSpec& spec) {
    std::vector<std::string> choices;
    std::string rest = spec.choices;
    for (std::size_t start = 0; start <= rest.size();) {
      const std::size_t comma = rest.find(',', start);
      choices.push_back(rest.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (!choices.empty() && Chance(85)) return choices[Below(choices.size())];
    return Pick<std::string>(
        {"", "BAD", "same", "reflect,zeros", std::string(300, 'x'), std::string("SAME\0x", 6)});
  }
  XLA_FFI_DataType DataDtype(const OpInfo& op) {
    if (Chance(85)) {
      return op.types[Below(op.types.size())];
    }
    return Pick<XLA_FFI_DataType>(
        {XLA_FFI_DataType_F16, XLA_FFI_DataType_BF16, XLA_FFI_DataType_S32, XLA_FFI_DataType_S64,
         XLA_FFI_DataType_U8, XLA_FFI_DataType_F64, XLA_FFI_DataType_PRED, XLA_FFI_DataType_C64});
  }
  static XLA_FFI_DataType EntryDtype(const TableSpec& table, XLA_FFI_DataType data) {
    if (table.int32) return XLA_FFI_DataType_S32;
    return data == XLA_FFI_DataType_F64 || data == XLA_FFI_DataType_S32 ? XLA_FFI_DataType_F64
                                                                        : XLA_FFI_DataType_F32;
  }

  // x's dims: small (backed) or wild.
  Dims DataDims(bool* backed) {
    const int rank = static_cast<int>(Chance(90) ? Below(5) : Below(9));
    Dims dims(rank);
    *backed = Chance(85);
    for (auto& d : dims) d = *backed ? (Chance(90) ? Below(7) : Below(40)) : WildDim();
    if (*backed && constmem::ElementCount(dims) > 4096) *backed = false;
    return dims;
  }
  std::int64_t TableSize(const TableSpec& table) {
    const int pick = static_cast<int>(Below(1000));
    if (pick < 850) return table.min_size + Below(std::min<std::int64_t>(24, table.max_size));
    if (pick < 853) return table.max_size;
    if (pick < 856) return table.max_size + 1;
    if (pick < 930) return Pick<std::int64_t>({0, table.min_size - 1, 2, 6, 12, 4097});
    return WildDim();
  }

  // ---- the XLA FFI handlers ----
  void FfiCall(bool is_static) {
    const OpInfo& op = ops_[Below(ops_.size())];
    (is_static ? ffi_static_ : ffi_)++;
    const std::string target = op.library + "_" + op.name + (is_static ? "_static" : "");
    auto* handler = reinterpret_cast<XLA_FFI_Handler*>(constmem_ffi_handler(target.c_str(), "cpu"));
    if (handler == nullptr) return Finding("no handler for " + target);

    const XLA_FFI_DataType dtype = DataDtype(op);
    bool x_backed = true;
    const Dims x_dims = DataDims(&x_backed);
    Buffer x;
    x.Make(dtype, x_dims, x_backed);
    // The tables: buffers, or attributes of the static form.
    std::vector<Buffer> tables(op.tables.size());
    std::vector<Attr> attrs;
    std::vector<long long> sizes;
    bool well_formed = true;  // as the oracle (check_call) can judge the call
    bool large_static = false;
    for (std::size_t t = 0; t < op.tables.size(); ++t) {
      const TableSpec& spec = op.tables[t];
      std::int64_t size = TableSize(spec);
      // A large table is a call's whole cost (its kernel runs over every entry per output): one
      // of more than 4096 entries is backed only in the static form, and the call refused.
      const bool fits = size >= 0 && size <= 4096;
      if (is_static && (size < 0 || size > spec.max_size + 1)) size = spec.max_size + 1;
      sizes.push_back(size);
      XLA_FFI_DataType entry = EntryDtype(spec, dtype);
      if (!is_static && Chance(5)) {
        entry = Pick<XLA_FFI_DataType>({XLA_FFI_DataType_F32, XLA_FFI_DataType_F64,
                                        XLA_FFI_DataType_S32, XLA_FFI_DataType_S64,
                                        XLA_FFI_DataType_F16});
        well_formed = well_formed && entry == EntryDtype(spec, dtype);
      }
      if (!is_static) {
        Dims dims{size};
        if (Chance(3)) {
          dims = Chance(50) ? Dims{} : Dims{size, 1};
          well_formed = false;
        }
        tables[t].Make(entry, dims, fits);
        FillTable(&tables[t]);
      } else if (size > 4096) {
        Attr a;  // zeros: the call is refused, but the handler reads every value first
        a.name = op.tables.size() == 1 ? "table" : spec.name;
        a.type = XLA_FFI_AttrType_ARRAY;
        a.array.dtype = spec.int32 ? XLA_FFI_DataType_S32 : XLA_FFI_DataType_F64;
        a.array.size = static_cast<std::size_t>(size);
        a.array.data = Zeros(a.array.size * (spec.int32 ? 4 : 8));
        attrs.push_back(std::move(a));
        large_static = true;
      } else if (Chance(97)) {
        Attr a;
        a.name = op.tables.size() == 1 ? "table" : spec.name;
        a.type = XLA_FFI_AttrType_ARRAY;
        const XLA_FFI_DataType stored = spec.int32 ? XLA_FFI_DataType_S32 : XLA_FFI_DataType_F64;
        const XLA_FFI_DataType given = Chance(95) ? stored : XLA_FFI_DataType_F32;
        well_formed = well_formed && given == stored;
        for (std::int64_t i = 0; i < size; ++i) {
          a.f64s.push_back(Chance(95) ? GoodDouble() : WildDouble());
          a.i32s.push_back(static_cast<std::int32_t>(Chance(95) ? Below(9) - 4 : WildInt()));
          a.f32s.push_back(static_cast<float>(GoodDouble()));
        }
        a.array.dtype = given;
        a.array.size = static_cast<std::size_t>(size);
        a.array.data = given == XLA_FFI_DataType_S32   ? static_cast<void*>(a.i32s.data())
                       : given == XLA_FFI_DataType_F64 ? static_cast<void*>(a.f64s.data())
                                                       : static_cast<void*>(a.f32s.data());
        attrs.push_back(std::move(a));
      } else {
        well_formed = false;  // the table's attribute missing
      }
    }
    // The op's attributes, and the C values check_call takes.
    std::vector<std::string> choices(op.attrs.size());
    std::vector<const char*> choice_ptrs(op.attrs.size() + 1, nullptr);
    std::vector<double> floats(op.attrs.size() + 1, 0);
    std::vector<long long> ints(op.attrs.size() + 1, 0);
    for (std::size_t i = 0; i < op.attrs.size(); ++i) {
      const AttrSpec& spec = op.attrs[i];
      if (Chance(3)) {
        well_formed = false;  // missing
        continue;
      }
      Attr a;
      a.name = spec.name;
      const bool wrong_type = Chance(3);
      well_formed = well_formed && !wrong_type;
      if (spec.kind == AttrKind::kChoice) {
        choices[i] = WildChoice(spec);
        choice_ptrs[i] = choices[i].c_str();
        a.text = choices[i];
        a.type = wrong_type ? XLA_FFI_AttrType_SCALAR : XLA_FFI_AttrType_STRING;
      } else if (spec.kind == AttrKind::kFloat64) {
        floats[i] = Chance(80) ? GoodDouble() : WildDouble();
        a.f64 = floats[i];
        a.type = XLA_FFI_AttrType_SCALAR;
        a.scalar.dtype = wrong_type ? XLA_FFI_DataType_F32 : XLA_FFI_DataType_F64;
      } else {
        ints[i] = Chance(80) ? 1 + Below(6) : WildInt();
        a.i64 = ints[i];
        a.type = XLA_FFI_AttrType_SCALAR;
        a.scalar.dtype = wrong_type ? XLA_FFI_DataType_S32 : XLA_FFI_DataType_S64;
      }
      attrs.push_back(std::move(a));
    }
    if (Chance(3)) {  // an attribute no op takes
      Attr a;
      a.name = "unexpected";
      a.type = XLA_FFI_AttrType_SCALAR;
      a.scalar.dtype = XLA_FFI_DataType_S64;
      attrs.push_back(std::move(a));
    }
    // The result: the shape and dtype the op gives (asked of check_call), or another.
    Dims expected;
    const bool accepted =
        Oracle(op, dtype, x.dims, sizes, choice_ptrs, floats, ints, &expected) && well_formed;
    Dims y_dims = accepted ? expected : x.dims;
    if (Chance(10)) y_dims = Chance(50) ? Dims{} : Dims{Below(5)};
    if (Chance(5)) y_dims.push_back(Chance(50) ? 1 : WildDim());
    XLA_FFI_DataType y_type = dtype;
    if (Chance(7)) {
      y_type = Pick<XLA_FFI_DataType>(
          {XLA_FFI_DataType_F32, XLA_FFI_DataType_F64, XLA_FFI_DataType_U8, XLA_FFI_DataType_F16});
    }
    bool y_backed = true;
    for (std::int64_t d : y_dims) y_backed = y_backed && d >= 0;
    y_backed = y_backed && constmem::ElementCount(y_dims) <= (1 << 16);
    bool backed = x_backed && y_backed;
    for (const Buffer& t : tables) backed = backed && t.backed;
    backed = backed && !large_static;
    // A call this process cannot back must be refused: its result has one more dimension than
    // x (every op's result has x's rank).
    if (!backed) {
      y_dims = x.dims;
      y_dims.push_back(1);
    }
    const bool valid = accepted && y_dims == expected && y_type == dtype;
    Buffer y;
    y.Make(y_type, y_dims, backed && y_backed);

    // The frame.
    std::vector<XLA_FFI_ArgType> arg_types;
    std::vector<void*> args;
    args.push_back(&x.ffi);
    if (!is_static) {
      for (Buffer& t : tables) args.push_back(&t.ffi);
    }
    bool frame_ok = true;
    if (Chance(2)) {  // the wrong number of arguments
      if (Chance(50) || args.size() == 1) {
        args.push_back(&x.ffi);
      } else {
        args.pop_back();
      }
      frame_ok = false;
    }
    arg_types.assign(args.size(), XLA_FFI_ArgType_BUFFER);
    std::vector<XLA_FFI_RetType> ret_types{XLA_FFI_RetType_BUFFER};
    std::vector<void*> rets{&y.ffi};
    if (Chance(1)) {
      rets.clear();
      ret_types.clear();
      frame_ok = false;
    }
    std::sort(attrs.begin(), attrs.end(),
              [](const Attr& a, const Attr& b) { return a.name < b.name; });
    std::vector<XLA_FFI_AttrType> attr_types;
    std::vector<XLA_FFI_ByteSpan> names(attrs.size());
    std::vector<XLA_FFI_ByteSpan*> name_ptrs;
    std::vector<void*> attr_values;
    for (std::size_t i = 0; i < attrs.size(); ++i) {
      Attr& a = attrs[i];
      names[i] = {a.name.data(), a.name.size()};
      name_ptrs.push_back(&names[i]);
      attr_types.push_back(a.type);
      if (a.type == XLA_FFI_AttrType_STRING) {
        a.span = {a.text.data(), a.text.size()};
        attr_values.push_back(&a.span);
      } else if (a.type == XLA_FFI_AttrType_ARRAY) {
        attr_values.push_back(&a.array);
      } else {
        if (a.scalar.dtype == XLA_FFI_DataType_F64) {
          a.scalar.value = &a.f64;
        } else if (a.scalar.dtype == XLA_FFI_DataType_S32 ||
                   a.scalar.dtype == XLA_FFI_DataType_F32) {
          a.i32 = static_cast<std::int32_t>(a.i64);
          a.scalar.value = &a.i32;
        } else {
          a.scalar.value = &a.i64;
        }
        attr_values.push_back(&a.scalar);
      }
    }
    XLA_FFI_CallFrame frame{};
    frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
    frame.api = &kApi;
    frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
    frame.args = {XLA_FFI_Args_STRUCT_SIZE, nullptr, static_cast<std::int64_t>(args.size()),
                  arg_types.data(), args.data()};
    frame.rets = {XLA_FFI_Rets_STRUCT_SIZE, nullptr, static_cast<std::int64_t>(rets.size()),
                  ret_types.data(), rets.data()};
    frame.attrs = {
        XLA_FFI_Attrs_STRUCT_SIZE, nullptr,          static_cast<std::int64_t>(attrs.size()),
        attr_types.data(),         name_ptrs.data(), attr_values.data()};
    if (Chance(1)) {
      frame.stage = XLA_FFI_ExecutionStage_PREPARE;
      frame_ok = false;
    }
    XLA_FFI_Error* error = handler(&frame);
    const std::string what = target + " " + DtypeName(dtype) + " x" + constmem::DimsString(x.dims) +
                             " y" + constmem::DimsString(y_dims);
    if (error == nullptr) {
      ++ffi_results_;
      if (!backed) Finding(what + ": a call it had to refuse succeeded");
      if (!frame_ok) Finding(what + ": a malformed frame succeeded");
      if (!valid) Finding(what + ": succeeded where check_call refuses or gives another result");
      return;
    }
    const auto* e = reinterpret_cast<FakeError*>(error);
    if (e->code != XLA_FFI_Error_Code_INVALID_ARGUMENT &&
        e->code != XLA_FFI_Error_Code_RESOURCE_EXHAUSTED) {
      Finding(what + ": error of kind " + std::to_string(e->code) + ": " + e->message);
    } else if (e->message.empty()) {
      Finding(what + ": an error without a message");
    }
    delete e;
  }

  // `bytes` of zeros, shared by every call (a large table's values, which the call only reads).
  void* Zeros(std::size_t bytes) {
    if (zeros_.size() < bytes) zeros_.assign(bytes, 0);
    return zeros_.data();
  }

  void FillTable(Buffer* table) {
    if (!table->backed) return;
    const std::size_t count = table->bytes.size() / ByteSize(table->ffi.dtype);
    for (std::size_t i = 0; i < count; ++i) {
      if (table->ffi.dtype == XLA_FFI_DataType_F32) {
        const float v = static_cast<float>(GoodDouble());
        std::memcpy(table->bytes.data() + 4 * i, &v, 4);
      } else if (table->ffi.dtype == XLA_FFI_DataType_F64) {
        const double v = Chance(97) ? GoodDouble() : WildDouble();
        std::memcpy(table->bytes.data() + 8 * i, &v, 8);
      } else if (table->ffi.dtype == XLA_FFI_DataType_S32) {
        const std::int32_t v = static_cast<std::int32_t>(Below(9) - 4);
        std::memcpy(table->bytes.data() + 4 * i, &v, 4);
      }
    }
  }

  // What check_call says of a call: whether the op accepts it and y's dims.
  bool Oracle(const OpInfo& op, XLA_FFI_DataType dtype, const Dims& x,
              const std::vector<long long>& sizes, const std::vector<const char*>& choices,
              const std::vector<double>& floats, const std::vector<long long>& ints, Dims* y) {
    std::vector<long long> dims(x.begin(), x.end());
    long long y_dims[16];
    int y_rank = 16;
    char error[256];
    const int result = constmem_op_registry_check_call(
        op.name.c_str(), DtypeName(dtype), dims.data(), static_cast<int>(dims.size()), sizes.data(),
        static_cast<int>(sizes.size()), choices.data(), floats.data(), ints.data(), y_dims, &y_rank,
        error, sizeof(error));
    if (result != 0) return false;
    y->assign(y_dims, y_dims + y_rank);
    return true;
  }

  // ---- constmem_op_registry_check_call ----
  void CheckCall() {
    ++check_calls_;
    const OpInfo& op = ops_[Below(ops_.size())];
    const std::string name = Chance(95) ? op.name : Pick<std::string>({"", "nope", "frobulate "});
    const char* dtype =
        Pick<const char*>({"float32", "float32", "float64", "uint8", "int32", "", nullptr});
    const int rank = static_cast<int>(Chance(90) ? Below(6) : Pick<std::int64_t>({-1, -100, 8}));
    std::vector<long long> dims(std::max(rank, 0) + 1);
    for (auto& d : dims) d = Chance(70) ? Below(9) : WildDim();
    const int table_count =
        static_cast<int>(Chance(90) ? static_cast<std::int64_t>(op.tables.size())
                                    : Pick<std::int64_t>({-1, 0, 9, 3}));
    std::vector<long long> sizes(8);
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      sizes[t] = t < op.tables.size() ? TableSize(op.tables[t]) : WildDim();
    }
    const std::size_t attrs = op.attrs.size();
    std::vector<std::string> choices(attrs);
    std::vector<const char*> choice_ptrs(attrs + 1, nullptr);
    std::vector<double> floats(attrs + 1);
    std::vector<long long> ints(attrs + 1);
    for (std::size_t i = 0; i < attrs; ++i) {
      if (op.attrs[i].kind == AttrKind::kChoice) {
        choices[i] = WildChoice(op.attrs[i]);
        choice_ptrs[i] = Chance(97) ? choices[i].c_str() : nullptr;
      }
      floats[i] = Chance(70) ? GoodDouble() : WildDouble();
      ints[i] = Chance(70) ? 1 + Below(6) : WildInt();
    }
    const int y_capacity = static_cast<int>(Below(9));
    std::vector<long long> y_dims(y_capacity + 1);
    int y_rank = y_capacity;
    const int error_size = static_cast<int>(Pick<std::int64_t>({0, 1, 8, 256}));
    std::vector<char> error(std::max(error_size, 1), 'z');
    const bool null_arrays = Chance(3);
    const int result = constmem_op_registry_check_call(
        Chance(2) ? nullptr : name.c_str(), dtype, Chance(2) ? nullptr : dims.data(), rank,
        Chance(2) ? nullptr : sizes.data(), table_count, null_arrays ? nullptr : choice_ptrs.data(),
        null_arrays ? nullptr : floats.data(), null_arrays ? nullptr : ints.data(),
        Chance(2) ? nullptr : y_dims.data(), Chance(2) ? nullptr : &y_rank,
        Chance(2) ? nullptr : error.data(), error_size);
    if (result == 0) {
      if (y_rank > y_capacity) Finding("check_call: y_rank past the capacity given");
      return;
    }
    if (result != 1) Finding("check_call returned " + std::to_string(result));
    if (error_size > 0 && std::memchr(error.data(), '\0', error_size) == nullptr &&
        error[0] != 'z') {
      Finding("check_call: an error message without its terminator");
    }
  }

  // ---- constmem_op_registry_table_placement ----
  void Placement() {
    ++placements_;
    const OpInfo& op = ops_[Below(ops_.size())];
    const char* name = Chance(90) ? op.name.c_str() : Pick<const char*>({"", "nope", nullptr});
    const char* dtype = Pick<const char*>({"float32", "float64", "uint8", "int8", "", nullptr});
    const int table = static_cast<int>(Chance(90) ? Below(op.tables.size()) : WildInt());
    const long long count = Chance(80) ? TableSize(op.tables[0]) : WildDim();
    const int source = static_cast<int>(Chance(90) ? Below(2) : WildInt());
    const long long elements = Chance(80) ? Below(1 << 30) : WildDim();
    const char* placement =
        constmem_op_registry_table_placement(name, table, dtype, count, source, elements);
    if (placement != nullptr && std::strlen(placement) > 64) {
      Finding("table_placement: a name of more than 64 characters");
    }
  }

  // ---- the known-good calls ----
  void KnownGoodCalls() {
    good_ += 2;
    calls_ += 2;
    // polyval, coefficients as a buffer and as the static form's attribute.
    const std::vector<float> xs{0.5f, -1.25f, 2.0f, 3.0f, 0.0f, -7.5f};
    const std::vector<float> coeffs{1.0f, -2.0f, 0.5f};
    std::vector<float> expected(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      float v = coeffs[0];
      for (std::size_t j = 1; j < coeffs.size(); ++j) v = std::fma(v, xs[i], coeffs[j]);
      expected[i] = v;
    }
    for (const bool is_static : {false, true}) {
      Buffer x;
      Buffer table;
      Buffer y;
      const Dims shape{2, 3};
      x.Make(XLA_FFI_DataType_F32, shape, true);
      std::memcpy(x.bytes.data(), xs.data(), xs.size() * 4);
      table.Make(XLA_FFI_DataType_F32, {3}, true);
      std::memcpy(table.bytes.data(), coeffs.data(), coeffs.size() * 4);
      y.Make(XLA_FFI_DataType_F32, shape, true);
      std::vector<void*> args{&x.ffi};
      if (!is_static) args.push_back(&table.ffi);
      std::vector<XLA_FFI_ArgType> arg_types(args.size(), XLA_FFI_ArgType_BUFFER);
      XLA_FFI_RetType ret_type = XLA_FFI_RetType_BUFFER;
      void* ret = &y.ffi;
      const std::vector<double> values(coeffs.begin(), coeffs.end());
      XLA_FFI_Array array{XLA_FFI_DataType_F64, values.size(), const_cast<double*>(values.data())};
      const std::string attr_name = "table";
      XLA_FFI_ByteSpan span{attr_name.data(), attr_name.size()};
      XLA_FFI_ByteSpan* span_ptr = &span;
      XLA_FFI_AttrType attr_type = XLA_FFI_AttrType_ARRAY;
      void* attr_value = &array;
      XLA_FFI_CallFrame frame{};
      frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
      frame.api = &kApi;
      frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
      frame.args = {XLA_FFI_Args_STRUCT_SIZE, nullptr, static_cast<std::int64_t>(args.size()),
                    arg_types.data(), args.data()};
      frame.rets = {XLA_FFI_Rets_STRUCT_SIZE, nullptr, 1, &ret_type, &ret};
      frame.attrs = {XLA_FFI_Attrs_STRUCT_SIZE,
                     nullptr,
                     is_static ? 1 : 0,
                     &attr_type,
                     &span_ptr,
                     &attr_value};
      auto* handler = reinterpret_cast<XLA_FFI_Handler*>(
          constmem_ffi_handler(is_static ? "constmem_polyval_static" : "constmem_polyval", "cpu"));
      if (handler == nullptr) return Finding("no polyval handler");
      if (XLA_FFI_Error* error = handler(&frame)) {
        auto* e = reinterpret_cast<FakeError*>(error);
        Finding("the known-good polyval call failed: " + e->message);
        delete e;
        continue;
      }
      if (std::memcmp(y.bytes.data(), expected.data(), expected.size() * 4) != 0) {
        Finding("the known-good polyval call gave another result");
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<OpInfo> ops_;
  std::vector<unsigned char> zeros_;
  std::int64_t calls_ = 0;
  std::int64_t ffi_ = 0;
  std::int64_t ffi_static_ = 0;
  std::int64_t check_calls_ = 0;
  std::int64_t placements_ = 0;
  std::int64_t good_ = 0;
  std::int64_t ffi_results_ = 0;
  std::int64_t findings_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  std::int64_t count = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed") {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--count") {
      count = std::strtoll(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: entry_fuzz [--seed S] [--count N]\n");
      return 2;
    }
  }
  Fuzzer fuzzer(seed);
  fuzzer.Run(count);
  return fuzzer.Summary(seed);
}
