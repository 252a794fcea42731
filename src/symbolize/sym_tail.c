/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frames that tail calls left off the stack, rebuilt from the DWARF call
 * sites (mt_sym_tail_calls). */
#include "symbolize/sym_internal.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

/* A function whose last act is a call may jump to the callee instead: its
 * frame is then not on the stack. The DWARF call sites (DW_TAG_call_site,
 * DW_TAG_GNU_call_site in DWARF 4) say where each call goes and which are
 * tail calls; from the call at a return address and the function the next
 * frame inward is in, the frames in between are the tail-call chains from
 * the call's target to that function. The search is bounded (TAIL_DEPTH
 * tail calls in a chain, TAIL_VISITS functions looked into) and gives
 * nothing when it reaches a bound, meets a cycle or a function with more
 * tail calls than it keeps: what it inserts is true of every chain possible.
 * What it finds is kept in the state's tail_fns and tail_chains memos,
 * dropped with its frame cache (sym_clear_caches). */

/* The tail calls of the function at an entry address; n > TAIL_EDGES: too
 * many to follow. */
struct tail_fn {
    unsigned n;
    struct tail_edge edge[];
};

/* Whether NAME (a DIE's linkage name or name) is one of the functions
 * memtrace interposes (src/capture/interpose.c): the end of every recorded stack. */
static bool is_allocation_function(const char *name)
{
    static const char *const names[] = {
        "malloc",
        "free",
        "calloc",
        "realloc",
        "reallocarray",
        "posix_memalign",
        "aligned_alloc",
        "memalign",
        "valloc",
        "pvalloc",
        "mallocx",
        "rallocx",
        "xallocx",
        "dallocx",
        "sdallocx",
        "free_sized",
        "free_aligned_sized",
        "tc_malloc",
        "tc_free",
        "tc_cfree",
        "tc_free_sized",
        "tc_calloc",
        "tc_realloc",
        "tc_memalign",
        "tc_posix_memalign",
        "tc_valloc",
        "tc_pvalloc",
    };
    if (!name)
        return false;
    /* operator new, new[], delete, delete[], every overload (mangled) */
    if (strncmp(name, "_Znw", 4) == 0 || strncmp(name, "_Zna", 4) == 0 ||
        strncmp(name, "_Zdl", 4) == 0 || strncmp(name, "_Zda", 4) == 0 ||
        strncmp(name, "operator new", 12) == 0 || strncmp(name, "operator delete", 15) == 0 ||
        strncmp(name, "tc_new", 6) == 0 || strncmp(name, "tc_delete", 9) == 0) /* and tcmalloc's */
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

struct symbol_search {
    const char *name;
    Dwfl_Module *skip;
    uintptr_t found;
};

static int search_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                         void *arg)
{
    (void)userdata, (void)name, (void)start;
    struct symbol_search *s = arg;
    if (mod == s->skip)
        return DWARF_CB_OK;
    s->found = sym_module_symbol(mod, s->name, false);
    return s->found ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* The function NAME as a call from MOD reaches it: MOD's own definition,
 * else the first exported one in the order DWFL lists its modules. */
static uintptr_t symbol_address(Dwfl *dwfl, Dwfl_Module *mod, const char *name)
{
    uintptr_t a = sym_module_symbol(mod, name, true);
    if (a)
        return a;
    struct symbol_search s = { name, mod, 0 };
    dwfl_getmodules(dwfl, search_module, &s, 0);
    return s.found;
}

/* The subprogram DIE holding PC (its concrete instance: inlined code is in
 * its caller's), with MOD and BIAS. */
static bool function_die(struct mt_sym_state *st, Dwarf_Addr pc, Dwfl_Module **mod, Dwarf_Die *fn,
                         Dwarf_Addr *bias)
{
    *mod = mt_sym_addrmodule(st->dwfl, pc);
    if (*mod)
        sym_guard_module(*mod);
    Dwarf_Die cu_mem;
    bool indexed;
    Dwarf_Die *cu = *mod ? sym_module_cu(st, *mod, pc, &cu_mem, bias, &indexed) : NULL;
    return cu && sym_cu_function_at(st, cu, pc - *bias, fn);
}

/* The entry address of the function of DIE FN in MOD: its low pc, or where
 * its symbol is when its code is in several ranges (hot and cold parts) or
 * FN is a declaration. 0 when not known. */
static uintptr_t function_entry(Dwfl *dwfl, Dwfl_Module *mod, Dwarf_Die *fn, Dwarf_Addr bias)
{
    Dwarf_Addr low;
    if (!dwarf_hasattr(fn, DW_AT_declaration) && dwarf_lowpc(fn, &low) == 0)
        return (uintptr_t)(low + bias);
    const char *name = sym_die_linkage_name(fn);
    return name ? symbol_address(dwfl, mod, name) : 0;
}

/* The entry address of the function holding PC: from its DIE, else from
 * the symbol table. 0 when not known. */
static uintptr_t entry_of(struct mt_sym_state *st, Dwarf_Addr pc)
{
    Dwfl_Module *mod;
    Dwarf_Die fn;
    Dwarf_Addr bias;
    if (function_die(st, pc, &mod, &fn, &bias))
        return function_entry(st->dwfl, mod, &fn, bias);
    if (!mod)
        return 0;
    GElf_Addr value;
    return sym_symbol_at(mod, pc, &value) ? (uintptr_t)value : 0;
}

/* Where call site SITE (in MOD, BIAS) goes: its entry address in
 * T->target (0: an indirect call, or a target that cannot be told for
 * sure), and T->alloc when it is named as one of the allocation functions
 * (then it is the end of a recorded stack whatever its address: memtrace's,
 * or the C++ runtime's operator new that calls memtrace's malloc). */
static void site_target(Dwfl *dwfl, Dwfl_Module *mod, Dwarf_Addr bias, Dwarf_Die *site,
                        struct tail_edge *t)
{
    Dwarf_Attribute a;
    Dwarf_Die origin;
    t->target = 0;
    t->alloc = false;
    if ((dwarf_attr(site, DW_AT_call_origin, &a) || dwarf_attr(site, DW_AT_abstract_origin, &a)) &&
        dwarf_formref_die(&a, &origin)) {
        t->alloc = is_allocation_function(sym_die_linkage_name(&origin)) ||
                   is_allocation_function(sym_die_string(&origin, DW_AT_name));
        t->target = function_entry(dwfl, mod, &origin, bias);
        return;
    }
    Dwarf_Op *ops;
    size_t nops;
    if ((dwarf_attr(site, DW_AT_call_target, &a) ||
         dwarf_attr(site, DW_AT_GNU_call_site_target, &a)) &&
        dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_addr)
        t->target = (uintptr_t)(ops[0].number + bias);
}

static bool is_tail_site(Dwarf_Die *site)
{
    return dwarf_hasattr(site, DW_AT_call_tail_call) || dwarf_hasattr(site, DW_AT_GNU_tail_call);
}

/* The address after a call site's call instruction, as in its DIE: gcc's
 * DW_AT_call_return_pc (DW_AT_low_pc of DWARF 4's GNU sites), for tail
 * calls too. clang gives a tail call the address of its jump instead
 * (DW_AT_call_pc): one past it stands for the address after the jump,
 * since a return address is only ever looked up at itself minus one,
 * which is then inside the jump, on its line. */
static bool site_return(Dwarf_Die *site, Dwarf_Addr *ret)
{
    Dwarf_Attribute a;
    if (dwarf_attr(site, DW_AT_call_return_pc, &a))
        return dwarf_formaddr(&a, ret) == 0;
    if (is_tail_site(site) && dwarf_attr(site, DW_AT_call_pc, &a)) {
        if (dwarf_formaddr(&a, ret) != 0)
            return false;
        *ret += 1;
        return true;
    }
    return dwarf_tag(site) == DW_TAG_GNU_call_site && dwarf_lowpc(site, ret) == 0;
}

/* Calls FN on every call site nested in DIE's children (lexical blocks and
 * inlined code included, nested functions not); stops when FN returns
 * true, and returns true then. */
static bool each_call_site(Dwarf_Die *die, unsigned depth, bool (*fn)(Dwarf_Die *, void *),
                           void *arg)
{
    Dwarf_Die child;
    if (depth > 64 || dwarf_child(die, &child) != 0)
        return false;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site) {
            if (fn(&child, arg))
                return true;
        } else if (tag != DW_TAG_subprogram && each_call_site(&child, depth + 1, fn, arg)) {
            return true;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

static bool add_tail_edge(Dwarf_Die *site, void *arg)
{
    struct edge_walk *w = arg;
    Dwarf_Addr ret;
    if (!is_tail_site(site) || !site_return(site, &ret))
        return false;
    if (w->n == TAIL_EDGES) {
        w->n++;
        return true;
    }
    struct tail_edge *e = &w->edge[w->n++];
    site_target(w->dwfl, w->mod, w->bias, site, e);
    e->site_ret = (uintptr_t)(ret + w->bias);
    return false;
}

/* The tail calls of the function at ENTRY, cached; NULL when they cannot be
 * had (no debug information is no tail call: n = 0). */
static const struct tail_fn *tail_calls_of(struct mt_sym_state *st, uintptr_t entry)
{
    struct tail_fn *f = sym_memo_find(&st->tail_fns, entry, 0);
    if (f)
        return f;
    struct edge_walk *w = &st->edges;
    w->dwfl = st->dwfl;
    w->n = 0;
    Dwarf_Die fn;
    if (function_die(st, entry, &w->mod, &fn, &w->bias))
        each_call_site(&fn, 0, add_tail_edge, w);
    unsigned keep = w->n > TAIL_EDGES ? 0 : w->n;
    f = malloc(sizeof *f + keep * sizeof f->edge[0]);
    if (!f)
        return NULL;
    f->n = w->n;
    memcpy(f->edge, w->edge, keep * sizeof f->edge[0]);
    if (!sym_memo_add(&st->tail_fns, entry, 0, f, NULL)) {
        free(f);
        return NULL;
    }
    return f;
}

static void chain_found(struct chain_search *s, unsigned len)
{
    if (s->found++ == 0) {
        memcpy(s->prefix, s->path, len * sizeof s->path[0]);
        for (unsigned i = 0; i < len; i++)
            s->suffix[i] = s->path[len - 1 - i];
        s->nprefix = s->nsuffix = s->shortest = len;
        return;
    }
    unsigned p = 0, q = 0;
    while (p < s->nprefix && p < len && s->prefix[p] == s->path[p])
        p++;
    while (q < s->nsuffix && q < len && s->suffix[q] == s->path[len - 1 - q])
        q++;
    s->nprefix = p;
    s->nsuffix = q;
    if (len < s->shortest)
        s->shortest = len;
}

/* Follows the tail calls of the function at FN, the DEPTH-th of the chain.
 * A tail call whose target is not known (through a pointer, or a name that
 * several functions carry) may reach the callee: nothing can be said then. */
static void chain_walk(struct chain_search *s, uintptr_t fn, unsigned depth)
{
    if (s->failed)
        return;
    const struct tail_fn *f = ++s->visits > TAIL_VISITS ? NULL : tail_calls_of(s->st, fn);
    if (!f || f->n > TAIL_EDGES || (f->n && depth == TAIL_DEPTH)) {
        s->failed = true;
        return;
    }
    if (!f->n)
        return;
    s->path_fn[depth] = fn;
    for (unsigned i = 0; i < f->n && !s->failed; i++) {
        const struct tail_edge *e = &f->edge[i];
        if (!e->alloc && !e->target) {
            s->failed = true;
            return;
        }
        s->path[depth] = e->site_ret;
        if (s->callee ? e->target == s->callee : e->alloc) {
            chain_found(s, depth + 1);
            continue;
        }
        if (e->alloc)
            continue; /* a stack ends there, its callee is not in it */
        for (unsigned k = 0; k <= depth; k++)
            if (s->path_fn[k] == e->target)
                s->failed = true; /* a cycle: chains of any length */
        if (!s->failed)
            chain_walk(s, e->target, depth + 1);
    }
}

/* A function's call sites by return address: found by a binary search
 * rather than a walk of the function's DIE for every frame (a function
 * with many inlined calls has thousands of DIEs; clang describes no call
 * to malloc, so a walk for one found nothing and read them all). */
struct call_site {
    Dwarf_Addr ret; /* in the module's addresses */
    unsigned order; /* in the DIE: of two at one address, the first is taken */
    Dwarf_Die die;  /* valid while the module's Dwarf is: the memo goes with it */
};
struct call_sites {
    unsigned n, cap;
    struct call_site site[];
};

static bool add_call_site(Dwarf_Die *site, void *arg)
{
    struct mt_sym_state *st = arg;
    struct call_sites *l = st->call_site_scratch;
    Dwarf_Addr ret;
    if (!site_return(site, &ret))
        return false;
    if (!l || l->n == l->cap) {
        unsigned cap = l ? 2 * l->cap : 64;
        struct call_sites *g = realloc(l, sizeof *g + cap * sizeof g->site[0]);
        if (!g)
            return true; /* incomplete: not kept (call_sites_of) */
        g->cap = cap;
        g->n = l ? g->n : 0;
        st->call_site_scratch = l = g;
    }
    l->site[l->n] = (struct call_site){ ret, l->n, *site };
    l->n++;
    return false;
}

static int by_return(const void *a, const void *b)
{
    const struct call_site *x = a, *y = b;
    if (x->ret != y->ret)
        return x->ret < y->ret ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* FN's call sites, sorted; NULL when out of memory. */
static const struct call_sites *call_sites_of(struct mt_sym_state *st, Dwarf_Die *fn)
{
    struct call_sites *l = sym_memo_find(&st->call_sites, (uintptr_t)fn->addr, 0);
    if (l)
        return l;
    free(st->call_site_scratch);
    st->call_site_scratch = NULL;
    if (each_call_site(fn, 0, add_call_site, st))
        return NULL;
    if (!(l = st->call_site_scratch) && !(l = calloc(1, sizeof *l)))
        return NULL;
    st->call_site_scratch = NULL;
    qsort(l->site, l->n, sizeof l->site[0], by_return);
    if (!sym_memo_add(&st->call_sites, (uintptr_t)fn->addr, 0, l, NULL)) {
        free(l);
        return NULL;
    }
    return l;
}

/* The call site of FN whose return address is RET (module addresses). */
static bool call_site_at(struct mt_sym_state *st, Dwarf_Die *fn, Dwarf_Addr ret, Dwarf_Die *site)
{
    const struct call_sites *l = call_sites_of(st, fn);
    if (!l)
        return false;
    unsigned lo = 0, hi = l->n;
    while (lo < hi) { /* the first with an address >= RET */
        unsigned mid = lo + (hi - lo) / 2;
        if (l->site[mid].ret < ret)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == l->n || l->site[lo].ret != ret)
        return false;
    *site = l->site[lo].die;
    return true;
}

/* The chain between RET and the function of CALLEE_RET (0: the allocation
 * functions), searched in the debug information. */
static void tail_chain_find(struct mt_sym_state *st, uintptr_t ret, uintptr_t callee_ret,
                            struct tail_chain *c)
{
    c->n = 0;
    Dwfl_Module *mod;
    Dwarf_Die fn;
    Dwarf_Addr bias;
    if (!function_die(st, ret - 1, &mod, &fn, &bias))
        return;
    Dwarf_Die site;
    if (!call_site_at(st, &fn, ret - bias, &site))
        return;
    struct tail_edge call;
    site_target(st->dwfl, mod, bias, &site, &call);
    if (call.alloc || !call.target)
        return; /* the callee was called directly, or nothing is known */
    struct chain_search *s = &st->chain;
    *s = (struct chain_search){ .st = st };
    if (callee_ret) {
        s->callee = entry_of(st, callee_ret - 1);
        if (!s->callee || s->callee == call.target)
            return;
    }
    chain_walk(s, call.target, 0);
    if (s->failed || !s->found)
        return;
    unsigned nsuffix = s->nsuffix, nprefix = s->nprefix;
    if (s->found > 1 && nprefix + nsuffix > s->shortest)
        nsuffix = s->shortest - nprefix;
    if (s->found == 1)
        nsuffix = 0;
    for (unsigned i = 0; i < nsuffix; i++)
        c->ret[c->n++] = s->suffix[i];
    for (unsigned i = nprefix; i-- > 0;)
        c->ret[c->n++] = s->prefix[i];
}

/* tail_chain_find with libdw guarded (sym_libdw_call). */
struct tail_chain_call {
    struct mt_sym_state *st;
    uintptr_t ret, callee_ret;
};

static void guarded_tail_chain_find(void *arg)
{
    struct tail_chain_call *c = arg;
    tail_chain_find(c->st, c->ret, c->callee_ret, &c->st->found);
}

unsigned mt_sym_tail_calls(mt_sym_state *st, uintptr_t ret, uintptr_t callee_ret, uintptr_t *out,
                           unsigned max)
{
    if (st->raw)
        return 0; /* nothing is read: the frames are left as the stack had them */
    struct tail_chain *c = sym_memo_find(&st->tail_chains, ret, callee_ret);
    if (!c && sym_libdw_spent())
        return 0;
    if (!c) {
        struct tail_chain_call call = { st, ret, callee_ret };
        if (!sym_libdw_call(guarded_tail_chain_find, &call))
            return 0;
        c = &st->found;
        struct tail_chain *keep = malloc(sizeof *keep);
        if (keep) {
            *keep = st->found;
            if (!sym_memo_add(&st->tail_chains, ret, callee_ret, keep, NULL))
                free(keep);
        }
    }
    unsigned n = c->n < max ? c->n : max;
    memcpy(out, c->ret, n * sizeof *out);
    return n;
}
