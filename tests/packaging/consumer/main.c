/* main.c - the program tests/packaging/consumers.sh builds against nnmem the
 * ways another project would: add_subdirectory, find_package (static and
 * shared), pkg-config (shared and static). It uses only <nnmem/nnmem.h> and
 * touches each private dependency: the JSON graph reader (cJSON), the ONNX
 * reader (protobuf-c), then liveness, planning and the verifier.
 * Prints "consumer ok <version> height <bytes>" and exits 0, or names the
 * failed step and exits 1. */
#include <stdio.h>
#include <string.h>

#include <nnmem/nnmem.h>

static const char graph_json[] =
    "{\"format_version\": 1, \"name\": \"tiny\", \"tensors\": ["
    "{\"name\": \"A\", \"kind\": \"input\", \"dtype\": \"float32\", "
    "\"shape\": [1, 256]},"
    "{\"name\": \"B\", \"dtype\": \"float32\", \"shape\": [1, 256]},"
    "{\"name\": \"C\", \"kind\": \"output\", \"dtype\": \"float32\", "
    "\"shape\": [1, 128]}],"
    "\"ops\": ["
    "{\"name\": \"Op1\", \"type\": \"Relu\", \"inputs\": [\"A\"], "
    "\"outputs\": [\"B\"]},"
    "{\"name\": \"Op2\", \"type\": \"Slice\", \"inputs\": [\"B\"], "
    "\"outputs\": [\"C\"]}]}";

static int failed(const char *step, nnmem_status_t st, const nnmem_diag_t *d) {
  fprintf(stderr, "consumer: %s: %s: %s\n", step, nnmem_status_str(st),
          d->message);
  return 1;
}

int main(void) {
  if (strcmp(nnmem_version(), NNMEM_VERSION_STRING) != 0 ||
      nnmem_version_number() != NNMEM_VERSION_NUMBER) {
    fprintf(stderr, "consumer: headers %s, library %s\n", NNMEM_VERSION_STRING,
            nnmem_version());
    return 1;
  }
  nnmem_diag_t diag = {{0}};
  const unsigned char not_onnx[] = {0xff, 0xff, 0xff, 0xff};
  nnmem_graph_t *g = NULL;
  nnmem_status_t st =
      nnmem_onnx_import(not_onnx, sizeof not_onnx, "x", NULL, &g, NULL, &diag);
  if (st == NNMEM_OK || g != NULL) {
    fprintf(stderr, "consumer: 4 bytes of 0xff imported as ONNX\n");
    nnmem_graph_destroy(g);
    return 1;
  }
  st = nnmem_graph_parse_json(graph_json, sizeof graph_json - 1, "tiny", &g,
                              &diag);
  if (st != NNMEM_OK) return failed("graph", st, &diag);
  nnmem_liveness_t *live = NULL;
  st = nnmem_liveness_analyze(g, NULL, &live, &diag);
  nnmem_plan_t *plan = NULL;
  if (st == NNMEM_OK)
    st = nnmem_plan_create(nnmem_liveness_problem(live), NULL, &plan, &diag);
  if (st == NNMEM_OK)
    st = nnmem_plan_verify(nnmem_liveness_problem(live),
                           nnmem_plan_offsets(plan), 0, 0, NULL, &diag);
  int rc = 0;
  if (st != NNMEM_OK)
    rc = failed("plan", st, &diag);
  else
    printf("consumer ok %s height %llu\n", nnmem_version(),
           (unsigned long long)nnmem_plan_height(plan));
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(live);
  nnmem_graph_destroy(g);
  return rc;
}
