// SPDX-License-Identifier: Apache-2.0
#include "adapter/table_op.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "tensorflow/core/framework/op.h"

namespace constmem {
namespace tf_adapter {

std::string TfOpName(const OpNames& names) {
  std::string name = names.library;
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(name[0]));
  return name + ">" + names.type;
}

std::vector<std::string> TfAttrSpecs(const AttrSpec* attrs, int count) {
  std::vector<std::string> specs;
  for (int i = 0; i < count; ++i) {
    std::string spec = std::string(attrs[i].name) + ": ";
    if (attrs[i].kind == AttrKind::kDataType) {  // a type attr: {bfloat16, half} = DT_BFLOAT16
      std::string choices = attrs[i].choices;
      std::string first;
      spec += "{";
      for (std::size_t start = 0; start <= choices.size();) {
        std::size_t end = choices.find(',', start);
        if (end == std::string::npos) end = choices.size();
        DataType type = DataType::kFloat32;
        DataTypeFromName(choices.substr(start, end - start), &type);
        const std::string name = tensorflow::DataTypeString(TfDataType(type));
        spec += (start == 0 ? "" : ", ") + name;
        if (start == 0) first = tensorflow::DataType_Name(TfDataType(type));
        start = end + 1;
      }
      specs.push_back(spec + "} = " + first);
      continue;
    }
    if (attrs[i].kind != AttrKind::kChoice) {
      specs.push_back(spec + "int");
      continue;
    }
    spec += "{";
    std::string choices = attrs[i].choices;
    for (std::size_t start = 0; start <= choices.size();) {
      std::size_t end = choices.find(',', start);
      if (end == std::string::npos) end = choices.size();
      spec += (start == 0 ? "'" : ", '") + choices.substr(start, end - start) + "'";
      start = end + 1;
    }
    specs.push_back(spec + "}");
  }
  return specs;
}

std::string XlaAttributeDictionary(const AttrSpec* specs, int count, const AttrValue* values) {
  std::string dictionary = "{";
  for (int i = 0; i < count; ++i) {
    if (i > 0) dictionary += ", ";
    dictionary += specs[i].name;
    char text[64];
    switch (specs[i].kind) {
      case AttrKind::kChoice:
      case AttrKind::kDataType:
        dictionary += " = \"" + std::string(values[i].choice) + "\"";
        break;
      case AttrKind::kFloat64: {  // by its bit pattern, which keeps it exact
        std::uint64_t bits;
        std::memcpy(&bits, &values[i].float64, sizeof(bits));
        std::snprintf(text, sizeof(text), " = 0x%016" PRIX64 " : f64", bits);
        dictionary += text;
        break;
      }
      case AttrKind::kInt64:
        dictionary += " = " + std::to_string(values[i].int64) + " : i64";
        break;
    }
  }
  return dictionary + "}";
}

namespace {

// The tables' names as a doc's sentence names them: "taps", "weight and bias", "a, b and c".
std::string TableList(const std::vector<TableSpec>& tables) {
  std::string list;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    if (i > 0) list += i + 1 == tables.size() ? " and " : ", ";
    list += tables[i].name;
  }
  return list;
}

}  // namespace

void RegisterTableOpDefs(const TableOpDef& def) {
  auto table_type = [&](const TableSpec& table) {
    return std::string(table.int32 ? "int32" : def.table_type ? "Ttable" : "T");
  };
  const std::string tables = TableList(def.tables);
  std::string attr_doc;
  for (const TableSpec& table : def.tables) {
    attr_doc +=
        "\n" + std::string(table.name) + ": " +
        (table.int32 ? std::string("the int32 values.")
                     : "the IEEE-754 bit patterns of the values in the data's type "
                       "(float32 in the low 32 bits; float32 for 8- and 16-bit data, float64 for "
                       "int32 data), which keep "
                       "every value exact.");
  }
  struct Form {
    const char* suffix;
    bool table_input;
    std::string doc;
  };
  const Form forms[] = {
      {"", true, def.doc},
      {"HostTable", true,
       def.name + " whose GPU kernel takes the " + tables +
           " from host memory: small ones as a by-value kernel parameter, others staged "
           "through TensorFlow's pinned host allocator."},
      {"Attr", false,
       def.name + " with the " + tables +
           " fixed per node: by value when small, otherwise uploaded at most once per device "
           "and content." +
           attr_doc},
  };
  for (const Form& form : forms) {
    const std::string name = def.name + form.suffix;
    tensorflow::register_op::OpDefBuilderWrapper op(name.c_str());
    op.Input(def.data + ": T");
    if (form.table_input) {
      for (const TableSpec& table : def.tables) op.Input(table.name + (": " + table_type(table)));
    }
    for (const std::string& output : def.outputs) op.Output(output);
    op.Attr("T: {" + def.types + "}");
    // The table inputs of an op that takes 8- or 16-bit or int32 data have a type of their own,
    // the data's compute type: float for float32, float16, bfloat16, uint8 and int8 data, double
    // for float64 and int32 data.
    if (def.table_type && form.table_input) {
      op.Attr(def.double_tables ? "Ttable: {float, double}" : "Ttable: {float}");
    }
    for (const std::string& attr : def.attrs) op.Attr(attr);
    if (!form.table_input) {
      for (const TableSpec& table : def.tables) op.Attr(table.name + std::string(": list(int)"));
    }
    op.SetShapeFn(form.table_input ? def.input_shape : def.attr_shape);
    op.Doc(form.doc);
    op();
  }
}

}  // namespace tf_adapter
}  // namespace constmem
