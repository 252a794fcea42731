/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sampling's estimates (MEMTRACE_SAMPLE): a block of SIZE bytes
 * is sampled with probability 1 - exp(-SIZE/RATE) (exponential intervals of
 * RATE bytes on average between samples, capture/sample.h), so that each
 * sampled block stands for 1 / (1 - exp(-SIZE/RATE)) blocks of its size:
 * Go's and pprof's unbiased scaling. Every figure memtrace derives from the
 * records (site totals, the peak, pprof) is scaled so in sample mode; the
 * scaling is a function of SIZE and RATE alone, so a block's free takes
 * off exactly what its allocation added. */
#ifndef MT_SAMPLE_WEIGHT_H
#define MT_SAMPLE_WEIGHT_H

#include "base/common.h"

#include <stdint.h>

/* MEMTRACE_SAMPLE: mean bytes between samples; 0 = every block traced.
 * Set once at start-up (mt_sample_start), before any block is recorded. */
extern uint64_t mt_sample_rate MT_HIDDEN;

/* 1 - exp(-X) for X >= 0, to about 1e-12 relative (no libm: memtrace
 * links none). */
double mt_one_minus_exp_neg(double x);

/* -ln(U) for 0 < U <= 1, the same accuracy. */
double mt_neg_log(double u);

/* The estimate one sampled block of SIZE bytes stands for, at RATE (> 0):
 * its bytes (SIZE / (1 - exp(-SIZE/RATE)), rounded) and blocks (the
 * weight, rounded, at least 1). */
typedef struct {
    uint64_t bytes, blocks;
} mt_sample_estimate;
mt_sample_estimate mt_sample_scale(uint64_t size, uint64_t rate);

/* SIZE as the site totals count it: SIZE itself when not sampling. */
static inline uint64_t mt_sample_bytes(uint64_t size)
{
    if (MT_LIKELY(mt_sample_rate == 0))
        return size;
    return mt_sample_scale(size, mt_sample_rate).bytes;
}

static inline uint64_t mt_sample_blocks(uint64_t size)
{
    if (MT_LIKELY(mt_sample_rate == 0))
        return 1;
    return mt_sample_scale(size, mt_sample_rate).blocks;
}

#endif
