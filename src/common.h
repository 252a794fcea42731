/* Definitions every memtrace file shares: visibility, branch hints and the
 * thread-local model. Internal symbols use the mt_ prefix and stay hidden
 * (the build passes -fvisibility=hidden); MT_EXPORT marks the few that escape. */
#ifndef MT_COMMON_H
#define MT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define MT_EXPORT __attribute__((visibility("default")))
#define MT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MT_COLD __attribute__((cold, noinline))
#define MT_NOINLINE __attribute__((noinline))
/* The default (global-dynamic) model may call malloc from __tls_get_addr on a
 * thread's first access, which would recurse into the tracer. */
#define MT_TLS __thread __attribute__((tls_model("initial-exec")))

#define MT_CACHELINE 64

#endif
