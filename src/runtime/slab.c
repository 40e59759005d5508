/* slab.c - size-class slabs for small tensors.
 *
 * Classes: multiples of 16 up to 128 B, then four classes per power of two
 * (160, 192, 224, 256, 320, ...) up to small_max (default 1 MiB); each is
 * rounded up to the granule and duplicates are dropped (at most 12.5% + one
 * granule of internal waste). A slab of class c is one backend region of
 * next_pow2(max(64 KiB, 4c)) bytes aligned to its own length; its blocks are
 * base + i*c. Free slots of a slab sit on an out-of-band stack of indices.
 *
 *   class k: partial list  slab <-> slab <-> ...   (slabs with a free slot)
 *   slab:    base | c | c | c | ... |   free stack [i3 i0 i7 ...]
 *
 * Steps of alloc(size, align): 1. pick the smallest class >= size whose
 * size is a multiple of align (sizes above the largest class go to a direct
 * backend region); 2. take the partial list head, else a new slab; 3. pop a
 * slot; a slab with no free slot leaves the partial list. free: push the
 * slot; a slab that was full rejoins the list; an empty slab goes back to
 * the backend when its class already keeps keep_empty (default 0) empty
 * slabs, else it is kept (with retain_empty all are kept).
 * Invariants: 0 <= nfree <= nblocks; the stack holds nfree distinct indices
 * < nblocks; a slab is on its class list iff nfree > 0.
 * Complexity: O(1) alloc and free (class lookup O(log classes)).
 * Thread-safety: none (pool lock). */
#include <stdlib.h>
#include <string.h>

#include "runtime/pool_internal.h"

#define MAX_CLASSES 128
#define MIN_SLAB (64u << 10)

typedef struct slab {
  struct slab *prev, *next;   /* partial list of its class */
  struct slab *aprev, *anext; /* list of all slabs */
  uint64_t base, len, csize;
  uint32_t cls, nblocks, nfree;
  uint32_t *stack;
} slab_t;

typedef struct slab_pool {
  nnmem__pool_params_t p;
  nnmem__src_t *src;
  nnmem__impl_t direct;
  uint32_t nclasses;
  uint64_t class_size[MAX_CLASSES];
  slab_t *partial[MAX_CLASSES];
  slab_t *all;                 /* every slab, linked through a second list */
  uint32_t empty[MAX_CLASSES]; /* kept empty slabs (at most keep_empty) */
  uint64_t used_bytes, free_bytes;
  uint64_t nslabs;
} slab_pool_t;

static void build_classes(slab_pool_t *s) {
  uint64_t g = s->p.granule, last = 0;
  for (uint64_t c = 16; c <= s->p.small_max && s->nclasses < MAX_CLASSES;) {
    uint64_t r = (c + g - 1) & ~(g - 1);
    if (r > last && r <= s->p.small_max) s->class_size[s->nclasses++] = r;
    last = r > last ? r : last;
    if (c < 128)
      c += 16;
    else
      c += nnmem__next_pow2(c + 1) / 8; /* 4 steps per doubling */
  }
}

static int find_class(const slab_pool_t *s, uint64_t size, uint64_t align) {
  uint32_t lo = 0, hi = s->nclasses;
  while (lo < hi) { /* first class >= size */
    uint32_t mid = (lo + hi) / 2;
    if (s->class_size[mid] < size)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (uint32_t i = lo; i < s->nclasses; i++)
    if ((s->class_size[i] & (align - 1)) == 0) return (int)i;
  return -1;
}

static void list_del(slab_t **head, slab_t *x) {
  if (x->prev)
    x->prev->next = x->next;
  else
    *head = x->next;
  if (x->next) x->next->prev = x->prev;
  x->prev = x->next = NULL;
}

static void list_add(slab_t **head, slab_t *x) {
  x->prev = NULL;
  x->next = *head;
  if (*head) (*head)->prev = x;
  *head = x;
}

static nnmem_status_t new_slab(slab_pool_t *s, uint32_t cls) {
  uint64_t c = s->class_size[cls];
  uint64_t len = nnmem__next_pow2(nnmem__max_u64(MIN_SLAB, 4 * c));
  slab_t *sl = calloc(1, sizeof *sl);
  uint32_t n = (uint32_t)(len / c);
  uint32_t *stack = sl ? malloc(n * sizeof *stack) : NULL;
  if (!stack) {
    free(sl);
    return NNMEM_ERR_NOMEM;
  }
  nnmem_status_t st = nnmem__src_take(s->src, len, len, &sl->base);
  if (st != NNMEM_OK) {
    free(stack);
    free(sl);
    return st;
  }
  sl->len = len;
  sl->csize = c;
  sl->cls = cls;
  sl->nblocks = sl->nfree = n;
  sl->stack = stack;
  for (uint32_t i = 0; i < n; i++)
    stack[i] = n - 1 - i; /* pop 0 first */
  list_add(&s->partial[cls], sl);
  sl->anext = s->all;
  if (s->all) s->all->aprev = sl;
  s->all = sl;
  s->free_bytes += (uint64_t)n * c;
  s->nslabs++;
  return NNMEM_OK;
}

static nnmem_status_t sl_alloc(void *self, uint64_t size, uint64_t align,
                               uint64_t *addr, uint64_t *block, void **tag,
                               uint64_t *aux) {
  slab_pool_t *s = self;
  int cls = find_class(s, size, align);
  if (cls < 0) { /* above the largest class: a direct region */
    nnmem_status_t st = s->direct.ops->alloc(s->direct.self, size, align, addr,
                                             block, tag, aux);
    *aux = 1;
    return st;
  }
  int fresh = 0;
  if (!s->partial[cls]) {
    nnmem_status_t st = new_slab(s, (uint32_t)cls);
    if (st != NNMEM_OK) return st;
    fresh = 1;
  }
  slab_t *sl = s->partial[cls];
  if (!fresh && sl->nfree == sl->nblocks && s->empty[cls])
    s->empty[cls]--; /* a kept empty slab is in use again */
  uint32_t i = sl->stack[--sl->nfree];
  if (sl->nfree == 0) list_del(&s->partial[cls], sl);
  s->used_bytes += sl->csize;
  s->free_bytes -= sl->csize;
  *addr = sl->base + (uint64_t)i * sl->csize;
  *block = sl->csize;
  *tag = sl;
  *aux = 0;
  return NNMEM_OK;
}

static void drop_slab(slab_pool_t *s, slab_t *sl) {
  list_del(&s->partial[sl->cls], sl);
  if (sl->aprev)
    sl->aprev->anext = sl->anext;
  else
    s->all = sl->anext;
  if (sl->anext) sl->anext->aprev = sl->aprev;
  s->free_bytes -= (uint64_t)sl->nblocks * sl->csize;
  nnmem__src_give(s->src, sl->base, sl->len);
  s->nslabs--;
  free(sl->stack);
  free(sl);
}

static uint64_t sl_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  slab_pool_t *s = self;
  if (aux == 1) return s->direct.ops->free(s->direct.self, addr, tag, 0);
  slab_t *sl = tag;
  sl->stack[sl->nfree++] = (uint32_t)((addr - sl->base) / sl->csize);
  if (sl->nfree == 1) list_add(&s->partial[sl->cls], sl);
  uint64_t c = sl->csize;
  s->used_bytes -= c;
  s->free_bytes += c;
  if (sl->nfree == sl->nblocks && !s->p.retain_empty) {
    if (s->empty[sl->cls] >= s->p.keep_empty)
      drop_slab(s, sl);
    else
      s->empty[sl->cls]++; /* hysteresis: no map / unmap per block */
  }
  return c;
}

static int sl_owns(void *self, uint64_t addr) {
  slab_pool_t *s = self;
  for (slab_t *x = s->all; x; x = x->anext)
    if (addr >= x->base && addr - x->base < x->len) return 1;
  return s->direct.ops->owns(s->direct.self, addr);
}

static nnmem_status_t check_slab(const slab_pool_t *s, const slab_t *x,
                                 uint8_t *seen, nnmem_diag_t *diag) {
  int on_list = 0;
  for (const slab_t *y = s->partial[x->cls]; y; y = y->next)
    if (y == x) on_list = 1;
  if (x->nfree > x->nblocks || on_list != (x->nfree > 0) ||
      x->csize != s->class_size[x->cls] || (x->base & (x->len - 1)))
    return nnmem__diag(
        diag, NNMEM_ERR_STATE, "slab 0x%llx: nfree %u of %u, on list %d",
        (unsigned long long)x->base, x->nfree, x->nblocks, on_list);
  memset(seen, 0, x->nblocks);
  for (uint32_t i = 0; i < x->nfree; i++) {
    uint32_t k = x->stack[i];
    if (k >= x->nblocks || seen[k])
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "slab 0x%llx: free slot %u repeated or out of range",
                         (unsigned long long)x->base, k);
    seen[k] = 1;
  }
  return NNMEM_OK;
}

static nnmem_status_t sl_check(void *self, nnmem_diag_t *diag) {
  slab_pool_t *s = self;
  uint64_t used = 0, freeb = 0, n = 0;
  uint8_t *seen = malloc((size_t)(MIN_SLAB * 4 / 16) + 1);
  if (!seen) return NNMEM_ERR_NOMEM;
  for (const slab_t *x = s->all; x; x = x->anext) {
    nnmem_status_t st = x->nblocks > MIN_SLAB * 4 / 16
                            ? NNMEM_ERR_STATE
                            : check_slab(s, x, seen, diag);
    if (st != NNMEM_OK) {
      free(seen);
      return st;
    }
    n++;
    freeb += (uint64_t)x->nfree * x->csize;
    used += (uint64_t)(x->nblocks - x->nfree) * x->csize;
  }
  free(seen);
  if (n != s->nslabs || used != s->used_bytes || freeb != s->free_bytes)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "slab: counters disagree with the slabs");
  return s->direct.ops->check(s->direct.self, diag);
}

static void sl_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  slab_pool_t *s = self;
  *free_bytes = s->free_bytes;
  *largest = 0;
  for (uint32_t c = s->nclasses; c-- > 0;)
    if (s->partial[c]) {
      *largest = s->class_size[c];
      break;
    }
}

static void sl_destroy(void *self) {
  slab_pool_t *s = self;
  while (s->all) {
    slab_t *x = s->all;
    s->all = x->anext;
    nnmem__src_give(s->src, x->base, x->len);
    free(x->stack);
    free(x);
  }
  s->direct.ops->destroy(s->direct.self);
  free(s);
}

static const nnmem__impl_ops_t slab_ops = {
    sl_alloc, sl_free, sl_owns, sl_check, sl_free_info, sl_destroy, NULL};

nnmem_status_t nnmem__slab_create(const nnmem__pool_params_t *p,
                                  nnmem__src_t *src, nnmem__impl_t *out) {
  slab_pool_t *s = calloc(1, sizeof *s);
  if (!s) return NNMEM_ERR_NOMEM;
  s->p = *p;
  s->src = src;
  build_classes(s);
  nnmem_status_t st = nnmem__direct_create(p, src, &s->direct);
  if (st != NNMEM_OK) {
    free(s);
    return st;
  }
  out->ops = &slab_ops;
  out->self = s;
  return NNMEM_OK;
}
