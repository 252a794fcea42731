/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace-symbolize --core-check CORE [EXE]: what makes the core file CORE
 * unusable with the executable EXE, in one sentence on standard output
 * (the gdb helper says it after "memtrace: "), or nothing: CORE cut short
 * (its segments reach past its end), dumped by another executable
 * (build-id, else name, of the NT_FILE mapping holding AT_PHDR), or by a
 * process without libmemtrace among its mapped files. Reads the program
 * headers and the notes only. A file that is not a 64-bit little-endian
 * ELF file, or cannot be opened, gets nothing: gdb says what it is.
 * Status 0 either way. */
#ifndef MT_TOOLS_CORE_CHECK_H
#define MT_TOOLS_CORE_CHECK_H

int mt_core_check(const char *core, const char *exe);

#endif
