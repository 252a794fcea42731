/* The guard page fault's report (guard_report.h). */
#include "report/guard_report.h"

#include "base/output.h"
#include "report/describe.h"
#include "report/format.h"
#include "store/threads.h"

#include <pthread.h>

static const char *access_word(int access)
{
    return access == MT_ACCESS_READ ? "read" : access == MT_ACCESS_WRITE ? "write" : "access";
}

static void put_thread(mt_out *out, const char *what, uint32_t number)
{
    mt_fmt_thread t = mt_describe_thread(number);
    if (t.name)
        mt_out_printf(out, "  %s by thread %u \"%s\"", what, t.number, t.name);
    else
        mt_out_printf(out, "  %s by thread %u", what, t.number);
}

static void put_stack(mt_out *out, mt_stack_id id)
{
    mt_fmt_stack_ref s = mt_describe_stack_ref(id);
    mt_fmt_block_stack(out, mt_describe_stack, NULL, &s);
}

static void first_line(mt_out *out, const mt_guard_fault *f)
{
    const mt_guard_block *b = &f->block;
    unsigned long start = (unsigned long)b->start, size = (unsigned long)b->size;
    const char *access = access_word(f->access);
    if (b->state == MT_GUARD_FREED) {
        long off = (long)(f->addr - b->start);
        mt_out_printf(out, "memtrace: use-after-free %s: at offset %ld of a freed %lu-byte block at %#lx\n",
                      access, off, size, start);
    } else if (f->addr < b->start) {
        unsigned long before = (unsigned long)(b->start - f->addr);
        mt_out_printf(out, "memtrace: heap-buffer-underflow: %s at offset -%lu, %lu %s before a "
                           "%lu-byte block at %#lx\n",
                      access, before, before, before == 1 ? "byte" : "bytes", size, start);
    } else {
        unsigned long off = (unsigned long)(f->addr - b->start);
        unsigned long past = off - size + 1;
        mt_out_printf(out, "memtrace: heap-buffer-overflow: %s at offset %lu, %lu %s past the end "
                           "of a %lu-byte block at %#lx\n",
                      access, off, past, past == 1 ? "byte" : "bytes", size, start);
    }
}

void mt_guard_report(const mt_guard_fault *f)
{
    int fd = mt_err_fd();
    if (fd < 0)
        return;
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    mt_out out;
    mt_out_init(&out, fd);
    first_line(&out, f);
    put_thread(&out, "detected", mt_thread_number());
    mt_out_printf(&out, " at:\n");
    mt_fmt_stack_ref access = { f->frames, f->depth };
    mt_fmt_block_stack(&out, mt_describe_stack, NULL, &access);
    const mt_guard_block *b = &f->block;
    if (b->state == MT_GUARD_FREED) {
        if (b->free_stack) {
            put_thread(&out, "freed", b->free_thread);
            mt_out_printf(&out, " (after allocation #%lu) at:\n", (unsigned long)b->free_seq);
            put_stack(&out, b->free_stack);
        }
        if (b->alloc_stack) {
            put_thread(&out, "allocated", b->alloc_thread);
            mt_out_printf(&out, " (allocation #%lu) at:\n", (unsigned long)b->alloc_seq);
            put_stack(&out, b->alloc_stack);
        }
    } else if (f->has_alloc) {
        put_thread(&out, "allocated", f->alloc_thread);
        mt_out_printf(&out, " (allocation #%lu) at:\n", (unsigned long)f->alloc_seq);
        put_stack(&out, f->alloc_stack);
    }
    mt_out_printf(&out, "memtrace: %s\n", f->then);
    mt_out_flush(&out);
    pthread_setcancelstate(cancel, NULL);
}
