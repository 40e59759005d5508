/* dtype.c - element types and tensor kinds: sizes, names and parsing.
 *
 * Algorithm:
 *   1. One static table per enum maps each value to its canonical name and
 *      (for dtypes) its element size in bytes.
 *   2. Parsing compares case-insensitively against the canonical names and
 *      then against a short alias table ("f32", "fp16", "half", "float", ...).
 *
 * Invariants: the tables have exactly NNMEM_DTYPE_COUNT_ /
 * NNMEM_TENSOR_KIND_COUNT_ rows in enum order (checked by _Static_assert).
 * Complexity: O(number of names) per parse, O(1) otherwise.
 * Thread-safety: static read-only data only; safe from any thread. */
#include <ctype.h>
#include <string.h>

#include "nnmem/graph.h"

typedef struct dtype_row {
  const char *name;
  size_t size;
} dtype_row_t;

static const dtype_row_t dtype_rows[] = {
    {"undefined", 0}, {"float32", 4}, {"float16", 2}, {"bfloat16", 2},
    {"float64", 8},   {"int8", 1},    {"uint8", 1},   {"int16", 2},
    {"uint16", 2},    {"int32", 4},   {"uint32", 4},  {"int64", 8},
    {"uint64", 8},    {"bool", 1},    {"string", 16},
};
_Static_assert(sizeof dtype_rows / sizeof dtype_rows[0] == NNMEM_DTYPE_COUNT_,
               "dtype table out of sync with nnmem_dtype_t");

typedef struct dtype_alias {
  const char *alias;
  nnmem_dtype_t dtype;
} dtype_alias_t;

static const dtype_alias_t dtype_aliases[] = {
    {"f32", NNMEM_DTYPE_FLOAT32},    {"fp32", NNMEM_DTYPE_FLOAT32},
    {"float", NNMEM_DTYPE_FLOAT32},  {"single", NNMEM_DTYPE_FLOAT32},
    {"f16", NNMEM_DTYPE_FLOAT16},    {"fp16", NNMEM_DTYPE_FLOAT16},
    {"half", NNMEM_DTYPE_FLOAT16},   {"bf16", NNMEM_DTYPE_BFLOAT16},
    {"f64", NNMEM_DTYPE_FLOAT64},    {"fp64", NNMEM_DTYPE_FLOAT64},
    {"double", NNMEM_DTYPE_FLOAT64}, {"i8", NNMEM_DTYPE_INT8},
    {"u8", NNMEM_DTYPE_UINT8},       {"i16", NNMEM_DTYPE_INT16},
    {"u16", NNMEM_DTYPE_UINT16},     {"i32", NNMEM_DTYPE_INT32},
    {"int", NNMEM_DTYPE_INT32},      {"u32", NNMEM_DTYPE_UINT32},
    {"i64", NNMEM_DTYPE_INT64},      {"long", NNMEM_DTYPE_INT64},
    {"u64", NNMEM_DTYPE_UINT64},     {"boolean", NNMEM_DTYPE_BOOL},
};

static const char *const kind_names[] = {
    "activation", "input", "output", "weight", "constant", "workspace",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] ==
                   NNMEM_TENSOR_KIND_COUNT_,
               "kind table out of sync with nnmem_tensor_kind_t");

static int name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
  }
  return *a == *b;
}

size_t nnmem_dtype_size(nnmem_dtype_t t) {
  if ((unsigned)t >= NNMEM_DTYPE_COUNT_) return 0;
  return dtype_rows[t].size;
}

const char *nnmem_dtype_name(nnmem_dtype_t t) {
  if ((unsigned)t >= NNMEM_DTYPE_COUNT_) return "unknown";
  return dtype_rows[t].name;
}

nnmem_status_t nnmem_dtype_parse(const char *name, nnmem_dtype_t *out) {
  if (!name || !out) return NNMEM_ERR_INVALID;
  /* "undefined" is a name, not a type one can parse into a tensor. */
  for (int i = 1; i < NNMEM_DTYPE_COUNT_; i++) {
    if (name_eq(name, dtype_rows[i].name)) {
      *out = (nnmem_dtype_t)i;
      return NNMEM_OK;
    }
  }
  for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++) {
    if (name_eq(name, dtype_aliases[i].alias)) {
      *out = dtype_aliases[i].dtype;
      return NNMEM_OK;
    }
  }
  return NNMEM_ERR_NOT_FOUND;
}

const char *nnmem_tensor_kind_name(nnmem_tensor_kind_t k) {
  if ((unsigned)k >= NNMEM_TENSOR_KIND_COUNT_) return "unknown";
  return kind_names[k];
}

nnmem_status_t nnmem_tensor_kind_parse(const char *name,
                                       nnmem_tensor_kind_t *out) {
  if (!name || !out) return NNMEM_ERR_INVALID;
  for (int i = 0; i < NNMEM_TENSOR_KIND_COUNT_; i++) {
    if (name_eq(name, kind_names[i])) {
      *out = (nnmem_tensor_kind_t)i;
      return NNMEM_OK;
    }
  }
  return NNMEM_ERR_NOT_FOUND;
}
