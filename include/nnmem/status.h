/* nnmem/status.h - status codes and diagnostics shared by every module.
 *
 * Every fallible function returns nnmem_status_t: NNMEM_OK (0) on success, a
 * negative code otherwise. Functions that parse user input also take an
 * optional nnmem_diag_t* that receives one human-readable message naming what
 * went wrong and where (file:line, node name). The library never prints. */
#ifndef NNMEM_STATUS_H
#define NNMEM_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "nnmem/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, description). One list generates the enum and the names. */
#define NNMEM_STATUS_MAP(X)                                       \
  X(OK, 0, "ok")                                                  \
  X(ERR_INVALID, -1, "invalid argument")                          \
  X(ERR_NOMEM, -2, "out of memory")                               \
  X(ERR_PARSE, -3, "malformed input")                             \
  X(ERR_IO, -4, "input/output error")                             \
  X(ERR_OVERFLOW, -5, "size or count overflows")                  \
  X(ERR_NOT_FOUND, -6, "not found")                               \
  X(ERR_DUPLICATE, -7, "duplicate name or id")                    \
  X(ERR_CYCLE, -8, "graph has a cycle")                           \
  X(ERR_CAPACITY, -9, "plan does not fit the capacity")           \
  X(ERR_CONFLICT, -10, "plan is invalid")                         \
  X(ERR_UNSUPPORTED, -11, "unsupported")                          \
  X(ERR_TIMEOUT, -12, "time limit reached")                       \
  X(ERR_STATE, -13, "object is in the wrong state for this call") \
  X(ERR_DENIED, -14, "denied: the caller's domain has no right to it")

typedef enum nnmem_status {
#define NNMEM_STATUS_ENUM_(name, value, text) NNMEM_##name = value,
  NNMEM_STATUS_MAP(NNMEM_STATUS_ENUM_)
#undef NNMEM_STATUS_ENUM_
} nnmem_status_t;

/* Returns a static description of `s` ("ok", "invalid argument", ...);
 * "unknown status" for values outside the list. Thread-safe. */
NNMEM_API const char *nnmem_status_str(nnmem_status_t s);

/* Returns the symbolic name of `s` ("NNMEM_ERR_PARSE"). Thread-safe. */
NNMEM_API const char *nnmem_status_name(nnmem_status_t s);

/* Diagnostic message filled by functions that validate user input. Callers
 * may pass NULL when they only want the status. */
#define NNMEM_DIAG_MAX 512
typedef struct nnmem_diag {
  char message[NNMEM_DIAG_MAX];
} nnmem_diag_t;

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_STATUS_H */
