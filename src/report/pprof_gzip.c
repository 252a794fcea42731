/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pprof writer's output (see pprof_gzip.h): protobuf-c packs into our
 * ProtobufCBuffer, whose append deflates and writes as it goes, so the
 * encoding is never whole in memory. protobuf-c appends a field at a time
 * (a few bytes each: a profile of 150 KB is about 80,000 appends), and
 * each deflate call costs some hundreds of instructions whatever it is
 * given, so the appends are gathered in the sink's input buffer and
 * deflated a buffer at a time: that was most of the exit's cost under
 * MEMTRACE_SYMBOLIZE=later. */
#include "report/pprof_gzip.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* protobuf-c's output: the encoding, gzipped by zlib, written to FD. */
struct gz_sink {
    ProtobufCBuffer base; /* first: protobuf-c calls append with &base */
    z_stream z;
    int fd;
    int error; /* errno of the first failed write */
    bool zfailed;
    size_t held; /* bytes gathered in IN, not yet given to zlib */
    unsigned char in[1 << 14];
    unsigned char out[1 << 16];
};

static bool sink_write(struct gz_sink *s, const unsigned char *buf, size_t len)
{
    while (len && !s->error) {
        ssize_t n = write(s->fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->error = n < 0 ? errno : EIO;
            return false;
        }
        buf += n;
        len -= (size_t)n;
    }
    return !s->error;
}

static void sink_deflate(struct gz_sink *s, const uint8_t *data, size_t len, int flush)
{
    s->z.next_in = (Bytef *)data;
    s->z.avail_in = (uInt)len;
    do {
        s->z.next_out = s->out;
        s->z.avail_out = sizeof s->out;
        int rc = deflate(&s->z, flush);
        if (rc == Z_STREAM_ERROR) {
            s->zfailed = true;
            return;
        }
        if (!sink_write(s, s->out, sizeof s->out - s->z.avail_out))
            return;
    } while (s->z.avail_out == 0);
}

/* Gives zlib what IN holds. */
static void sink_drain(struct gz_sink *s)
{
    if (s->held && !s->error && !s->zfailed)
        sink_deflate(s, s->in, s->held, Z_NO_FLUSH);
    s->held = 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    struct gz_sink *s = (struct gz_sink *)b;
    if (len <= sizeof s->in - s->held) {
        memcpy(s->in + s->held, data, len);
        s->held += len;
        return;
    }
    sink_drain(s);
    if (len < sizeof s->in) {
        memcpy(s->in, data, len);
        s->held = len;
        return;
    }
    /* avail_in is 32 bits wide. */
    while (len && !s->error && !s->zfailed) {
        size_t piece = len < (1u << 30) ? len : (1u << 30);
        sink_deflate(s, data, piece, Z_NO_FLUSH);
        data += piece;
        len -= piece;
    }
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    const mt_pprof_heap *h = opaque;
    return h->alloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf address)
{
    const mt_pprof_heap *h = opaque;
    h->free(address);
}

const char *mt_pprof_gzip(const mt_pprof_heap *heap, const ProtobufCMessage *msg, int fd)
{
    struct gz_sink *s = heap->alloc(sizeof *s);
    if (!s)
        return "out of memory";
    memset(s, 0, sizeof *s);
    s->base.append = sink_append;
    s->fd = fd;
    s->z.zalloc = z_alloc;
    s->z.zfree = z_free;
    s->z.opaque = (voidpf)heap;
    const char *err = NULL;
    /* windowBits 15 + 16: a gzip wrapper, which pprof expects. The fastest
     * level: the profile is written while the program exits. */
    if (deflateInit2(&s->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        err = "zlib cannot start (out of memory)";
    } else {
        protobuf_c_message_pack_to_buffer(msg, &s->base);
        sink_drain(s);
        if (!s->error && !s->zfailed)
            sink_deflate(s, NULL, 0, Z_FINISH);
        deflateEnd(&s->z);
        if (s->error)
            err = strerror(s->error);
        else if (s->zfailed)
            err = "zlib failed";
    }
    heap->free(s);
    return err;
}
