/* nnmem/nnmem.h - umbrella header: everything public in one include. */
#ifndef NNMEM_NNMEM_H
#define NNMEM_NNMEM_H

#include "nnmem/version.h" /* generated: NNMEM_VERSION_*, nnmem_version() */
#include "nnmem/status.h"
#include "nnmem/problem.h"
#include "nnmem/plan.h"
#include "nnmem/fit.h"
#include "nnmem/graph.h"
#include "nnmem/liveness.h"
#include "nnmem/order.h"
#include "nnmem/profile.h"
#include "nnmem/io.h"
#include "nnmem/map.h"
#include "nnmem/zoo.h"
#include "nnmem/backend.h"
#include "nnmem/stats.h"
#include "nnmem/pool.h"
#include "nnmem/allocator.h"
#include "nnmem/leaks.h"
#include "nnmem/planned.h"
#include "nnmem/profiler.h"
#include "nnmem/metrics.h"
#include "nnmem/arena.h"
#include "nnmem/heap.h"
#include "nnmem/numa.h"
#include "nnmem/block_state.h"
#include "nnmem/domain.h"
#include "nnmem/onnx.h"

#endif /* NNMEM_NNMEM_H */
