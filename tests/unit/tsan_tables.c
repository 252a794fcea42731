/* The shared tables under ThreadSanitizer: threads insert and remove in the
 * live table, intern overlapping stacks and push freed records at once.
 * Built with -fsanitize=thread; any data race makes TSan fail the run. Exits
 * 0 when the final counts are exact. */
#include "../../src/freed_history.h"
#include "../../src/live_table.h"
#include "../../src/stack_store.h"

#include <pthread.h>
#include <stdio.h>

enum { THREADS = 4, OPS = 50000 };

static void *worker(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (uintptr_t i = 0; i < OPS; i++) {
        uintptr_t frames[4] = { 0x1000, i % 97, 0x2000, 0x3000 };
        mt_live_entry e = { .ptr = (t << 40) + i * 16, .size = i % 500, .seq = i,
                            .stack = mt_stack_intern(frames, 4), .thread = (uint32_t)t };
        mt_live_insert(&e);
        if (i % 2) {
            mt_live_entry old;
            if (mt_live_remove(e.ptr, &old)) {
                mt_freed_record r = { .ptr = old.ptr, .size = old.size, .alloc_stack = old.stack };
                mt_freed_push(&r);
            }
        }
    }
    return NULL;
}

int main(void)
{
    mt_freed_init(1 << 20); /* larger than all pushes: no writer laps another */
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(t + 1));
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    size_t want = THREADS * (OPS / 2);
    printf("tsan_tables: %zu live (want %zu), %u stacks (want 97)\n", mt_live_count(), want,
           mt_stack_count());
    return mt_live_count() == want && mt_stack_count() == 97 ? 0 : 1;
}
