// SPDX-License-Identifier: Apache-2.0
/* Frobulate from TensorFlow's C API, without Python: loads the op library, builds a graph
 * data -> Constmem>Frobulate(data, table) and runs it, checking every element against a plain C
 * reference; then feeds a table of the wrong rank, expects TF_INVALID_ARGUMENT, and runs a valid
 * call again.
 *   c_api_frobulate /path/to/_constmem_ops.so [DEVICE]
 * DEVICE (say /device:GPU:0) pins the Frobulate node there; without soft placement the session
 * then fails rather than fall back to the CPU, so a pass proves the kernel ran on that device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/c_api.h"

static void NoDeallocate(void* data, size_t length, void* arg) {
  (void)data;
  (void)length;
  (void)arg;
}

static TF_Operation* Placeholder(TF_Graph* graph, const char* name, TF_DataType type,
                                 TF_Status* status) {
  TF_OperationDescription* desc = TF_NewOperation(graph, "Placeholder", name);
  TF_SetAttrType(desc, "dtype", type);
  return TF_FinishOperation(desc, status);
}

/* Runs Frobulate on `count` floats with `table_dims` table dimensions; returns the status code. */
static TF_Code Run(TF_Session* session, TF_Graph* graph, float* data, int64_t count, int32_t* table,
                   const int64_t* table_dims, int table_rank, float* out) {
  TF_Status* status = TF_NewStatus();
  int64_t table_count = 1;
  for (int i = 0; i < table_rank; ++i) table_count *= table_dims[i];
  TF_Tensor* inputs[2] = {
      TF_NewTensor(TF_FLOAT, &count, 1, data, (size_t)count * sizeof(float), NoDeallocate, NULL),
      TF_NewTensor(TF_INT32, table_dims, table_rank, table, (size_t)table_count * sizeof(int32_t),
                   NoDeallocate, NULL)};
  TF_Output feeds[2] = {{TF_GraphOperationByName(graph, "data"), 0},
                        {TF_GraphOperationByName(graph, "table"), 0}};
  TF_Output fetch = {TF_GraphOperationByName(graph, "frobulate"), 0};
  TF_Tensor* result = NULL;
  TF_SessionRun(session, NULL, feeds, inputs, 2, &fetch, &result, 1, NULL, 0, NULL, status);
  TF_Code code = TF_GetCode(status);
  if (code == TF_OK) {
    memcpy(out, TF_TensorData(result), (size_t)count * sizeof(float));
    TF_DeleteTensor(result);
  } else {
    printf("expected error: %s\n", TF_Message(status));
  }
  TF_DeleteTensor(inputs[0]);
  TF_DeleteTensor(inputs[1]);
  TF_DeleteStatus(status);
  return code;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s OP_LIBRARY [DEVICE]\n", argv[0]);
    return 2;
  }
  TF_Status* status = TF_NewStatus();
  TF_Library* library = TF_LoadLibrary(argv[1], status);
  if (TF_GetCode(status) != TF_OK) {
    fprintf(stderr, "TF_LoadLibrary: %s\n", TF_Message(status));
    return 1;
  }
  TF_Graph* graph = TF_NewGraph();
  TF_Operation* data_op = Placeholder(graph, "data", TF_FLOAT, status);
  TF_Operation* table_op = Placeholder(graph, "table", TF_INT32, status);
  TF_OperationDescription* desc = TF_NewOperation(graph, "Constmem>Frobulate", "frobulate");
  TF_AddInput(desc, (TF_Output){data_op, 0});
  TF_AddInput(desc, (TF_Output){table_op, 0});
  if (argc == 3) TF_SetDevice(desc, argv[2]);
  TF_FinishOperation(desc, status);
  if (TF_GetCode(status) != TF_OK) {
    fprintf(stderr, "building the graph: %s\n", TF_Message(status));
    return 1;
  }
  TF_SessionOptions* options = TF_NewSessionOptions();
  TF_Session* session = TF_NewSession(graph, options, status);

  enum { kCount = 1003, kTable = 100 };
  float data[kCount], out[kCount];
  int32_t table[kTable];
  srand(7);
  for (int i = 0; i < kCount; ++i) data[i] = (float)(rand() % 20001 - 10000) / 7.0f;
  for (int j = 0; j < kTable; ++j) table[j] = rand() % 2001 - 1000;
  const int64_t dims[1] = {kTable};
  int failures = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (Run(session, graph, data, kCount, table, dims, 1, out) != TF_OK) return 1;
    int mismatches = 0;
    for (int i = 0; i < kCount; ++i) {
      volatile float expected = data[i]; /* volatile: one rounding per addition, as the op does */
      for (int j = 0; j < kTable; ++j) expected = expected + (float)table[j];
      mismatches += memcmp((const void*)&expected, &out[i], sizeof(float)) != 0;
    }
    printf("run %d: %d of %d elements differ from the C reference\n", attempt + 1, mismatches,
           kCount);
    failures += mismatches != 0;
    if (attempt == 0) {
      const int64_t bad_dims[2] = {10, 10};
      const TF_Code code = Run(session, graph, data, kCount, table, bad_dims, 2, out);
      if (code != TF_INVALID_ARGUMENT) {
        printf("a rank-2 table gave code %d, not TF_INVALID_ARGUMENT\n", (int)code);
        failures += 1;
      }
    }
  }
  TF_CloseSession(session, status);
  TF_DeleteSession(session, status);
  TF_DeleteSessionOptions(options);
  TF_DeleteGraph(graph);
  TF_DeleteLibraryHandle(library);
  TF_DeleteStatus(status);
  printf("%s%s%s\n", failures == 0 ? "C API: OK" : "C API: FAILED", argc == 3 ? " on " : "",
         argc == 3 ? argv[2] : "");
  return failures == 0 ? 0 : 1;
}
