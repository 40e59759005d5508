/* test_onnx_conformance.c - shape / dtype inference against ONNX's own
 * test models (Debian libonnx-testdata: data/{node, pytorch-converted,
 * pytorch-operator, simple}/<test>/model.onnx with
 * test_data_set_0/input_N.pb and output_N.pb).
 *
 * For every model whose operators are all supported: bind the graph inputs'
 * shapes and types from input_N.pb (and the values of small inputs:
 * integers up to 1,024 elements, floats up to 16, which in these tests
 * carry shapes, axes, pads, k, scales), infer, and compare each graph
 * output's type and shape with output_N.pb (the reference result). The
 * shapes the model declares are never used for supported operators.
 * Prints pass/total per operator type and overall.
 * Known failures (tests/conformance/known_failures.txt, "name reason")
 * are expected; the test fails only on a failure not in that list.
 * Exits 77 when the package is absent (NNMEM_ONNX_TESTDATA overrides the
 * folder). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "import/onnx/onnx_hooks.h"
#include "testutil.h"

#define MAX_KNOWN 512
#define MAX_OPS 256

static const char *root;
static char known[MAX_KNOWN][128];
static size_t n_known;

typedef struct op_count {
  char type[64];
  unsigned pass, total;
} op_count_t;

static op_count_t ops[MAX_OPS];
static size_t n_ops;

static void load_known(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/conformance/known_failures.txt",
           NNMEM_SOURCE_DIR);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f) && n_known < MAX_KNOWN) {
    if (line[0] == '#' || line[0] == '\n') continue;
    if (sscanf(line, "%127s", known[n_known]) == 1) n_known++;
  }
  fclose(f);
}

static int is_known(const char *name) {
  for (size_t i = 0; i < n_known; i++)
    if (strcmp(known[i], name) == 0) return 1;
  return 0;
}

static void count_op(const char *type, int pass) {
  size_t i = 0;
  while (i < n_ops && strcmp(ops[i].type, type) != 0)
    i++;
  if (i == n_ops) {
    if (n_ops == MAX_OPS) return;
    snprintf(ops[n_ops++].type, sizeof ops[0].type, "%s", type);
  }
  ops[i].total++;
  ops[i].pass += pass != 0;
}

static const char *type_name(int32_t e) {
  static const char *const names[] = {
      "undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
      "int32",     "int64",  "string",    "bool",       "float16", "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  return e >= 0 && e <= 16 ? names[e] : "other";
}

static int read_all(const char *path, char **data, size_t *len) {
  return nnmem_file_read(path, data, len, NULL) == NNMEM_OK;
}

typedef struct bound_inputs {
  nnmem_onnx_input_shape_t sh[64];
  int64_t dims[64][OX_HOOK_RANK];
  char *pb[64]; /* the input_N.pb bytes (values of small inputs) */
  size_t pb_len[64];
  size_t n;
} bound_inputs_t;

static void free_inputs(bound_inputs_t *b) {
  for (size_t i = 0; i < b->n; i++)
    free(b->pb[i]);
  b->n = 0;
}

/* Binds input_N.pb shapes to the graph inputs in order. */
static int bind_inputs(const char *dir, const ox_io_t *names,
                       bound_inputs_t *b) {
  b->n = 0;
  for (size_t i = 0; i < names->n_in && i < 64; i++) {
    char path[1024], *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, i);
    if (!read_all(path, &data, &len)) break;
    int32_t elem = 0;
    uint32_t rank = 0;
    nnmem_status_t st =
        nnmem__onnx_tensor_info(data, len, &elem, &rank, b->dims[i], NULL);
    if (st != NNMEM_OK) {
      free(data);
      return 0;
    }
    b->pb[i] = data;
    b->pb_len[i] = len;
    b->sh[i].name = names->in_names[i];
    b->sh[i].rank = rank;
    b->sh[i].dims = b->dims[i];
    b->sh[i].elem_type = elem;
    b->n++;
  }
  return 1;
}

/* Compares output k with output_k.pb; writes the reason on mismatch. */
static int compare_output(const char *dir, const ox_io_t *io, size_t k,
                          char *why, size_t cap) {
  char path[1024], *data = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/test_data_set_0/output_%zu.pb", dir, k);
  if (!read_all(path, &data, &len)) return 1; /* no reference: skip */
  int32_t elem = 0;
  uint32_t rank = 0;
  int64_t dims[OX_HOOK_RANK];
  nnmem_status_t st =
      nnmem__onnx_tensor_info(data, len, &elem, &rank, dims, NULL);
  free(data);
  if (st != NNMEM_OK) return 1;
  int ok = io->elem[k] == elem && io->rank[k] == (int32_t)rank;
  for (uint32_t d = 0; ok && d < rank; d++)
    ok = io->dims[k][d] == dims[d];
  if (ok) return 1;
  size_t at = (size_t)snprintf(why, cap, "output %zu: got %s[", k,
                               type_name(io->elem[k]));
  for (int32_t d = 0; d < io->rank[k] && at < cap; d++)
    at += (size_t)snprintf(why + at, cap - at, "%s%lld", d ? "," : "",
                           (long long)io->dims[k][d]);
  if (at < cap)
    at += (size_t)snprintf(why + at, cap - at, "%s] want %s[",
                           io->rank[k] < 0 ? "?" : "", type_name(elem));
  for (uint32_t d = 0; d < rank && at < cap; d++)
    at += (size_t)snprintf(why + at, cap - at, "%s%lld", d ? "," : "",
                           (long long)dims[d]);
  if (at < cap) snprintf(why + at, cap - at, "]");
  return 0;
}

typedef struct totals {
  unsigned pass, fail, known_fail, unexpected, skipped;
} totals_t;

/* Op types of the model (for the per-operator table). */
static void op_types(const char *model, char types[][64], size_t *n) {
  *n = 0;
  char *data = NULL;
  size_t len = 0;
  if (!read_all(model, &data, &len)) return;
  nnmem_graph_t *g = NULL;
  if (nnmem_onnx_import(data, len, model, NULL, &g, NULL, NULL) == NNMEM_OK) {
    for (uint32_t i = 0; i < nnmem_graph_op_count(g) && *n < 16; i++) {
      nnmem_op_info_t op;
      nnmem_graph_op(g, i, &op);
      size_t k = 0;
      while (k < *n && strcmp(types[k], op.type) != 0)
        k++;
      if (k == *n) snprintf(types[(*n)++], 64, "%s", op.type);
    }
  }
  nnmem_graph_destroy(g);
  free(data);
}

static void run_one(const char *dir, const char *name, totals_t *t) {
  char model[1024], *data = NULL;
  size_t len = 0;
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  if (!read_all(model, &data, &len)) return;
  ox_io_t names, io;
  bound_inputs_t b;
  nnmem_onnx_report_t rep;
  nnmem_diag_t diag = {{0}};
  char why[512] = "";
  int pass = 1;
  b.n = 0;
  if (nnmem__onnx_input_names(data, len, &names, NULL) != NNMEM_OK ||
      names.non_tensor || !bind_inputs(dir, &names, &b)) {
    free_inputs(&b);
    nnmem__onnx_io_free(&names);
    free(data);
    t->skipped++;
    return;
  }
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.input_shapes = b.sh;
  cfg.n_input_shapes = b.n;
  nnmem_status_t st = nnmem__onnx_infer_outputs(
      data, len, &cfg, (const void *const *)b.pb, b.pb_len, &io, &rep, &diag);
  free_inputs(&b);
  free(data);
  if (st == NNMEM_OK && rep.n_unsupported) { /* not in the supported set */
    nnmem__onnx_io_free(&names);
    nnmem__onnx_io_free(&io);
    t->skipped++;
    return;
  }
  if (st != NNMEM_OK) {
    pass = 0;
    snprintf(why, sizeof why, "import failed: %s", diag.message);
  }
  for (size_t k = 0; pass && k < io.n_out; k++)
    pass = compare_output(dir, &io, k, why, sizeof why);
  nnmem__onnx_io_free(&names);
  if (st == NNMEM_OK) nnmem__onnx_io_free(&io);
  char types[16][64];
  size_t nt;
  op_types(model, types, &nt);
  for (size_t i = 0; i < nt; i++)
    count_op(types[i], pass);
  if (pass) {
    t->pass++;
    if (is_known(name)) printf("  now passes (remove from known): %s\n", name);
    return;
  }
  t->fail++;
  if (is_known(name)) {
    t->known_fail++;
    return;
  }
  t->unexpected++;
  printf("  UNEXPECTED FAILURE %s: %s\n", name, why);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_category(const char *cat, totals_t *t) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", root, cat);
  DIR *d = opendir(dir);
  if (!d) return;
  char *names[2048];
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 2048;)
    if (e->d_name[0] != '.') names[n++] = nnmem__strdup(e->d_name);
  closedir(d);
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
    if (names[i]) run_one(sub, names[i], t);
    free(names[i]);
  }
}

static int cmp_op(const void *a, const void *b) {
  return strcmp(((const op_count_t *)a)->type, ((const op_count_t *)b)->type);
}

static void test_conformance(void **state) {
  (void)state;
  totals_t t = {0};
  load_known();
  static const char *const cats[] = {"node", "pytorch-converted",
                                     "pytorch-operator", "simple"};
  for (size_t i = 0; i < 4; i++)
    run_category(cats[i], &t);
  qsort(ops, n_ops, sizeof *ops, cmp_op);
  printf("per operator (models containing it): pass/total\n");
  for (size_t i = 0; i < n_ops; i++)
    printf("  %-28s %u/%u\n", ops[i].type, ops[i].pass, ops[i].total);
  unsigned total = t.pass + t.fail;
  printf(
      "conformance: %u/%u models agree (%.1f%%), %u known failures, %u "
      "unexpected, %u skipped (unsupported operators); %zu operator "
      "types supported\n",
      t.pass, total, total ? 100.0 * t.pass / total : 0.0, t.known_fail,
      t.unexpected, t.skipped, nnmem_onnx_supported_count());
  assert_int_equal(t.unexpected, 0);
  assert_true(total > 0);
}

int main(void) {
  root = getenv("NNMEM_ONNX_TESTDATA");
  if (!root) root = "/usr/share/libonnx-testdata/data";
  struct stat sb;
  if (stat(root, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    printf("%s absent (Debian libonnx-testdata): skipped\n", root);
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_conformance)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
