/* SPDX-License-Identifier: GPL-2.0 */
/* tlbtop: the text output of an interval and of the summary. */
#ifndef TLBTOP_SCREEN_H
#define TLBTOP_SCREEN_H

#include <stddef.h>
#include <time.h>

struct row;

/* The interval just collected (st.iv), titled with the time now. */
void screen_interval(time_t now);
/* The whole run (st.run), with the run table's rows. */
void screen_summary(struct row *rows, size_t n);

#endif /* TLBTOP_SCREEN_H */
