/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profiler's state that the folder's files share (prof_internal.h):
 * the settings, read once at start-up, this process's start, its report
 * count, whether the exit report is done, and the leak check's hooks.
 * profiler.c sets it at start-up and in a forked child; the others read
 * it. It calls no other file of the folder, so that none of them calls
 * profiler.c back. */
#include "profile/prof_internal.h"
#include "profile/profiler.h"

#include "base/children_env.h"
#include "base/config.h"
#include "report/pprof_out.h"

#include <errno.h>
#include <stdio.h> /* snprintf only: no stdio streams */

mt_prof_settings mt_prof_set = {
    .interval_ms = 1000,
    .top = 10,
    .exit_top = 1000,
    .top_by = MT_TOP_BY_LIVE,
};

/* The strings the settings need, copied at start-up: the program may
 * rewrite its environment and argv (setproctitle) or clear its environment
 * later, so nothing here points into them. */
static char output_copy[MT_PROF_PATH_BYTES], folded_copy[MT_PROF_PATH_BYTES];
/* MEMTRACE_FOLDED as the processes this one starts see it (see
 * mt_children_pass_on): "NAME=" and the template. */
static char folded_env[sizeof "MEMTRACE_FOLDED=" + MT_PROF_PATH_BYTES + 3];
static const char *folded_child_template;

uint64_t mt_prof_start_ns;
uint32_t mt_prof_report_number;
pid_t mt_prof_parent;
int mt_prof_exiting;

/* Set once at start-up, before the exit report can run. */
static const mt_leak_hooks *leak_hooks;

void mt_profiler_set_leak_hooks(const mt_leak_hooks *hooks)
{
    leak_hooks = hooks;
}

bool mt_prof_leak_classes(mt_stack_id id, uint64_t cls[4])
{
    return leak_hooks && leak_hooks->classes(id, cls);
}

void mt_prof_leak_run(const ucontext_t *uc, uintptr_t stack_from)
{
    if (leak_hooks)
        leak_hooks->run(uc, stack_from);
}

void mt_prof_load_settings(void)
{
    mt_profiler_config c;
    mt_config_profiler(&c);
    mt_prof_set.interval_ms = c.interval_ms;
    mt_prof_set.top = c.top;
    mt_prof_set.exit_top = c.exit_top;
    mt_prof_set.top_by = c.top_by;
    mt_prof_set.output =
        mt_setting_path(MT_SET_OUTPUT, output_copy, sizeof output_copy, "reporting on stderr");
    mt_prof_set.folded =
        mt_setting_path(MT_SET_FOLDED, folded_copy, sizeof folded_copy, "no folded files");
    folded_child_template =
        mt_children_pass_on("MEMTRACE_FOLDED", mt_prof_set.folded, folded_env, sizeof folded_env);
    mt_pprof_out_start(true);
    snprintf(mt_prof_set.program, sizeof mt_prof_set.program, "%s", program_invocation_short_name);
    mt_prof_set.signal = mt_config_signal(MT_SET_SIGNAL, "no signal asks for a report");
}

void mt_prof_state_forked(pid_t parent, uint64_t now_ns)
{
    mt_prof_parent = parent;
    mt_prof_start_ns = now_ns;
    mt_prof_report_number = 0;
    mt_prof_set.folded = folded_child_template;
}
