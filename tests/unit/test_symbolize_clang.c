/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The symbolizer's tests (test_symbolize.c) with the fixture compiled by
 * clang (tests/tests.mk), which writes no .debug_aranges: its frames are
 * found through the CU index (src/symbolize/sym_cus.c), in a program whose
 * other CUs (gcc's) have aranges; under ASan and UBSan too. */
#include "test_symbolize.c"
