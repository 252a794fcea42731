/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Debug files from a debuginfod server, for memtrace-symbolize's search
 * (mt_sym_find_debuginfo) only: never in the traced process (design
 * notes, trap 13). */
#include "symbolize/sym_internal.h"

#include "base/output.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* libdebuginfod's client (elfutils' debuginfod.h, not installed by
 * Debian's libdebuginfod1), opened with dlopen as libdwfl opens it: the
 * programs that use memtrace's symbolizer need not link it. */
struct client_api {
    void *(*begin)(void);
    int (*find_debuginfo)(void *client, const unsigned char *build_id, int len, char **path);
    void (*end)(void *client);
};

static bool client_api(struct client_api *api)
{
    void *h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return false;
    *(void **)&api->begin = dlsym(h, "debuginfod_begin");
    *(void **)&api->find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
    *(void **)&api->end = dlsym(h, "debuginfod_end");
    return api->begin && api->find_debuginfo && api->end;
}

/* The debug file of MOD (named NAME in the note) fetched by its build ID
 * (ID of LEN bytes when ID is not NULL: its dwz common file's) from the
 * servers of DEBUGINFOD_URLS, as libdwfl's standard search ends (which
 * does not say when it fails): its descriptor, its path in *FOUND. -1
 * when no server is named or there is no build ID; -2 when the servers
 * gave nothing, said in one note (the client's error: refused, timed out
 * after DEBUGINFOD_TIMEOUT, not found). libdwfl asks once per module
 * (and once for its common file). */
int mt_sym_debuginfod_find(Dwfl_Module *mod, const unsigned char *id, int len, const char *name,
                           char **found)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    GElf_Addr vaddr;
    if (!id)
        len = dwfl_module_build_id(mod, &id, &vaddr);
    if (!urls || !*urls || len <= 0)
        return -1;
    struct client_api api = { 0 };
    void *client = client_api(&api) ? api.begin() : NULL;
    int fd = client ? api.find_debuginfo(client, id, len, found) : -ENOSYS;
    if (client)
        api.end(client);
    if (fd >= 0)
        return fd;
    const char *slash = strrchr(name, '/');
    mt_warn("no debug info for %s from debuginfod (%s)", slash ? slash + 1 : name,
            fd == -ENOSYS && !client ? "libdebuginfod.so.1 not loaded" : strerror(-fd));
    return -2;
}
