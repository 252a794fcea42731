/* MEMTRACE_CHILDREN (children.c): whether what the program starts is
 * traced too. */
#ifndef MT_CHILDREN_H
#define MT_CHILDREN_H

/* With MEMTRACE_CHILDREN=0, removes the memtrace libraries from the
 * LD_PRELOAD of this process's environment (in place, no heap), so that
 * the programs it starts run untraced. Called once, from the library's
 * constructor, before the program's main. */
void mt_children_untrace(void);

#endif
