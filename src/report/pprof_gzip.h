/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pprof writer's output (pprof.c): a protobuf-c message's encoding,
 * gzipped by zlib, streamed to a file. */
#ifndef MT_PPROF_GZIP_H
#define MT_PPROF_GZIP_H

#include "report/pprof_heap.h"

#include <protobuf-c/protobuf-c.h>

/* Packs MSG through zlib's gzip deflate (the fastest level, as pprof
 * expects a gzip wrapper) to FD; every byte zlib and the sink allocate
 * comes from HEAP. Returns NULL when written, else why not (a static
 * string or strerror's). */
const char *mt_pprof_gzip(const mt_pprof_heap *heap, const ProtobufCMessage *msg, int fd);

#endif
