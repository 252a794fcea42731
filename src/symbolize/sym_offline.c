/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Modules reported from their files, out of the traced process: the tools
 * that symbolize what the library wrote raw or left unsymbolized
 * (`memtrace symbolize`, `memtrace export`). Not linked into the libraries
 * (the Makefile's TOOLS_ONLY): the traced process symbolizes from its own
 * maps. A module is taken only if its file still has the build ID the
 * process recorded, so that a rebuilt file never names another build's
 * frames. */
#include "symbolize/symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <string.h>

/* mt_sym_debuginfo_path's value, read when a Dwfl begins (the callbacks
 * hold its address). */
static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = mt_sym_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

Dwfl *mt_sym_offline_begin(void)
{
    debuginfo_path = mt_sym_debuginfo_path();
    return dwfl_begin(&offline_callbacks);
}

Dwfl_Module *mt_sym_offline_report(Dwfl *dwfl, const char *name, const char *path, uintptr_t bias,
                                   bool add)
{
    if (add)
        dwfl_report_begin_add(dwfl);
    else
        dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_elf(dwfl, name, path, -1, bias, false);
    dwfl_report_end(dwfl, NULL, NULL);
    return mod;
}

/* The hex build ID of MOD, "" without one. */
static void build_id_hex(Dwfl_Module *mod, char out[2 * 64 + 1])
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    out[0] = '\0';
    for (int i = 0; i < n && i < 64; i++)
        snprintf(out + 2 * (size_t)i, 3, "%02x", bits[i]);
}

Dwfl *mt_sym_offline_module(const char *name, const char *path, uintptr_t bias,
                            const char *build_id, const char **why)
{
    Dwfl *dwfl = mt_sym_offline_begin();
    if (!dwfl) {
        *why = "out of memory";
        return NULL;
    }
    Dwfl_Module *mod = mt_sym_offline_report(dwfl, name, path, bias, false);
    char have[2 * 64 + 1] = "";
    if (mod)
        build_id_hex(mod, have);
    *why = !mod ? dwfl_errmsg(-1)
           : build_id[0] && strcmp(have, build_id) != 0
               ? "its build ID is not the recorded one (rebuilt or replaced since)"
               : NULL;
    if (*why) {
        dwfl_end(dwfl);
        return NULL;
    }
    return dwfl;
}
