/* outset.h - an output set: N output files written all or none (internal,
 * never installed; used by nnmem_file_write_atomic and by the CLI, which
 * stages every file a command writes in one set).
 *
 * Use:
 *   nnmem__outset_t *s; nnmem__outset_create(&s);
 *   nnmem__outset_add_bytes(s, "plan.csv", text, len, &diag);   stage
 *   nnmem__outset_add_fn(s, "map.svg", write_svg, ctx, &diag);   stage
 *   nnmem__outset_commit(s, &diag);          all files appear, or none
 *   nnmem__outset_destroy(s);       removes temporaries never committed
 *
 * Guarantee: when any add or the commit fails, every file that existed
 * before holds exactly its old bytes and no new file is left behind (the
 * one exception: a rename(2) in step 3 of the commit failing after earlier
 * ones succeeded, which needs the directory to change under us).
 * See outset.c for the rules on links, devices and temporary names. */
#ifndef NNMEM_OUTSET_H
#define NNMEM_OUTSET_H

#include <stddef.h>
#include <stdio.h>

#include "nnmem/status.h"

typedef struct nnmem__outset nnmem__outset_t;

/* Writes one output's bytes to `f` (a temporary file, or the device itself
 * for a non-regular target). Returns NNMEM_OK or an error with `diag`. */
typedef nnmem_status_t (*nnmem__outset_write_fn)(void *ctx, FILE *f,
                                                 nnmem_diag_t *diag);

/* A new empty set. NNMEM_ERR_NOMEM. */
nnmem_status_t nnmem__outset_create(nnmem__outset_t **out);

/* Stages `len` bytes for `path` (copied for a device target; written to a
 * temporary file next to a regular target right away). Errors name `path`:
 * a directory, a dangling symbolic link, a folder where no file can be
 * created, a name too long, a full disk. */
nnmem_status_t nnmem__outset_add_bytes(nnmem__outset_t *s, const char *path,
                                       const void *data, size_t len,
                                       nnmem_diag_t *diag);

/* Stages an output produced by `fn(ctx, f, diag)`; for a regular target it
 * runs now into the temporary file, for a device at commit (ctx must live
 * until then). */
nnmem_status_t nnmem__outset_add_fn(nnmem__outset_t *s, const char *path,
                                    nnmem__outset_write_fn fn, void *ctx,
                                    nnmem_diag_t *diag);

/* 1. writes the device targets (in the order added), 2. renames every
 * temporary over its target. After a failure in 1 nothing was renamed. */
nnmem_status_t nnmem__outset_commit(nnmem__outset_t *s, nnmem_diag_t *diag);

/* Removes the temporaries not yet renamed and frees the set (NULL ok). */
void nnmem__outset_destroy(nnmem__outset_t *s);

/* Unlinks the temporaries of `s` not yet renamed, calling only unlink(2):
 * safe in a signal handler (the CLI's SIGINT / SIGTERM handler). */
void nnmem__outset_unlink_temps(const nnmem__outset_t *s);

#endif /* NNMEM_OUTSET_H */
