/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_REPORT_DATA_H
#define PYROSPY_REPORT_DATA_H

#include <stddef.h>

/*
 * The html report's own page, src/output/report/, embedded at build time
 * (scripts/embed-report writes report_data.c): the markup of its body,
 * its style and its script, each NUL-terminated, _len bytes long.
 */
extern const char report_report_html[], report_report_css[], report_report_js[];
extern const size_t report_report_html_len, report_report_css_len, report_report_js_len;

#endif
