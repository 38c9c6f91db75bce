// SPDX-License-Identifier: Apache-2.0
/* Serving a SavedModel that uses constmem's ops from TensorFlow's C API alone, without Python:
 * loads the op library (TF_LoadLibrary), then the model (TF_LoadSessionFromSavedModel, tag
 * "serve"), feeds float32 data from a raw file to one signature input and writes the output as
 * raw float32 to another file.
 *   c_api_saved_model OPS_LIBRARY MODEL_DIR INPUT_OP OUTPUT_OP IN.raw OUT.raw
 * INPUT_OP and OUTPUT_OP are graph operation names of the serving signature, as
 * `saved_model_cli show --all` prints them (e.g. serving_default_x, StatefulPartitionedCall).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tensorflow/c/c_api.h"

static int Fail(const char* what, TF_Status* status) {
  fprintf(stderr, "%s: %s\n", what, TF_Message(status));
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s OPS_LIBRARY MODEL_DIR INPUT_OP OUTPUT_OP IN.raw OUT.raw\n", argv[0]);
    return 2;
  }
  TF_Status* status = TF_NewStatus();
  TF_Library* library = TF_LoadLibrary(argv[1], status);
  if (TF_GetCode(status) != TF_OK) return Fail("TF_LoadLibrary", status);

  FILE* in = fopen(argv[5], "rb");
  if (in == NULL) return 2;
  fseek(in, 0, SEEK_END);
  const int64_t count = ftell(in) / (int64_t)sizeof(float);
  fseek(in, 0, SEEK_SET);
  TF_Tensor* input = TF_AllocateTensor(TF_FLOAT, &count, 1, (size_t)count * sizeof(float));
  if (fread(TF_TensorData(input), sizeof(float), (size_t)count, in) != (size_t)count) return 2;
  fclose(in);

  TF_Graph* graph = TF_NewGraph();
  TF_SessionOptions* options = TF_NewSessionOptions();
  const char* tags[] = {"serve"};
  TF_Session* session =
      TF_LoadSessionFromSavedModel(options, NULL, argv[2], tags, 1, graph, NULL, status);
  if (TF_GetCode(status) != TF_OK) return Fail("TF_LoadSessionFromSavedModel", status);
  TF_Operation* input_op = TF_GraphOperationByName(graph, argv[3]);
  TF_Operation* output_op = TF_GraphOperationByName(graph, argv[4]);
  if (input_op == NULL || output_op == NULL) {
    fprintf(stderr, "no operation named %s or %s in the model\n", argv[3], argv[4]);
    return 1;
  }
  TF_Output feed = {input_op, 0};
  TF_Output fetch = {output_op, 0};
  TF_Tensor* output = NULL;
  TF_SessionRun(session, NULL, &feed, &input, 1, &fetch, &output, 1, NULL, 0, NULL, status);
  if (TF_GetCode(status) != TF_OK) return Fail("TF_SessionRun", status);

  FILE* out = fopen(argv[6], "wb");
  if (out == NULL) return 2;
  fwrite(TF_TensorData(output), 1, TF_TensorByteSize(output), out);
  fclose(out);
  printf("C API SavedModel: %lld elements served\n", (long long)count);

  TF_DeleteTensor(output);
  TF_DeleteTensor(input);
  TF_CloseSession(session, status);
  TF_DeleteSession(session, status);
  TF_DeleteSessionOptions(options);
  TF_DeleteGraph(graph);
  TF_DeleteLibraryHandle(library);
  TF_DeleteStatus(status);
  return 0;
}
