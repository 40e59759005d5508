/* nnmem/export.h - NNMEM_API marks the public functions of libnnmem.
 *
 * The library is compiled with hidden visibility by default; only
 * declarations marked NNMEM_API are exported from libnnmem.so. Internal
 * functions (nnmem__*) and generated code are never exported. Code that
 * links the static library is unaffected. */
#ifndef NNMEM_EXPORT_H
#define NNMEM_EXPORT_H

#if defined(_WIN32)
#define NNMEM_API
#elif defined(__GNUC__) || defined(__clang__)
#define NNMEM_API __attribute__((visibility("default")))
#else
#define NNMEM_API
#endif

#endif /* NNMEM_EXPORT_H */
