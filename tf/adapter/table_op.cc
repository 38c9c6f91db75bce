// SPDX-License-Identifier: Apache-2.0
#include "adapter/table_op.h"

#include "tensorflow/core/framework/op.h"

namespace constmem {
namespace tf_adapter {

void RegisterTableOpDefs(const TableOpDef& def) {
  const std::string table_type = def.int32_table ? "int32" : "T";
  struct Form {
    const char* suffix;
    bool table_input;
    std::string doc;
  };
  const Form forms[] = {
      {"", true, def.doc},
      {"HostTable", true,
       def.name + " whose GPU kernel takes the " + def.table +
           " from host memory: small ones as a by-value kernel parameter, others staged "
           "through TensorFlow's pinned host allocator."},
      {"Attr", false,
       def.name + " with the " + def.table +
           " fixed per node: by value when small, otherwise uploaded at most once per device "
           "and content.\n" +
           def.table + ": " +
           (def.int32_table ? std::string("the int32 values.")
                            : "the IEEE-754 bit patterns of the values in the data's type "
                              "(float32 in the low 32 bits), which keep every value exact.")},
  };
  for (const Form& form : forms) {
    const std::string name = def.name + form.suffix;
    tensorflow::register_op::OpDefBuilderWrapper op(name.c_str());
    op.Input(def.data + ": T");
    if (form.table_input) op.Input(def.table + ": " + table_type);
    op.Output(def.output + ": T");
    op.Attr(def.float64 ? "T: {float, double}" : "T: {float}");
    for (const std::string& attr : def.attrs) op.Attr(attr);
    if (!form.table_input) op.Attr(def.table + ": list(int)");
    op.SetShapeFn(form.table_input ? def.input_shape : def.attr_shape);
    op.Doc(form.doc);
    op();
  }
}

}  // namespace tf_adapter
}  // namespace constmem
