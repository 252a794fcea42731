/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The launcher's requests to memtrace-symbolize (cli/memtrace.sh): one
 * question a run, asked on the command line and answered on standard
 * output, so that the launcher parses no binary format and writes in no
 * number of one machine's ABI.
 *
 *   memtrace-symbolize --elf-info FILE
 *       what the ELF file FILE is, one "KEY VALUE" line each, in this order:
 *         class 32|64
 *         byte-order native|foreign     this machine's, or the other
 *         machine N                     e_machine, decimal
 *         type rel|exec|dyn|core|N      e_type (N: another, decimal)
 *         program-headers whole|cut-short   the table e_phoff and e_phnum
 *                                       name lies in the file, or not
 *         pt-interp yes|no|unknown      a PT_INTERP among the program
 *                                       headers whose p_type is in the
 *                                       file; unknown: e_phentsize is
 *                                       under 4 bytes, no p_type to read
 *         interp PATH                   the interpreter, when the table is
 *                                       whole and PT_INTERP's bytes are in
 *                                       the file (no line otherwise)
 *       Status 0; 1 and one "memtrace: FILE: ..." line on standard error
 *       when FILE cannot be opened, is not an ELF file, or is too short
 *       for its ELF header.
 *
 *   memtrace-symbolize --core-check CORE [EXE]
 *       the gdb helper's check of a core file (tools/core_check.h)
 *
 *   memtrace-symbolize --wait-syscalls
 *       this machine's numbers of the system calls a thread waits in while
 *       holding no allocator or loader lock (read, poll, futex, ...), on
 *       one line, separated by spaces: where memtrace attach may stop a
 *       thread to call into the process (cli/memtrace_attach.py).
 */
#ifndef MT_TOOLS_LAUNCHER_REQUESTS_H
#define MT_TOOLS_LAUNCHER_REQUESTS_H

/* Answers ARGV when it is one of the requests above and returns the exit
 * status; returns -1, having written nothing, when it is not. */
int mt_launcher_request(int argc, char **argv);

#endif
