/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The re-entrancy flag (reentry.h). Defined in base, below every layer
 * that reads or sets it (the stores' modules.c and threads.c as well as the
 * hot path), so that none of them refers up to the hot path for it. */
#include "base/reentry.h"

MT_TLS int mt_busy;
