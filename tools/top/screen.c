/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace top's screen (top.h): ncurses, redrawn at each refresh and at
 * each key that changes the order; the keys: l, a, t, g (the orders of
 * --by) and q to quit; -n COUNT ends it after COUNT refreshes, the last
 * shown for an interval. Reads happen between keys only, so a key is
 * answered within one read. */
#include "top.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char keys_line[] = "keys: l live bytes  a allocations  t temporary  g growth  q quit";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void draw(struct top_view *v, double interval, enum top_order order, const char *skipped)
{
    char line[1024];
    erase();
    mvprintw(0, 0, "memtrace top - process %d (%s) - every %g s - by %s", v->pid, v->comm, interval,
             top_order_names[order]);
    top_totals(v, line, sizeof line);
    mvaddnstr(1, 0, line, COLS);
    if (skipped) {
        snprintf(line, sizeof line, "last refresh skipped: %s", skipped);
    } else {
        top_notes(v, line, sizeof line);
    }
    mvaddnstr(2, 0, line[0] ? line : keys_line, COLS);
    attron(A_REVERSE);
    mvaddnstr(4, 0, top_columns, COLS);
    attroff(A_REVERSE);
    struct top_site **s;
    size_t n = top_sorted(v, order, &s);
    for (size_t k = 0; k < n && (int)k + 5 < LINES; k++) {
        top_site_line(v, s[k], line, sizeof line);
        mvaddnstr((int)k + 5, 0, line, COLS);
    }
    free(s);
    refresh();
}

int top_screen(struct top_view *v, double interval, enum top_order order, unsigned long count)
{
    char why[512];
    int r = top_refresh(v, why, sizeof why);
    if (r < 0) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    initscr();
    cbreak();
    noecho();
    curs_set(0);
    keypad(stdscr, TRUE);
    char skipped[512];
    const char *skip = r == 0 ? strcpy(skipped, why) : NULL;
    double next = now() + interval;
    draw(v, interval, order, skip);
    for (;;) {
        double left = next - now();
        if (left <= 0) {
            if (count && --count == 0) {
                endwin();
                return 0;
            }
            r = top_refresh(v, why, sizeof why);
            if (r < 0) {
                endwin();
                fprintf(stderr, "%s\n", why);
                return 1;
            }
            skip = r == 0 ? strcpy(skipped, why) : NULL;
            next += interval;
            if (next < now())
                next = now() + interval;
            draw(v, interval, order, skip);
            continue;
        }
        timeout((int)(left * 1000) + 1);
        int ch = getch();
        enum top_order was = order;
        switch (ch) {
        case 'q':
        case 'Q': endwin(); return 0;
        case 'l': order = BY_LIVE; break;
        case 'a': order = BY_ALLOCS; break;
        case 't': order = BY_TEMPORARY; break;
        case 'g': order = BY_GROWTH; break;
        case KEY_RESIZE: was = (enum top_order) - 1; break;
        default: break;
        }
        if (order != was)
            draw(v, interval, order, skip);
    }
}
