/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timeline's file (timeline/ only): opened by mt_tl_start (writer.c),
 * written by the emitter (emit.c), closed at the end or in a fork child.
 * Not thread-safe: its callers hold the drain lock, or run before the
 * writer thread starts or after it ended. */
#ifndef MT_TL_FILE_H
#define MT_TL_FILE_H

#include <stdint.h>

#define MT_TL_PATH_BYTES 4096

/* Expands PATTERN (MEMTRACE_RECORD) and opens that file, O_NOFOLLOW; a
 * recording there of this process before its exec is kept and PATTERN.N
 * written instead (said once). NULL when open, else why not
 * (mt_tl_file_path then names the file tried). */
const char *mt_tl_file_open(const char *pattern);

/* The file's name, as expanded (the name tried, when the open failed). */
const char *mt_tl_file_path(void);

/* The timeline's descriptor, for a write at OFFSET, the bytes written so
 * far: checked before every write to be the file opened (the program may
 * have closed that number and opened a file of its own there), reopened
 * at OFFSET when it is not; -1, said once, when the file itself is gone
 * or replaced. */
int mt_tl_file_fd(uint64_t offset);

/* Closes the descriptor just opened (a start that failed after the open). */
void mt_tl_file_discard(void);

/* Closes the file when the descriptor still is it (else the number is the
 * program's and stays open); close's errno, or 0. */
int mt_tl_file_close(void);

#endif
