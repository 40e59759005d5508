/* units.h - parsing of command-line numbers and sizes, and human formatting
 * of byte counts, for the nnmem CLI (not part of the library). */
#ifndef NNMEM_CLI_UNITS_H
#define NNMEM_CLI_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Parses a byte size: digits with an optional fraction and an optional unit
 * (case-insensitive): B; K, M, G, T, KiB, MiB, GiB, TiB = powers of 1024;
 * KB, MB, GB, TB = powers of 1000. "1.5M" = 1572864. The result must be a
 * whole number of bytes that fits 64 bits. Returns 0 on success, -1 with a
 * reason in `why` (static text) otherwise. */
int cli_parse_size(const char *s, uint64_t *out, const char **why);

/* Parses a plain unsigned decimal integer (no sign, no unit) <= max. */
int cli_parse_uint(const char *s, uint64_t max, uint64_t *out,
                   const char **why);

/* Parses a non-negative finite decimal number of seconds. */
int cli_parse_seconds(const char *s, double *out, const char **why);

/* "97.5 MiB" (or "512 B" below 1 KiB) into buf. Returns buf. */
char *cli_fmt_human(uint64_t bytes, char *buf, size_t cap);

/* "102,228,128" into buf. Returns buf. */
char *cli_fmt_grouped(uint64_t v, char *buf, size_t cap);

/* "97.5 MiB (102,228,128 B)" into buf; just "512 B" below 1 KiB. */
char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Ratio a/b as "1.000x"; "-" when b is 0 (and "1.000x" when both are 0). */
char *cli_fmt_ratio(uint64_t a, uint64_t b, char *buf, size_t cap);

#endif /* NNMEM_CLI_UNITS_H */
