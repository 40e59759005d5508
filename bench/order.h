/* bench/order.h - irregularly wired graph generators (RandWire stages,
 * NASNet-like cells) written as JSON graphs, and the operator-order table
 * (file order vs memory order). Used by bench/plan.c. */
#ifndef NNMEM_BENCH_ORDER_H
#define NNMEM_BENCH_ORDER_H

/* 1 when `spec` names a graph generator ("randwire:N:SEED",
 * "nasnet:CELLS:SEED"). */
int bench_order_is_graph_spec(const char *spec);

/* Writes the generated graph as a JSON graph to `out` ("-" = stdout).
 * Returns the exit code. */
int bench_order_gen(const char *spec, const char *out);

/* Prints the operator-order table (generated graphs, built-in models, the
 * ONNX models under `models_dir` when it exists) and writes it to
 * `csv_out` (NULL = bench-order.csv). Returns the exit code: 1 when an
 * order fails to be valid or is above the file order. */
int bench_order_table(const char *models_dir, const char *csv_out);

#endif
