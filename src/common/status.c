/* status.c - names and descriptions of nnmem_status_t, generated from the
 * NNMEM_STATUS_MAP X-macro list. Thread-safe (static data only). */
#include "nnmem/status.h"

const char *nnmem_status_str(nnmem_status_t s) {
  switch (s) {
#define NNMEM_STATUS_STR_(name, value, text) \
  case NNMEM_##name:                         \
    return text;
    NNMEM_STATUS_MAP(NNMEM_STATUS_STR_)
#undef NNMEM_STATUS_STR_
  }
  return "unknown status";
}

const char *nnmem_status_name(nnmem_status_t s) {
  switch (s) {
#define NNMEM_STATUS_NAME_(name, value, text) \
  case NNMEM_##name:                          \
    return "NNMEM_" #name;
    NNMEM_STATUS_MAP(NNMEM_STATUS_NAME_)
#undef NNMEM_STATUS_NAME_
  }
  return "NNMEM_UNKNOWN";
}
