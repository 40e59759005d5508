/* device.c - device descriptions: built-in presets, the JSON reader and the
 * checker (nnmem/fit.h; format in docs/fit.md, schema
 * docs/device.schema.json).
 *
 * A device is tiers (nearest the compute first; the last is host memory)
 * plus a compute rate:
 *
 *   {"name": "my-npu", "compute_rate": 4e12, "op_overhead": 5e-6,
 *    "conv_algorithm": "im2col",
 *    "tiers": [{"name": "sram", "capacity": 4194304, "alignment": 256,
 *               "bandwidth": 2e11, "link_bandwidth": 5e10},
 *              {"name": "ddr", "capacity": 4294967296, "bandwidth": 2.5e10,
 *               "link_bandwidth": 4e9},
 *              {"name": "host"}]}
 *
 * Tier names come from a fixed vocabulary with a class each: on-chip
 * (sram, l2, cache, scratchpad, vmem), device (hbm, ddr, lpddr, dram, gddr,
 * vram, ram) and host (host, nvme, disk, flash). Rules: 2..4 tiers; the last
 * is of the host class, the one before it of the device class (the main
 * tier the memory limit caps), any before that on-chip. Alignment defaults
 * by class and device kind: 256 (NPU), 128 (GPU), 64 (CPU) - the default
 * is the device's "alignment" member, else 256.
 *
 * Reading: 1. cJSON parse (a syntax error names the position);
 *          2. every member checked by name; unknown members are errors (a
 *             misspelt "capacty" must not silently mean "unlimited");
 *          3. numbers must be finite; capacities whole and >= 0;
 *          4. nnmem_device_check for the cross-member rules.
 * Every error names the file and the field: "dev.json: tiers[1].capacity:
 * must be > 0 (got -1)".
 * Complexity O(text). Thread-safety: each call is independent. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "nnmem/fit.h"

/* Byte counts a device may give: below 2^53, where JSON numbers are exact. */
#define NNMEM__DEVICE_BYTES_MAX (UINT64_C(1) << 53)

enum tier_class { CLASS_ONCHIP, CLASS_DEVICE, CLASS_HOST };

static const struct {
  const char *name;
  enum tier_class cls;
} known_tiers[] = {{"sram", CLASS_ONCHIP},  {"l2", CLASS_ONCHIP},
                   {"cache", CLASS_ONCHIP}, {"scratchpad", CLASS_ONCHIP},
                   {"vmem", CLASS_ONCHIP},  {"hbm", CLASS_DEVICE},
                   {"ddr", CLASS_DEVICE},   {"lpddr", CLASS_DEVICE},
                   {"dram", CLASS_DEVICE},  {"gddr", CLASS_DEVICE},
                   {"vram", CLASS_DEVICE},  {"ram", CLASS_DEVICE},
                   {"host", CLASS_HOST},    {"nvme", CLASS_HOST},
                   {"disk", CLASS_HOST},    {"flash", CLASS_HOST}};
#define N_KNOWN (sizeof known_tiers / sizeof known_tiers[0])

static int tier_class_of(const char *name) {
  for (size_t i = 0; i < N_KNOWN; i++)
    if (strcmp(known_tiers[i].name, name) == 0) return (int)known_tiers[i].cls;
  return -1;
}

static const char *const preset_names[] = {"edge-npu", "datacenter", "cpu"};

const char *const *nnmem_device_preset_names(size_t *count) {
  if (count) *count = sizeof preset_names / sizeof preset_names[0];
  return preset_names;
}

static void set_tier(nnmem_tier_t *t, const char *name, uint64_t cap,
                     uint64_t align, double bw, double link) {
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->capacity = cap;
  t->alignment = align;
  t->bandwidth = bw;
  t->link_bandwidth = link;
}

nnmem_status_t nnmem_device_preset(const char *name, nnmem_device_t *d) {
  if (!name || !d) return NNMEM_ERR_INVALID;
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "%s", name);
  if (strcmp(name, "edge-npu") == 0) {
    /* a few MB of on-chip SRAM, 4 GiB LPDDR, host over a slow link */
    d->n_tiers = 3;
    set_tier(&d->tiers[0], "sram", 4u << 20, 256, 200e9, 25e9);
    set_tier(&d->tiers[1], "lpddr", 4ull << 30, 256, 25e9, 4e9);
    set_tier(&d->tiers[2], "host", 0, 256, 10e9, 0);
    d->compute_rate = 4e12;
    d->op_overhead_s = 5e-6;
    d->conv = NNMEM_CONV_IM2COL;
  } else if (strcmp(name, "datacenter") == 0) {
    /* a data-centre accelerator: 40 MiB on-chip, 80 GiB HBM, PCIe host */
    d->n_tiers = 3;
    set_tier(&d->tiers[0], "sram", 40u << 20, 128, 6e12, 3e12);
    set_tier(&d->tiers[1], "hbm", 80ull << 30, 128, 2e12, 25e9);
    set_tier(&d->tiers[2], "host", 0, 128, 50e9, 0);
    d->compute_rate = 100e12;
    d->op_overhead_s = 4e-6;
    d->conv = NNMEM_CONV_DIRECT;
  } else if (strcmp(name, "cpu") == 0) {
    /* a CPU: RAM is the device memory, storage the far tier */
    d->n_tiers = 2;
    set_tier(&d->tiers[0], "ram", 16ull << 30, 64, 40e9, 3e9);
    set_tier(&d->tiers[1], "nvme", 0, 64, 3e9, 0);
    d->compute_rate = 1e12;
    d->op_overhead_s = 1e-6;
    d->conv = NNMEM_CONV_IM2COL;
  } else {
    return NNMEM_ERR_NOT_FOUND;
  }
  return NNMEM_OK;
}

uint32_t nnmem_device_main_tier(const nnmem_device_t *d) {
  return d && d->n_tiers >= 2 ? d->n_tiers - 2 : 0;
}

static int good_rate(double v) {
  return isfinite(v) && v > 0;
}

nnmem_status_t nnmem_device_check(const nnmem_device_t *d, nnmem_diag_t *diag) {
  if (!d) return nnmem__diag(diag, NNMEM_ERR_INVALID, "device: NULL");
  if (d->n_tiers < 2 || d->n_tiers > NNMEM_DEVICE_MAX_TIERS)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tiers: %u tiers; a device has 2 to %d (the last is "
                       "host memory)",
                       d->n_tiers, NNMEM_DEVICE_MAX_TIERS);
  if (!good_rate(d->compute_rate))
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "compute_rate: must be > 0");
  if (!isfinite(d->op_overhead_s) || d->op_overhead_s < 0)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "op_overhead: must be >= 0");
  for (uint32_t i = 0; i < d->n_tiers; i++) {
    const nnmem_tier_t *t = &d->tiers[i];
    int last = i + 1 == d->n_tiers, cls = tier_class_of(t->name);
    int want = last                  ? CLASS_HOST
               : i + 2 == d->n_tiers ? CLASS_DEVICE
                                     : CLASS_ONCHIP;
    if (cls < 0)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tiers[%u].name: unknown tier '%s' (known: sram, l2, "
                         "cache, scratchpad, vmem, hbm, ddr, lpddr, dram, "
                         "gddr, vram, ram, host, nvme, disk, flash)",
                         i, t->name);
    if (cls != want)
      return nnmem__diag(
          diag, NNMEM_ERR_INVALID,
          "tiers[%u].name: '%s' cannot be tier %u of %u (the last tier is "
          "host memory, the one before it device memory, any earlier "
          "on-chip)",
          i, t->name, i, d->n_tiers);
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(d->tiers[j].name, t->name) == 0)
        return nnmem__diag(diag, NNMEM_ERR_INVALID,
                           "tiers[%u].name: '%s' is also tiers[%u]", i, t->name,
                           j);
    if (!last && t->capacity == 0)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tiers[%u].capacity: must be > 0 ('%s' is not the "
                         "last tier)",
                         i, t->name);
    if (t->capacity >= NNMEM__DEVICE_BYTES_MAX)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tiers[%u].capacity: %llu bytes is 2^53 or more (a "
                         "fitted plan stores byte counts as JSON numbers, "
                         "exact only below 2^53)",
                         i, (unsigned long long)t->capacity);
    if (!nnmem__is_pow2(t->alignment) ||
        t->alignment >= NNMEM__DEVICE_BYTES_MAX)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tiers[%u].alignment: %llu is not a power of two "
                         "below 2^53",
                         i, (unsigned long long)t->alignment);
    if (!good_rate(t->bandwidth))
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tiers[%u].bandwidth: must be > 0", i);
    if (!last && !good_rate(t->link_bandwidth))
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tiers[%u].link_bandwidth: must be > 0", i);
  }
  return NNMEM_OK;
}

/* ---- JSON reader ----------------------------------------------------------
 */

typedef struct reader {
  const char *name;
  nnmem_diag_t *diag;
  char field[64]; /* the field being read, for messages */
} reader_t;

static nnmem_status_t field_error(reader_t *r, const char *fmt, double v) {
  char what[200];
  snprintf(what, sizeof what, fmt, v);
  return nnmem__diag(r->diag, NNMEM_ERR_INVALID, "%s: %s: %s", r->name,
                     r->field, what);
}

/* A finite number > 0 (or >= 0 with `zero_ok`). */
static nnmem_status_t read_rate(reader_t *r, const cJSON *v, int zero_ok,
                                double *out) {
  if (!cJSON_IsNumber(v))
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID, "%s: %s: must be a number",
                       r->name, r->field);
  double x = v->valuedouble;
  if (!isfinite(x) || x < 0 || (!zero_ok && x == 0))
    return field_error(
        r, zero_ok ? "must be >= 0 (got %g)" : "must be > 0 (got %g)", x);
  *out = x;
  return NNMEM_OK;
}

/* A whole byte count 0 <= v < 2^53 (a negative capacity is named): the
 * fitted plan JSON carries the capacities and alignments, and a JSON number
 * is exact only below 2^53 (the plan reader, exec_read.c, refuses more). */
static nnmem_status_t read_bytes(reader_t *r, const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v))
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: %s: must be a number of bytes", r->name, r->field);
  double x = v->valuedouble;
  if (!isfinite(x) || x < 0)
    return field_error(r, "must be >= 0 bytes (got %g)", x);
  if (x != floor(x) || x >= (double)NNMEM__DEVICE_BYTES_MAX)
    return field_error(r, "must be a whole number of bytes below 2^53 (got %g)",
                       x);
  *out = (uint64_t)x;
  return NNMEM_OK;
}

static nnmem_status_t read_tier(reader_t *r, const cJSON *o, uint32_t i,
                                uint64_t def_align, nnmem_tier_t *t) {
  memset(t, 0, sizeof *t);
  t->alignment = def_align;
  int have_cap = 0, have_name = 0;
  if (!cJSON_IsObject(o))
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: tiers[%u]: must be an object", r->name, i);
  for (const cJSON *m = o->child; m; m = m->next) {
    nnmem_status_t st = NNMEM_OK;
    snprintf(r->field, sizeof r->field, "tiers[%u].%.40s", i, m->string);
    if (strcmp(m->string, "name") == 0) {
      if (!cJSON_IsString(m) || !m->valuestring[0] ||
          strlen(m->valuestring) >= sizeof t->name)
        return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                           "%s: %s: must be a tier name (a string)", r->name,
                           r->field);
      snprintf(t->name, sizeof t->name, "%s", m->valuestring);
      have_name = 1;
      if (tier_class_of(t->name) < 0)
        return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                           "%s: %s: unknown tier '%s' (known: sram, l2, "
                           "cache, scratchpad, vmem, hbm, ddr, lpddr, dram, "
                           "gddr, vram, ram, host, nvme, disk, flash)",
                           r->name, r->field, t->name);
    } else if (strcmp(m->string, "capacity") == 0) {
      st = read_bytes(r, m, &t->capacity);
      have_cap = 1;
    } else if (strcmp(m->string, "alignment") == 0) {
      st = read_bytes(r, m, &t->alignment);
      if (st == NNMEM_OK && !nnmem__is_pow2(t->alignment))
        st = field_error(r, "must be a power of two (got %g)",
                         (double)t->alignment);
    } else if (strcmp(m->string, "bandwidth") == 0) {
      st = read_rate(r, m, 0, &t->bandwidth);
    } else if (strcmp(m->string, "link_bandwidth") == 0) {
      st = read_rate(r, m, 0, &t->link_bandwidth);
    } else {
      return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                         "%s: %s: unknown field (known: name, capacity, "
                         "alignment, bandwidth, link_bandwidth)",
                         r->name, r->field);
    }
    if (st != NNMEM_OK) return st;
  }
  if (!have_name)
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: tiers[%u].name: missing", r->name, i);
  if (!have_cap && tier_class_of(t->name) != CLASS_HOST)
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: tiers[%u].capacity: missing (tier '%s')", r->name,
                       i, t->name);
  if (t->bandwidth == 0) t->bandwidth = 10e9; /* host default */
  return NNMEM_OK;
}

static nnmem_status_t read_tiers(reader_t *r, const cJSON *a,
                                 uint64_t def_align, nnmem_device_t *d) {
  if (!cJSON_IsArray(a))
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: tiers: must be an array of tier objects", r->name);
  int n = cJSON_GetArraySize(a);
  if (n < 2 || n > NNMEM_DEVICE_MAX_TIERS)
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: tiers: %d tiers; a device has 2 to %d (the last "
                       "is host memory)",
                       r->name, n, NNMEM_DEVICE_MAX_TIERS);
  d->n_tiers = (uint32_t)n;
  uint32_t i = 0;
  for (const cJSON *t = a->child; t; t = t->next, i++) {
    nnmem_status_t st = read_tier(r, t, i, def_align, &d->tiers[i]);
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

static nnmem_status_t read_conv(reader_t *r, const cJSON *m,
                                nnmem_device_t *d) {
  if (cJSON_IsString(m) && strcmp(m->valuestring, "im2col") == 0)
    d->conv = NNMEM_CONV_IM2COL;
  else if (cJSON_IsString(m) && strcmp(m->valuestring, "direct") == 0)
    d->conv = NNMEM_CONV_DIRECT;
  else
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: conv_algorithm: must be \"direct\" or \"im2col\"",
                       r->name);
  return NNMEM_OK;
}

static nnmem_status_t read_device(reader_t *r, const cJSON *root,
                                  nnmem_device_t *d) {
  if (!cJSON_IsObject(root))
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: a device description is a JSON object", r->name);
  uint64_t def_align = 256;
  const cJSON *al = cJSON_GetObjectItemCaseSensitive(root, "alignment");
  snprintf(r->field, sizeof r->field, "alignment");
  if (al) {
    nnmem_status_t st = read_bytes(r, al, &def_align);
    if (st == NNMEM_OK && !nnmem__is_pow2(def_align))
      st = field_error(r, "must be a power of two (got %g)", (double)def_align);
    if (st != NNMEM_OK) return st;
  }
  const cJSON *tiers = NULL;
  int have_rate = 0;
  for (const cJSON *m = root->child; m; m = m->next) {
    nnmem_status_t st = NNMEM_OK;
    snprintf(r->field, sizeof r->field, "%.60s", m->string);
    if (strcmp(m->string, "name") == 0) {
      if (!cJSON_IsString(m))
        return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                           "%s: name: must be a string", r->name);
      snprintf(d->name, sizeof d->name, "%s", m->valuestring);
    } else if (strcmp(m->string, "compute_rate") == 0) {
      st = read_rate(r, m, 0, &d->compute_rate);
      have_rate = 1;
    } else if (strcmp(m->string, "op_overhead") == 0) {
      st = read_rate(r, m, 1, &d->op_overhead_s);
    } else if (strcmp(m->string, "conv_algorithm") == 0) {
      st = read_conv(r, m, d);
    } else if (strcmp(m->string, "tiers") == 0) {
      tiers = m;
    } else if (strcmp(m->string, "alignment") != 0) {
      return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                         "%s: %s: unknown field (known: name, compute_rate, "
                         "op_overhead, conv_algorithm, alignment, tiers)",
                         r->name, r->field);
    }
    if (st != NNMEM_OK) return st;
  }
  if (!have_rate)
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID,
                       "%s: compute_rate: missing (FLOP/s)", r->name);
  if (!tiers)
    return nnmem__diag(r->diag, NNMEM_ERR_INVALID, "%s: tiers: missing",
                       r->name);
  return read_tiers(r, tiers, def_align, d);
}

nnmem_status_t nnmem_device_parse_json(const char *data, size_t len,
                                       const char *name, nnmem_device_t *out,
                                       nnmem_diag_t *diag) {
  if (!data || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_device_parse_json: NULL argument");
  reader_t r = {name ? name : "device JSON", diag, {0}};
  memset(out, 0, sizeof *out);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, 0);
  if (!root) {
    size_t pos = end && end >= data ? (size_t)(end - data) : 0;
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "%s: not valid JSON (near byte %zu)", r.name, pos);
  }
  nnmem_device_t d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "device");
  nnmem_status_t st = read_device(&r, root, &d);
  cJSON_Delete(root);
  if (st != NNMEM_OK) return st;
  nnmem_diag_t inner = {{0}};
  st = nnmem_device_check(&d, &inner);
  if (st != NNMEM_OK)
    return nnmem__diag(diag, st, "%s: %s", r.name, inner.message);
  *out = d;
  return NNMEM_OK;
}
