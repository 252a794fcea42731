/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "store/sample_weight.h"

uint64_t mt_sample_rate;

#define LN2 0.69314718055994530942

/* exp(-R) for 0 <= R < ln 2 by its series (20 terms: below 1e-16). */
static double exp_neg_small(double r)
{
    double term = 1, sum = 1;
    for (int k = 1; k < 20; k++) {
        term *= -r / k;
        sum += term;
    }
    return sum;
}

double mt_one_minus_exp_neg(double x)
{
    if (x < 0.5) { /* the series of 1 - exp(-x), without cancellation */
        double term = x, sum = 0;
        for (int k = 2; k < 22; k++) {
            sum += term;
            term *= -x / k;
        }
        return sum;
    }
    if (x > 745)
        return 1;
    int n = (int)(x / LN2);
    double e = exp_neg_small(x - n * LN2);
    while (n-- > 0)
        e *= 0.5;
    return 1 - e;
}

double mt_neg_log(double u)
{
    /* u = m * 2^-n, m in [1/2, 1); -ln u = n ln 2 - ln m, and ln m =
     * 2 atanh(z), z = (m - 1) / (m + 1) in (-1/3, 0]. */
    int n = 0;
    while (u < 0.5) {
        u *= 2;
        n++;
    }
    double z = (u - 1) / (u + 1), z2 = z * z, term = z, s = 0;
    for (int k = 1; k < 40; k += 2) {
        s += term / k;
        term *= z2;
    }
    return n * LN2 - 2 * s;
}

mt_sample_estimate mt_sample_scale(uint64_t size, uint64_t rate)
{
    if (size == 0) /* sampled with probability 0: counts as one block */
        return (mt_sample_estimate){ 0, 1 };
    double p = mt_one_minus_exp_neg((double)size / (double)rate);
    double w = 1 / p;
    uint64_t blocks = (uint64_t)(w + 0.5);
    return (mt_sample_estimate){ (uint64_t)((double)size * w + 0.5), blocks ? blocks : 1 };
}
