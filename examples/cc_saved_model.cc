// SPDX-License-Identifier: Apache-2.0
// A SavedModel that uses constmem's ops, served through TensorFlow's C++ API (libtensorflow_cc
// from the pip wheel) without Python: load the op library, load the model, run one batch.
//   cc_saved_model OPS_LIBRARY MODEL_DIR INPUT_OP OUTPUT_OP IN.raw OUT.raw
// IN.raw holds float32 values; OUT.raw receives the output's float32 values.
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tensorflow/cc/saved_model/loader.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/public/session.h"

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s OPS_LIBRARY MODEL_DIR INPUT_OP OUTPUT_OP IN.raw OUT.raw\n",
                 argv[0]);
    return 2;
  }
  // Loading the library runs its static registrars: the ops and kernels the model names.
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  std::ifstream in(argv[5], std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto count = static_cast<std::int64_t>(bytes.size() / sizeof(float));
  tensorflow::Tensor input(tensorflow::DT_FLOAT, tensorflow::TensorShape({count}));
  std::copy(bytes.begin(), bytes.begin() + count * sizeof(float),
            reinterpret_cast<char*>(input.flat<float>().data()));

  tensorflow::SavedModelBundle bundle;
  absl::Status status = tensorflow::LoadSavedModel(
      tensorflow::SessionOptions(), tensorflow::RunOptions(), argv[2], {"serve"}, &bundle);
  if (!status.ok()) {
    std::fprintf(stderr, "loading the model: %s\n", status.ToString().c_str());
    return 1;
  }
  std::vector<tensorflow::Tensor> outputs;
  status = bundle.session->Run({{std::string(argv[3]) + ":0", input}},
                               {std::string(argv[4]) + ":0"}, {}, &outputs);
  if (!status.ok()) {
    std::fprintf(stderr, "running the model: %s\n", status.ToString().c_str());
    return 1;
  }
  std::ofstream out(argv[6], std::ios::binary);
  out.write(reinterpret_cast<const char*>(outputs[0].flat<float>().data()),
            static_cast<std::streamsize>(outputs[0].NumElements() * sizeof(float)));
  std::printf("C++ API: served %lld values\n", static_cast<long long>(outputs[0].NumElements()));
  return out ? 0 : 1;
}
