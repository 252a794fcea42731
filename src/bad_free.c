/* Frees the live table cannot match (see mt_bad_free in real.h). */
#include "real.h"

void mt_bad_free(const void *ptr, unsigned kind, const mt_live_entry *found)
{
    (void)ptr, (void)kind, (void)found;
}
