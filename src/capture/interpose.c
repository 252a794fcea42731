/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The names memtrace interposes when preloaded (libc's allocator, the C++
 * operators by their mangled names, jemalloc's and tcmalloc's extended
 * APIs, C23's sized frees, and the calls beside the allocator memtrace
 * must see), each defined from its row of capture/interposed.def as a
 * forward to an mt_ function: no logic lives here. strdup and the rest of
 * libc reach these through the PLT. This file is built with -fexceptions:
 * std::bad_alloc may pass through it. */
#include "capture/interpose.h"

#include "base/common.h"
#include "base/upcalls.h"
#include "capture/entry_points.h"
#include "capture/sample_fast.h"
#include "store/modules.h"
#include "store/threads.h"

#include <unistd.h>

extern char **environ;

/* Each name with its prototype first: most have no declaration in a
 * system header (-Wmissing-prototypes), and the others' must agree. */
#define MT_INTERPOSE(cls, next, ret, name, params, body) \
    ret name params;                                     \
    MT_EXPORT ret name params                            \
    {                                                    \
        body                                             \
    }
#include "capture/interposed.def"
#undef MT_INTERPOSE
