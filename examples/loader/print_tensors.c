/* Example: open a slimpack artifact with the C API and print every tensor.
 *   loader_example_c <artifact-dir> */
#include <stdio.h>
#include <stdlib.h>

#include "formats/shard/loader/slimpack_loader.h"

int main(int argc, char** argv) {
  slimpack_artifact* artifact = NULL;
  slimpack_status status;
  uint64_t i, count;

  if (argc < 2) {
    fprintf(stderr, "usage: %s <artifact-dir>\n", argv[0]);
    return 2;
  }
  status = slimpack_artifact_open(argv[1], NULL, &artifact);
  if (status != SLIMPACK_OK) {
    fprintf(stderr, "error %s: %s\n", slimpack_status_name(status),
            slimpack_last_error_message());
    return 1;
  }
  count = slimpack_artifact_tensor_count(artifact);
  printf("%llu tensors\n", (unsigned long long)count);
  for (i = 0; i < count; ++i) {
    slimpack_tensor_info info;
    slimpack_tensor_view* view = NULL;
    uint32_t d;
    if (slimpack_artifact_tensor_info(artifact, i, &info) != SLIMPACK_OK) break;
    printf("  %s %s [", info.name, slimpack_dtype_name(info.dtype));
    for (d = 0; d < info.rank; ++d) {
      printf("%s%llu", d ? "," : "", (unsigned long long)info.shape[d]);
    }
    status = slimpack_artifact_map_tensor(artifact, i, &view);
    if (status != SLIMPACK_OK) {
      fprintf(stderr, "\nerror %s: %s\n", slimpack_status_name(status),
              slimpack_last_error_message());
      slimpack_artifact_close(artifact);
      return 1;
    }
    printf("] %llu bytes", (unsigned long long)slimpack_tensor_view_size(view));
    if (info.numel > 0 && (info.layout != SLIMPACK_LAYOUT_PLAIN ||
                           info.dtype == SLIMPACK_DTYPE_F32)) {
      float* values = (float*)malloc(info.numel * sizeof(float));
      if (values != NULL &&
          slimpack_artifact_dequantize_f32(artifact, i, values, info.numel) ==
              SLIMPACK_OK) {
        printf(" first=%g", values[0]);
      }
      free(values);
    }
    printf("\n");
    slimpack_tensor_view_release(view);
  }
  slimpack_artifact_close(artifact);
  return 0;
}
