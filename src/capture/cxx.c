/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The C++ operators new and delete in all their forms (and tcmalloc's
 * tc_new & co., the same with other names): each forwards to its next
 * definition (mt_ext) in a pass-through scope, through which
 * std::bad_alloc may unwind (built with -fexceptions). A form that no
 * object after memtrace defines is emulated on the real malloc family
 * (README: "Entry points"), since the program may have found memtrace's
 * definition by probing for it. When the program replaces an operator
 * (mt_cxx_replaced), memtrace's only forward, untraced: the malloc and
 * free inside the program's are what is recorded. */
#include "capture/entry_points.h"

#include "base/common.h"
#include "base/output.h"
#include "base/reentry.h"
#include "capture/record.h"
#include "capture/guard.h"
#include "capture/state.h"
#include "store/internal_heap.h"

#include <stdlib.h>

bool mt_cxx_replaced;

/* MT_X_NEW to MT_X_DELA_AL_NT: the C++ operators (not tcmalloc's tc_*). */
static inline bool cxx_operator(unsigned op)
{
    return MT_OP_FN(op) <= MT_X_DELA_AL_NT;
}

static MT_COLD MT_NOINLINE void new_failed_without_runtime(size_t size)
{
    mt_warn("operator new(%zu) failed, and no C++ runtime after memtrace defines operator new "
            "to throw std::bad_alloc: aborting",
            size);
    abort();
}

/* operator new when no object after memtrace defines the form: on the real
 * malloc family (the internal heap inside memtrace), as libstdc++'s does,
 * except that failure cannot throw std::bad_alloc without a C++ runtime:
 * the nothrow forms return NULL, the others abort with a word. */
static MT_COLD void *emulated_new(size_t size, size_t align, unsigned form)
{
    if (size == 0)
        size = 1;
    if (!(form & MT_FORM_ALIGNED) || align < sizeof(void *))
        align = sizeof(void *);
    void *p = NULL;
    if (mt_busy || !mt_real.next_malloc || !mt_real.next_posix_memalign)
        p = mt_iheap_alloc(size, align < 16 ? 16 : align);
    else if ((form & MT_FORM_ALIGNED) && mt_real.next_posix_memalign(&p, align, size) != 0)
        p = NULL;
    else if (!(form & MT_FORM_ALIGNED))
        p = mt_real.next_malloc(size);
    if (!p && !(form & MT_FORM_NOTHROW))
        new_failed_without_runtime(size);
    return p;
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);

/* The call of FN, the next operator new of FORM. */
static inline void *new_call(void *fn, unsigned form, size_t size, size_t align,
                             const void *nothrow)
{
    switch (form & (MT_FORM_NOTHROW | MT_FORM_ALIGNED)) {
    case 0: return ((new_fn)fn)(size);
    case MT_FORM_NOTHROW: return ((new_nt_fn)fn)(size, nothrow);
    case MT_FORM_ALIGNED: return ((new_al_fn)fn)(size, align);
    default: return ((new_al_nt_fn)fn)(size, align, nothrow);
    }
}

void *mt_new(size_t size, size_t align, const void *nothrow, unsigned op)
{
    bool traced = !mt_bypass();
    void *fn = mt_ext_get(MT_OP_FN(op));
    unsigned form = MT_OP_FORM(op);
    void *p;
    if (MT_UNLIKELY(mt_cxx_replaced) && fn && cxx_operator(op))
        return new_call(fn, form, size, align, nothrow); /* its malloc is traced */
    if (MT_LIKELY(fn != NULL))
        MT_NEXT_ALLOC(MT_NEXT_SCOPED, traced, p,
                      MT_GUARD_OR(traced, size, (form & MT_FORM_ALIGNED) ? align : 0,
                                  new_call(fn, form, mt_padded(size, traced), align, nothrow)),
                      size, MT_OP_KIND(op));
    else
        MT_NEXT_ALLOC(MT_NEXT_PLAIN, traced, p, emulated_new(mt_padded(size, traced), align, form),
                      size, MT_OP_KIND(op));
    return p;
}

/* The call of FN, the next operator delete of FORM, as data (record.h's
 * mt_free_call): SIZE is the block's size where the form takes one. */
static inline mt_free_call delete_call(void *fn, unsigned form, size_t size, size_t align,
                                       const void *nothrow)
{
    switch (form) {
    case 0: return MT_FREE_CALL(fn, MT_FC_P, 0, 0);
    case MT_FORM_SIZED: return MT_FREE_CALL(fn, MT_FC_PA | MT_FC_SIZE_A, size, 0);
    case MT_FORM_ALIGNED: return MT_FREE_CALL(fn, MT_FC_PA, align, 0);
    case MT_FORM_SIZED | MT_FORM_ALIGNED:
        return MT_FREE_CALL(fn, MT_FC_PAB | MT_FC_SIZE_A, size, align);
    case MT_FORM_NOTHROW: return MT_FREE_CALL(fn, MT_FC_PP, nothrow, 0);
    default: return MT_FREE_CALL(fn, MT_FC_PAP, align, nothrow);
    }
}

void mt_delete(void *ptr, size_t size, size_t align, const void *nothrow, unsigned op)
{
    if (MT_UNLIKELY(ptr == NULL))
        return;
    void *fn = mt_ext_get(MT_OP_FN(op));
    if (MT_UNLIKELY(mt_cxx_replaced) && fn && cxx_operator(op)) {
        /* at once: it may be the program's, which counts, and frees with free */
        mt_free_call c = delete_call(fn, MT_OP_FORM(op), size, align, nothrow);
        mt_free_call_scoped(ptr, &c);
        return;
    }
    if (MT_LIKELY(fn != NULL))
        MT_NEXT_FREE(ptr, MT_OP_KIND(op), true,
                     delete_call(fn, MT_OP_FORM(op), size, align, nothrow));
    else /* emulated_new's block */
        MT_NEXT_FREE(ptr, MT_OP_KIND(op), mt_real.next_free != NULL,
                     MT_FREE_CALL(NULL, MT_FC_REAL, 0, 0));
}
