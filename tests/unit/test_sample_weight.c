/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sampling's estimates (src/store/sample_weight.c): the series memtrace
 * computes without libm, against libm, and the scaling of a sample. */
#include "store/sample_weight.h"

#include <criterion/criterion.h>
#include <math.h>

Test(sample_weight, one_minus_exp_neg_matches_libm)
{
    static const double xs[] = {
        1e-9, 1e-4, 0.01, 0.3, 0.49999, 0.5, 0.7, 1, 2.5, 10, 40, 700, 800
    };
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
        double want = -expm1(-xs[i]), got = mt_one_minus_exp_neg(xs[i]);
        cr_assert(fabs(got - want) <= 1e-12 * want, "1 - exp(-%g): %.17g, libm %.17g", xs[i], got,
                  want);
    }
}

Test(sample_weight, neg_log_matches_libm)
{
    static const double us[] = { 1, 0.999999, 0.75, 0.5, 0.3, 1e-3, 1e-9, 1.0 / 9007199254740992.0 };
    for (size_t i = 0; i < sizeof us / sizeof *us; i++) {
        double want = -log(us[i]), got = mt_neg_log(us[i]);
        cr_assert(fabs(got - want) <= 1e-12 * (want > 1 ? want : 1), "-ln %g: %.17g, libm %.17g",
                  us[i], got, want);
    }
}

/* A 64-byte sample at 524288 stands for 1 / (1 - exp(-1/8192)) blocks:
 * 8192.5 (rounded 8193 here, 8192 or 8193 both within the rounding), and
 * that many times 64 bytes; a block far above the rate stands for itself. */
Test(sample_weight, scale)
{
    mt_sample_estimate e = mt_sample_scale(64, 524288);
    double w = 1 / -expm1(-64.0 / 524288);
    cr_assert_eq(e.bytes, (uint64_t)(64 * w + 0.5));
    cr_assert_eq(e.blocks, (uint64_t)(w + 0.5));
    e = mt_sample_scale(UINT64_C(1) << 40, 524288);
    cr_assert_eq(e.bytes, UINT64_C(1) << 40);
    cr_assert_eq(e.blocks, 1);
    e = mt_sample_scale(0, 524288);
    cr_assert_eq(e.bytes, 0);
    cr_assert_eq(e.blocks, 1);
}
