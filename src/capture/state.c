/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which copy of memtrace is in charge (real.h's mt_owner), kept below the
 * reports and the API functions that forward to the owner's; start-up
 * decides (mt_aside). */
#include "capture/state.h"

#include "base/reentry.h"

#include <dlfcn.h>

bool mt_aside;

void *mt_owner(const char *name)
{
    if (!mt_aside)
        return NULL;
    int was = mt_enter();
    void *f = dlsym(RTLD_DEFAULT, name);
    mt_leave(was);
    return f;
}
