/* onnx_wire.c - a pre-pass over the protobuf wire format that bounds how
 * deeply messages nest before protobuf-c (which unpacks nested messages
 * recursively) sees the data, so a crafted file cannot exhaust the stack.
 *
 * Algorithm: walk the buffer as a ModelProto; for each length-delimited
 * field that our schema (onnx.proto) declares as a message, walk its bytes
 * as that message type one level deeper. Only the message-typed fields are
 * followed, so large raw tensor data is skipped in O(1). Depth beyond
 * OX_MAX_WIRE_DEPTH is reported; malformed data is left to protobuf-c
 * (the scan just stops).
 * Complexity: O(bytes of message fields) time, O(depth) stack (bounded).
 * Thread-safety: pure. */
#include "import/onnx/onnx_internal.h"

enum {
  W_MODEL,
  W_GRAPH,
  W_NODE,
  W_ATTR,
  W_VALUE_INFO,
  W_TYPE,
  W_TYPE_TENSOR, /* TypeProto.Tensor and .SparseTensor */
  W_TYPE_ELEM,   /* TypeProto.Sequence and .Optional (elem_type = 1) */
  W_TYPE_MAP,
  W_TENSOR,
  W_SPARSE,
  W_LEAF /* messages without message fields we follow */
};

/* The message type of `field` inside a message of type `msg`, or -1. */
static int child(int msg, uint64_t field) {
  switch (msg) {
    case W_MODEL:
      return field == 7 ? W_GRAPH : field == 8 || field == 14 ? W_LEAF : -1;
    case W_GRAPH:
      if (field == 1) return W_NODE;
      if (field == 5) return W_TENSOR;
      if (field == 15) return W_SPARSE;
      return field >= 11 && field <= 13 ? W_VALUE_INFO : -1;
    case W_NODE:
      return field == 5 ? W_ATTR : -1;
    case W_ATTR:
      if (field == 5 || field == 10) return W_TENSOR;
      if (field == 6 || field == 11) return W_GRAPH;
      if (field == 22 || field == 23) return W_SPARSE;
      return field == 14 || field == 15 ? W_TYPE : -1;
    case W_VALUE_INFO:
      return field == 2 ? W_TYPE : -1;
    case W_TYPE:
      if (field == 1 || field == 8) return W_TYPE_TENSOR;
      if (field == 4 || field == 9) return W_TYPE_ELEM;
      return field == 5 ? W_TYPE_MAP : -1;
    case W_TYPE_TENSOR:
      return field == 2 ? W_LEAF : -1;
    case W_TYPE_ELEM:
      return field == 1 ? W_TYPE : -1;
    case W_TYPE_MAP:
      return field == 2 ? W_TYPE : -1;
    case W_TENSOR:
      return field == 3 || field == 13 ? W_LEAF : -1;
    case W_SPARSE:
      return field == 1 || field == 2 ? W_TENSOR : -1;
    default:
      return -1;
  }
}

/* Reads a varint; 0 when truncated. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 1;
    }
  }
  return 0;
}

/* 1 when nesting exceeds the limit; 0 otherwise (also on malformed data). */
static int too_deep(const uint8_t *p, const uint8_t *end, int msg, int depth) {
  if (depth > OX_MAX_WIRE_DEPTH) return 1;
  while (p < end) {
    uint64_t key, len;
    if (!varint(&p, end, &key)) return 0;
    switch (key & 7) {
      case 0:
        if (!varint(&p, end, &len)) return 0;
        break;
      case 1:
        if (end - p < 8) return 0;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return 0;
        p += 4;
        break;
      case 2: {
        if (!varint(&p, end, &len) || len > (uint64_t)(end - p)) return 0;
        int sub = child(msg, key >> 3);
        if (sub >= 0 && sub != W_LEAF && too_deep(p, p + len, sub, depth + 1))
          return 1;
        p += len;
        break;
      }
      default:
        return 0;
    }
  }
  return 0;
}

int nnmem__onnx_wire_too_deep(const void *data, size_t len) {
  const uint8_t *p = data;
  return p ? too_deep(p, p + len, W_MODEL, 0) : 0;
}
