/* SPDX-License-Identifier: GPL-2.0 */
/* tlbtop -j: the JSON object of an interval and of the summary. */
#ifndef TLBTOP_JSON_H
#define TLBTOP_JSON_H

#include <stddef.h>
#include <time.h>

struct row;

/* The interval just collected (st.iv), at time now. */
void json_interval(time_t now);
/* The whole run (st.run), with the run table's rows. */
void json_summary(struct row *rows, size_t n);

#endif /* TLBTOP_JSON_H */
