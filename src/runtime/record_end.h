/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording's start and end in the process's life (timeline.h):
 * started from the constructor, ended at exit with the frames
 * symbolized by the process's symbolizer. */
#ifndef MT_RECORD_END_H
#define MT_RECORD_END_H

/* Opens the recording's file, starts its writer and registers its end at
 * exit. From the constructor; nothing when no recording is asked for. */
void mt_record_file_start(void);

#endif
