/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries unloaded without a dlclose memtrace sees: glibc loads iconv's
 * gconv modules itself and unloads one when enough other conversions were
 * opened since its last use. MYA.so (large) is opened and closed, then
 * EUC-KR five times, which makes glibc unload MYA.so; then MYB.so (small)
 * is loaded inside MYA.so's old span and allocates from its gconv_init.
 * The cfi unwinder's module record for MYA.so made it read MYA.so's
 * .eh_frame_hdr where nothing was mapped any more: SIGSEGV. Run with
 * GCONV_PATH naming the directory of MYA.so, MYB.so and gconv-modules.
 * Exits 0. */
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>

static void use(const char *charset)
{
    iconv_t cd = iconv_open("UTF-8", charset);
    if (cd == (iconv_t)-1) {
        perror(charset);
        exit(1);
    }
    iconv_close(cd);
}

int main(void)
{
    use("MYA//");
    for (int i = 0; i < 5; i++)
        use("EUC-KR");
    use("MYB//");
    printf("gconv_unload: done\n");
    return 0;
}
