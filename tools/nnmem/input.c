/* input.c - how every command reads its input files: "-" is standard
 * input, a size limit (--max-input-size) holds for files, pipes and
 * devices alike, and the format is decided by the content and checked
 * against the extension.
 *
 *   1. read the whole input through nnmem_file_read_limited (the library
 *      refuses a regular file over the limit by its size, and stops reading
 *      a pipe or /dev/zero after limit + 1 bytes);
 *   2. classify the first bytes (sniff): compressed (gzip, zip, xz, zstd,
 *      bzip2 magic), binary (a control byte first, or a NUL in the first
 *      4 KiB: an ONNX protobuf when it starts with a ModelProto field tag,
 *      else unknown binary), JSON (first non-blank byte '{' or '['), CSV
 *      (other text), empty;
 *   3. the extension (.onnx, .json, .csv) names the expected format; a
 *      different sniffed format is an error saying what the file looks
 *      like ("this looks like an ONNX model (protobuf), not CSV") instead
 *      of a parser's message about byte 1 (binary content named .onnx
 *      still goes to the ONNX parser, which says what is wrong with it). No or
 * another extension (and
 *      "-"): the sniffed format is used. Empty and undecidable content goes
 *      to the expected parser, whose messages cover it.
 * Also here: the size options several commands parse alike
 * (--max-input-size, --align, --capacity), with the same messages.
 * Thread-safety: single-threaded program. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "units.h"

static int ends_with(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcasecmp(path + n - e, ext) == 0;
}

cli_format_t cli_format_of_name(const char *path) {
  if (!path || strcmp(path, "-") == 0) return CLI_FMT_UNKNOWN;
  if (ends_with(path, ".onnx")) return CLI_FMT_ONNX;
  if (ends_with(path, ".json")) return CLI_FMT_JSON;
  if (ends_with(path, ".csv")) return CLI_FMT_CSV;
  return CLI_FMT_UNKNOWN;
}

static const char *format_name(cli_format_t f) {
  switch (f) {
    case CLI_FMT_ONNX:
      return "an ONNX model (protobuf)";
    case CLI_FMT_JSON:
      return "a JSON document";
    case CLI_FMT_CSV:
      return "CSV text";
    case CLI_FMT_COMPRESSED:
      return "a compressed file; decompress it first";
    case CLI_FMT_BINARY:
      return "a binary file";
    default:
      return "empty";
  }
}

static const char *short_name(cli_format_t f) {
  return f == CLI_FMT_ONNX   ? "an ONNX model"
         : f == CLI_FMT_JSON ? "a JSON graph"
                             : "a CSV problem";
}

/* ModelProto's field tags (field << 3 | wire type): ir_version 1 (varint),
 * producer_name 2, producer_version 3, domain 4, model_version 5 (varint),
 * doc_string 6, graph 7, opset_import 8, metadata_props 14. */
static int onnx_tag(unsigned char b) {
  static const unsigned char tags[] = {0x08, 0x12, 0x1a, 0x22, 0x28,
                                       0x32, 0x3a, 0x42, 0x72};
  return memchr(tags, b, sizeof tags) != NULL;
}

cli_format_t cli_sniff(const char *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b) return CLI_FMT_COMPRESSED;
  if (len >= 4 && memcmp(p, "PK\x03\x04", 4) == 0) return CLI_FMT_COMPRESSED;
  if (len >= 6 && memcmp(p,
                         "\xfd"
                         "7zXZ\0",
                         6) == 0)
    return CLI_FMT_COMPRESSED;
  if (len >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0)
    return CLI_FMT_COMPRESSED;
  if (len >= 3 && memcmp(p, "BZh", 3) == 0) return CLI_FMT_COMPRESSED;
  size_t scan = len < 4096 ? len : 4096, i = 0;
  /* binary: starts with a control byte, or holds a NUL (text may hold a
   * stray control byte, e.g. an escape sequence in an id) */
  int binary = len && p[0] < 0x20 && !strchr("\t\n\r\f", p[0]);
  binary = binary || memchr(p, 0, scan) != NULL;
  if (binary) return onnx_tag(p[0]) ? CLI_FMT_ONNX : CLI_FMT_BINARY;
  if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) i = 3; /* UTF-8 BOM */
  while (i < len && strchr(" \t\r\n", p[i]))
    i++;
  if (i == len) return CLI_FMT_UNKNOWN;
  return p[i] == '{' || p[i] == '[' ? CLI_FMT_JSON : CLI_FMT_CSV;
}

/* Step 3: the format to parse `in` as, or an error. */
static nnmem_status_t decide(cli_input_t *in, nnmem_diag_t *diag) {
  cli_format_t named = cli_format_of_name(in->path);
  cli_format_t seen = cli_sniff(in->data, in->len);
  if (seen == CLI_FMT_COMPRESSED ||
      (seen == CLI_FMT_BINARY && named != CLI_FMT_ONNX))
    return nnmem__diag(diag, NNMEM_ERR_PARSE, "%s: this looks like %s, not %s",
                       in->name, format_name(seen),
                       named ? short_name(named)
                             : "an ONNX model, a JSON graph or a CSV problem");
  if (named && seen && seen != CLI_FMT_BINARY && seen != named) {
    /* text that is not CSV-like (no comma on its first line) still goes to
     * the named parser: its message about the bad text is better */
    const char *nl = memchr(in->data, '\n', in->len);
    size_t first = nl ? (size_t)(nl - in->data) : in->len;
    int csv_like = memchr(in->data, ',', first) != NULL;
    if (seen != CLI_FMT_CSV || csv_like)
      return nnmem__diag(diag, NNMEM_ERR_PARSE,
                         "%s: this looks like %s, not %s", in->name,
                         format_name(seen), short_name(named));
  }
  in->format = named ? named : seen ? seen : CLI_FMT_CSV;
  return NNMEM_OK;
}

nnmem_status_t cli_input_read(cli_input_t *in, const char *path,
                              uint64_t max_bytes, nnmem_diag_t *diag) {
  memset(in, 0, sizeof *in);
  in->path = path;
  in->name = strcmp(path, "-") == 0 ? "standard input" : path;
  nnmem_status_t st =
      nnmem_file_read_limited(path, max_bytes, &in->data, &in->len, diag);
  if (st == NNMEM_OK) st = decide(in, diag);
  if (st != NNMEM_OK) cli_input_free(in);
  return st;
}

void cli_input_free(cli_input_t *in) {
  free(in->data);
  in->data = NULL;
  in->len = 0;
}

int cli_parse_align(const char *cmd, const char *v, uint64_t *out) {
  const char *why = NULL;
  uint64_t n = 0;
  if (cli_parse_size(v, &n, &why) != 0)
    return cli_usage_error(cmd, "bad --align '%s': %s", v, why);
  if (!nnmem__is_pow2(n))
    return cli_usage_error(cmd, "bad --align '%s': must be a power of two >= 1",
                           v);
  *out = n;
  return 0;
}

int cli_parse_capacity(const char *cmd, const char *v, uint64_t *out) {
  const char *why = NULL;
  uint64_t n = 0;
  if (cli_parse_size(v, &n, &why) != 0)
    return cli_usage_error(cmd, "bad --capacity '%s': %s", v, why);
  if (n == 0)
    return cli_usage_error(cmd, "bad --capacity '%s': must be > 0", v);
  *out = n;
  return 0;
}

int cli_parse_max_input(const char *cmd, const char *v, uint64_t *out) {
  const char *why = NULL;
  if (cli_parse_size(v, out, &why) != 0 || *out == 0)
    return cli_usage_error(cmd, "bad --max-input-size '%s': %s", v,
                           why ? why : "must be > 0");
  return 0;
}

nnmem_status_t cli_read_csv(const char *path, uint64_t max_bytes,
                            nnmem_csv_t **out, nnmem_diag_t *diag) {
  cli_input_t in;
  *out = NULL;
  nnmem_status_t st = cli_input_read(&in, path, max_bytes, diag);
  if (st != NNMEM_OK) return st;
  if (in.format != CLI_FMT_CSV)
    st = nnmem__diag(diag, NNMEM_ERR_PARSE, "%s: this looks like %s, not %s",
                     in.name, format_name(in.format), short_name(CLI_FMT_CSV));
  else
    st = nnmem_csv_parse(in.data, in.len, in.name, out, diag);
  cli_input_free(&in);
  return st;
}
