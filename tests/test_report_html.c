/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * The html report (-f html) driven in Debian's Chromium, headless, by
 * tests/consumers/report-check.mjs (playwright-core): clicks, keys and
 * typing as a person would, on reports recorded from real targets; the
 * seed checks run in Debian's Firefox ESR too (WebDriver BiDi).  What
 * the page drew is compared with the folded profile of the same recording
 * (the --raw file beside it, read back by pyrospy report), not with
 * constants.  node, playwright-core or a browser missing fails the test:
 * run `npm ci' in tests/consumers, scripts/setup --test for the browsers.
 */

/* The number after "key": in json; fails the test if absent. */
static double json_num(const char *json, const char *key)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\"%s\":", key);
	p = strstr(json, want);
	cr_assert(p, "no %s in %s", key, json);
	return strtod(p + strlen(want), NULL);
}

/* Whether "key":"value" is in json. */
static int json_is(const char *json, const char *key, const char *value)
{
	char want[256];

	snprintf(want, sizeof(want), "\"%s\":\"%s\"", key, value);
	return strstr(json, want) != NULL;
}

/*
 * The counts of record's closing line on stderr, "pyrospy: 2.0 s, T ticks
 * (H Hz of R asked[, L late]), S samples[, D dropped (...)]": what the
 * page's header must say.
 */
struct closing {
	unsigned long ticks, late, samples, dropped;
};

static void closing_line(const char *err, struct closing *c)
{
	const char *p = strstr(err, " ticks (");
	const char *q;

	memset(c, 0, sizeof(*c));
	cr_assert(p, "no closing line in %s", err);
	for (q = p; q > err && q[-1] != ' '; q--)
		;
	c->ticks = strtoul(q, NULL, 10);
	q = strstr(p, " late)");
	if (q && q < strstr(p, " samples")) {
		while (q > p && q[-1] != ' ')
			q--;
		c->late = strtoul(q, NULL, 10);
	}
	q = strstr(p, "), ");
	cr_assert(q, "no samples in %s", err);
	c->samples = strtoul(q + 3, NULL, 10);
	q = strstr(p, " dropped (changed under every read)");
	if (q) {
		while (q > p && q[-1] != ' ')
			q--;
		c->dropped = strtoul(q, NULL, 10);
	}
}

/*
 * node report-check.mjs MODE ARGS in browser ("chromium" or "firefox"),
 * run in dir: its JSON (caller frees).
 */
static char *check_in(const char *browser, const char *dir, const char *mode, const char *args)
{
	const char *exe = strcmp(browser, "firefox") ? "/usr/bin/chromium" : "/usr/bin/firefox-esr";
	char cmd[2048], *json;
	int st;

	cr_assert_eq(access(exe, X_OK), 0, "%s is missing: install Debian's %s (scripts/setup --test)",
		     exe, strcmp(browser, "firefox") ? "chromium" : "firefox-esr");
	snprintf(cmd, sizeof(cmd), "cd '%s' && REPORT_BROWSER=%s node "
		 "'%s/tests/consumers/report-check.mjs' %s %s 2>&1", dir, browser, SRCDIR, mode, args);
	json = test_run(cmd, &st);
	cr_assert_eq(st, 0, "report-check.mjs failed in %s (status %d; node, playwright-core and "
			    "puppeteer-core are needed: npm ci in tests/consumers, and %s):\n%s",
		     browser, st, exe, json);
	cr_log_info("%s", json);
	cr_assert(strstr(json, strcmp(browser, "firefox") ? "Chrome/" : "Firefox/"),
		  "not run in %s: %s", browser, json);
	cr_assert_eq(json_num(json, "requests"), 0, "the page made requests: %s", json);
	cr_assert_eq(json_num(json, "errors"), 0, "the page logged errors: %s", json);
	return json;
}

/* The same in Chromium. */
static char *check(const char *dir, const char *mode, const char *args)
{
	return check_in("chromium", dir, mode, args);
}

/*
 * Record script with in for 2 s, --threads, into dir/report.html and
 * dir/report.raw at once; the folded profile of that raw recording
 * (caller frees), and dir/again.html written from it by report; *pidp
 * gets the target's pid.
 */
static char *record(const struct interp *in, const char *script, char *dir, size_t cap,
		    pid_t *pidp, struct closing *cl)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], html[128], raw[128], again[128], *out, *err, *folded;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "--threads", "-f", "html",
			       "-o", html, "--raw", raw, NULL };
	const char *rep[] = { "report", raw, "--threads", "-o", "-", NULL };
	const char *rep_html[] = { "report", raw, "--threads", "-f", "html", "-o", again, NULL };
	pid_t pid;
	int st;

	snprintf(dir, cap, "/tmp/pyrospy-html-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(html, sizeof(html), "%s/report.html", dir);
	snprintf(raw, sizeof(raw), "%s/report.raw", dir);
	snprintf(again, sizeof(again), "%s/again.html", dir);
	pid = test_start(in, sargs, ready, sizeof(ready));
	*pidp = pid;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: record -f html: exit %d: %s", in->bin, st, err);
	cr_assert(strstr(err, "wrote html profile to"), "%s: %s", in->bin, err);
	closing_line(err, cl);
	free(out);
	free(err);
	st = test_pyrospy(rep, &folded, &err);
	cr_assert_eq(st, 0, "%s: report: exit %d: %s", in->bin, st, err);
	free(err);
	st = test_pyrospy(rep_html, &out, &err);
	cr_assert_eq(st, 0, "%s: report -f html: exit %d: %s", in->bin, st, err);
	free(out);
	free(err);
	return folded;
}

/*
 * The seed workload recorded from in, its report driven in browser and
 * compared with the folded profile of the same recording.
 */
static void check_seed(const struct interp *in, const char *script, const char *browser)
{
	char dir[64], needle[128], args[512], rm[128], *folded, *json, *again;
	struct closing cl;
	const char *foo = test_func(in, "foo"), *bar = test_func(in, "bar");
	const char *work = test_func(in, "work"), *baz = test_func(in, "baz");
	double all, nfoo, nbar, nside, width, samples;
	pid_t pid;

	folded = record(in, script, dir, sizeof(dir), &pid, &cl);
	all = (double)test_folded_count(folded, "");
	snprintf(needle, sizeof(needle), ";%s (", foo);
	nfoo = (double)test_folded_count(folded, needle);
	snprintf(needle, sizeof(needle), ";%s (", bar);
	nbar = (double)test_folded_count(folded, needle);
	nside = (double)test_folded_count(folded, "): side;");
	cr_assert(all >= 100 && nfoo > 0 && nbar > 0 && nside > 0,
		  "%s: %g samples, %g foo, %g bar, %g in side:\n%s", in->bin, all, nfoo, nbar,
		  nside, folded);

	snprintf(args, sizeof(args), "report.html '%s' '%s' '%s' '%s'", foo, bar, work, baz);
	json = check_in(browser, dir, "seed", args);
	samples = json_num(json, "samples");
	width = json_num(json, "canvas_width");
	cr_assert_eq(samples, all, "%s: the page shows %g samples, the recording holds %g",
		     in->bin, samples, all);
	/*
	 * the summary: the process (its interpreter, pid and command line, the
	 * title), the time range, the rate, the ticks, samples and drops of
	 * record's closing line, the threads
	 */
	snprintf(needle, sizeof(needle), "\"title\":\"%s", in->bin);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	snprintf(needle, sizeof(needle), "/%s\",", script);
	cr_assert(strstr(json, needle), "%s: the title is no command line: %s", in->bin, json);
	snprintf(needle, sizeof(needle), "\"Interpreter%s %u.%u.",
		 in->lang == TARGET_RUBY ? "Ruby" : "Python", in->major, in->minor);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	snprintf(needle, sizeof(needle), "\"Processpid %d\"", (int)pid);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	snprintf(needle, sizeof(needle), "\"Command%s", in->bin);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	cr_assert(strstr(json, "\"Started20") && strstr(json, "\"Ended20"), "%s: %s", in->bin,
		  json);
	snprintf(needle, sizeof(needle), "\"Samples%.0f\"", all);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	cr_assert_eq((double)cl.samples, all, "%s: the closing line says %lu samples, the page %g",
		     in->bin, cl.samples, all);
	cr_assert(strstr(json, "\"Rate asked100 Hz\""), "%s: %s", in->bin, json);
	cr_assert(strstr(json, "\"Rate delivered"), "%s: %s", in->bin, json);
	snprintf(needle, sizeof(needle), "\"Ticks%lu\"", cl.ticks);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	snprintf(needle, sizeof(needle), "\"Late ticks%lu\"", cl.late);
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	if (cl.dropped)
		snprintf(needle, sizeof(needle), "\"Dropped%lu (changed under every read)\"",
			 cl.dropped);
	else
		snprintf(needle, sizeof(needle), "\"Dropped0\"");
	cr_assert(strstr(json, needle), "%s: no '%s': %s", in->bin, needle, json);
	cr_assert(strstr(json, "\"Threads2\""), "%s: %s", in->bin, json);
	/* the first screen: foo and bar, as wide as their share */
	cr_assert_gt(json_num(json, "first_foo_w"), json_num(json, "first_bar_w"), "%s: %s", in->bin,
		     json);
	cr_assert_gt(json_num(json, "first_bar_w"), 0, "%s: bar not on the first screen: %s",
		     in->bin, json);
	cr_assert(fabs(json_num(json, "first_foo_w") - width * nfoo / all) < 1.5,
		  "%s: foo %g px of %g, its share %g/%g", in->bin, json_num(json, "first_foo_w"),
		  width, nfoo, all);
	cr_assert(fabs(json_num(json, "first_bar_w") - width * nbar / all) < 1.5,
		  "%s: bar %g px of %g, its share %g/%g", in->bin, json_num(json, "first_bar_w"),
		  width, nbar, all);
	/* colours: the script's functions are app code, threading's standard library */
	snprintf(needle, sizeof(needle), "\"%s\":\"app\"", foo);
	cr_assert(strstr(json, needle), "%s: no %s: %s", in->bin, needle, json);
	cr_assert(in->lang != TARGET_PYTHON || strstr(json, "\"Thread.run\":\"stdlib\""),
		  "%s: threading is no standard library: %s", in->bin, json);
	cr_assert_eq(json_num(json, "legend_complete"), 1, "%s: %s", in->bin, json);
	/* hover */
	cr_assert(json_is(json, "tip_name", foo), "%s: tooltip: %s", in->bin, json);
	/* the whole path, and the line unless foo was sampled on two (its entry's too) */
	{
		const char *path = test_target_path(script);
		char l1[1100], l2[1100];

		snprintf(l1, sizeof(l1), "\"tip_file\":\"%s:", path);
		snprintf(l2, sizeof(l2), "\"tip_file\":\"%s\"", path);
		cr_assert(strstr(json, l1) || strstr(json, l2), "%s: tooltip without %s: %s", in->bin,
			  l2, json);
	}
	snprintf(needle, sizeof(needle), "total %.0f (", nfoo);
	cr_assert(strstr(json, needle), "%s: tooltip without '%s': %s", in->bin, needle, json);
	/* zoom on foo: full width, bar gone; the breadcrumbs and Escape go back */
	cr_assert(json_is(json, "zoom_state", foo), "%s: %s", in->bin, json);
	cr_assert(fabs(json_num(json, "zoom_foo_w") - width) < 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "zoom_bar_boxes"), 0, "%s: %s", in->bin, json);
	cr_assert_geq(json_num(json, "zoom_crumbs"), 2, "%s: %s", in->bin, json);
	cr_assert(json_is(json, "back_state", "all"), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "back_foo_w"), json_num(json, "first_foo_w"));
	cr_assert_eq(json_num(json, "back_bar_w"), json_num(json, "first_bar_w"));
	cr_assert(json_is(json, "zoom2_state", foo) && json_is(json, "escape_state", "all"),
		  "%s: %s", in->bin, json);
	/* search: "/" and Ctrl-F, bar's share as the folded profile has it */
	cr_assert(json_is(json, "slash_focus", "search") && json_is(json, "ctrlf_focus", "search"),
		  "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "search_samples"), nbar, "%s: search %s: %g samples, folded %g",
		     in->bin, bar, json_num(json, "search_samples"), nbar);
	cr_assert(fabs(json_num(json, "search_share") - nbar / all) < 1e-9, "%s: %s", in->bin, json);
	cr_assert_geq(json_num(json, "search_hl_bar"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "search_hl_other"), 0, "%s: %s", in->bin, json);
	cr_assert(fabs(json_num(json, "regex_share") - (nfoo + nbar) / all) < 1e-9,
		  "%s: /^(foo|bar)$/: %s, folded %g", in->bin, json, (nfoo + nbar) / all);
	/* the table by self: work, the innermost, first; a row highlights its boxes */
	cr_assert(json_is(json, "sort_first", work), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sort_descending"), 1, "%s: %s", in->bin, json);
	cr_assert(json_is(json, "row_selected", bar), "%s: %s", in->bin, json);
	cr_assert_geq(json_num(json, "row_hl_bar"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "row_hl"), json_num(json, "row_hl_bar"), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "row_hl_bar"), json_num(json, "row_bar_boxes"), "%s: %s", in->bin,
		     json);
	cr_assert_eq(json_num(json, "row_unselected_hl"), 0, "%s: %s", in->bin, json);
	/* the sandwich of bar: its callers above it, work below, foo nowhere */
	cr_assert(json_is(json, "sw_state", bar) && json_is(json, "sw_callers_root", bar) &&
		  json_is(json, "sw_callees_root", bar), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_callers_total"), nbar, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_callees_total"), nbar, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_callers_above"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_callee_work"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_caller_work"), 0, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_foo_boxes"), 0, "%s: %s", in->bin, json);
	cr_assert(strstr(json, "\"sw_after_escape\":null"), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "sw_parts_after"), 0, "%s: %s", in->bin, json);
	cr_assert_geq(json_num(json, "filter_rows"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "filter_all_match"), 1, "%s: %s", in->bin, json);
	/* inverted: work is the widest root, foo no root */
	cr_assert(json_is(json, "inv_root", work), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "inv_foo_depth1"), 0, "%s: %s", in->bin, json);
	snprintf(needle, sizeof(needle), ";%s (", work);
	cr_assert_eq(json_num(json, "inv_work_total"), (double)test_folded_count(folded, needle),
		     "%s: %s", in->bin, json);
	/* the thread picker: side alone has baz and no foo, main the other way */
	cr_assert_eq(json_num(json, "threads"), 2, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "side_samples"), nside, "%s: side: %s, folded %g", in->bin, json,
		     nside);
	cr_assert_eq(json_num(json, "side_foo_boxes"), 0, "%s: %s", in->bin, json);
	cr_assert_geq(json_num(json, "side_baz_boxes"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "main_samples"), all - nside, "%s: %s", in->bin, json);
	cr_assert_geq(json_num(json, "main_foo_boxes"), 1, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "main_baz_boxes"), 0, "%s: %s", in->bin, json);
	free(json);

	/* report writes the same page of the same samples */
	snprintf(rm, sizeof(rm), "%s/again.html", dir);
	again = test_slurp(rm);
	snprintf(needle, sizeof(needle), "\"samples\":%.0f,", all);
	cr_assert(strstr(again, needle), "%s: report -f html: no %s", in->bin, needle);
	/* a raw recording keeps no interpreter, pid, command or ticks: left out, not 0 */
	cr_assert(!strstr(again, "\"interp\":") && !strstr(again, "\"pid\":") &&
		  !strstr(again, "\"command\":") && !strstr(again, "\"ticks\":"),
		  "%s: report -f html says what the recording does not keep", in->bin);
	free(again);
	free(folded);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
}

Test(report_html, python, .timeout = 120)
{
	check_seed(&test_pythons[1], "report_seed.py", "chromium");
}

Test(report_html, ruby, .timeout = 120)
{
	check_seed(&test_rubies[1], "report_seed.rb", "chromium");
}

/*
 * The seed checks of report_html/python in Debian's Firefox ESR, driven
 * through WebDriver BiDi: the report is no Chromium-only page.
 */
Test(report_html, firefox, .timeout = 120)
{
	check_seed(&test_pythons[1], "report_seed.py", "firefox");
}

/* the names of tests/targets/hostile_html.py that the page must show, as JSON */
static const char names[] =
	"[\"</script><script>window.pwned=1</script>\","
	"\"<img src=x onerror=\\\"window.pwned=2\\\">\","
	"\"line\\u2028sep\\u2029end'\\\"\\\\\","
	"\"\\u200frtl\\u200f mark\"]";

/* an argument of the target's command line, shown in the page's header */
#define EVIL_ARG "</script><img src=x onerror=window.pwned=1>"

/*
 * Names that are markup -- from a target run as nobody, profiled by root
 * -- are shown as text (in the graph, the table, the tooltip, the thread
 * picker, and its command line in the header, cut at 4 KiB) and run nothing: no handler set window.pwned, the page
 * has its two script elements only and no element the names spell.
 */
Test(report_html, hostile_names, .timeout = 120)
{
	static const struct interp nobody_python = { NULL, "setpriv", TARGET_PYTHON, 3, 11 };
	const char *sargs[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				"--pdeathsig=SIGKILL", "/usr/bin/python3.11",
				test_target_path("hostile_html.py"), EVIL_ARG, NULL, NULL };
	static char longarg[6001];
	char dir[64], html[128], path[128], rm[128], ready[64], pidbuf[32], *out, *err, *json, *page;
	const char *cmd, *end, *title, *tend;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "1", "--threads", "-f", "html",
			       "-o", html, NULL };
	FILE *f;
	pid_t pid;
	int st;

	cr_assert_eq(geteuid(), 0, "run as root: the target runs as nobody");
	/* and a command line longer than pyrospy reads of it (4 KiB) */
	memset(longarg, 'W', sizeof(longarg) - 1);
	sargs[7] = longarg;
	snprintf(dir, sizeof(dir), "/tmp/pyrospy-html-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(html, sizeof(html), "%s/report.html", dir);
	snprintf(path, sizeof(path), "%s/names.json", dir);
	f = fopen(path, "w");
	cr_assert(f && fputs(names, f) >= 0 && !fclose(f));
	pid = test_start(&nobody_python, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "record -f html: exit %d: %s", st, err);
	free(out);
	free(err);

	/* the file: the names only inside the data, escaped */
	page = test_slurp(html);
	cr_assert(!strstr(page, "</script><script>window"), "a name ends the data's script");
	cr_assert(!strstr(page, "<img"), "a name is markup in the file");
	cr_assert(!strstr(page, "\xe2\x80\xa8"), "U+2028 unescaped");
	free(page);

	json = check(dir, "hostile", "report.html names.json");
	cr_assert_eq(json_num(json, "pwned"), 0, "a name ran: %s", json);
	cr_assert_eq(json_num(json, "pwned_after"), 0, "a name ran: %s", json);
	cr_assert_eq(json_num(json, "scripts"), 2, "%s", json);
	cr_assert_eq(json_num(json, "scripts_after"), 2, "%s", json);
	cr_assert_eq(json_num(json, "elements"), 0, "%s", json);
	cr_assert_eq(json_num(json, "elements_after"), 0, "%s", json);
	cr_assert_eq(json_num(json, "in_table"), 4, "the table: %s", json);
	cr_assert_eq(json_num(json, "drawn"), 4, "the graph: %s", json);
	cr_assert_eq(json_num(json, "tips"), 4, "the tooltips: %s", json);
	cr_assert_geq(json_num(json, "long_name"), 4000, "the 5000 characters: %s", json);
	cr_assert_eq(json_num(json, "thread_shown"), 1, "the thread picker: %s", json);
	cr_assert(json_num(json, "search_share") > 0.9, "search '<img': %s", json);
	/*
	 * the header: the command line as text, cut at 4 KiB (4095 bytes, all
	 * ASCII here); the heading its first 200 characters and an ellipsis
	 */
	cmd = strstr(json, "\"Command/usr/bin/python3.11 ");
	cr_assert(cmd, "no command: %s", json);
	cmd += strlen("\"Command");
	end = strchr(cmd, '"');
	cr_assert(end && end - cmd == 4095, "the command: %ld bytes: %s", end ? (long)(end - cmd) : 0L,
		  json);
	cr_assert(strstr(cmd, "hostile_html.py " EVIL_ARG " WWWW") &&
		  strstr(cmd, "hostile_html.py " EVIL_ARG " WWWW") < end, "the command: %s", json);
	title = strstr(json, "\"title\":\"");
	cr_assert(title, "no title: %s", json);
	title += strlen("\"title\":\"");
	tend = strchr(title, '"');
	cr_assert(tend && tend - title == 200 + 3 && !strncmp(title, cmd, 200) &&
		  !strncmp(title + 200, "\xe2\x80\xa6", 3), "the title: %s", json);
	free(json);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
}

/*
 * The tag picker: rideshare (Python, its tag helper) tags each order with
 * its vehicle; choosing car shows the car's samples only (as many as the
 * folded profile of the same recording has under vehicle=car) and its
 * function, not the others'; "all" brings every sample back.
 */
Test(report_html, tag_filter, .timeout = 120)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { NULL, NULL };
	char dir[64], html[128], raw[128], rm[128], ready[64], pidbuf[32], *out, *err, *folded,
		*json;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "-f", "html", "-o", html,
			       "--raw", raw, NULL };
	const char *rep[] = { "report", raw, "-o", "-", NULL };
	double all, car;
	pid_t pid;
	int st;

	test_use_helpers(in);
	sargs[0] = test_target_for(in, "rideshare.py");
	snprintf(dir, sizeof(dir), "/tmp/pyrospy-html-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(html, sizeof(html), "%s/report.html", dir);
	snprintf(raw, sizeof(raw), "%s/report.raw", dir);
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "record -f html: exit %d: %s", st, err);
	free(out);
	free(err);
	st = test_pyrospy(rep, &folded, &err);
	cr_assert_eq(st, 0, "report: exit %d: %s", st, err);
	free(err);
	all = (double)test_folded_count(folded, "");
	car = (double)test_folded_count(folded, "vehicle=car");
	cr_assert(car > 0 && car < all, "%g of %g samples under vehicle=car:\n%s", car, all, folded);

	json = check(dir, "tags", "report.html vehicle car order_car order_bike order_scooter");
	cr_assert(strstr(json, "\"tag_keys\":[\"region\",\"vehicle\"]"), "%s", json);
	snprintf(rm, sizeof(rm), "\"car\":%.0f", car);
	cr_assert(strstr(json, rm), "no %s: %s", rm, json);
	cr_assert_eq(json_num(json, "all_samples"), all, "%s", json);
	cr_assert(strstr(json, "\"all_drawn\":[1,1,1]"), "%s", json);
	cr_assert(json_is(json, "chosen", "car"), "%s", json);
	cr_assert_eq(json_num(json, "chosen_samples"), car, "car: %s, folded %g", json, car);
	cr_assert(strstr(json, "\"chosen_drawn\":[1,0,0]"), "%s", json);
	cr_assert_eq(json_num(json, "back_samples"), all, "%s", json);
	cr_assert_eq(json_num(json, "back_chosen"), 0, "%s", json);
	free(json);
	free(folded);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
}

/*
 * The same names from a folded profile that nobody planted, written by
 * report: text, and nothing runs.
 */
Test(report_html, hostile_folded, .timeout = 60)
{
	static const char folded[] =
		"</script><script>window.pwned=1</script> (</script><svg onload=window.pwned=3>.py:1);"
		"<img src=x onerror=\"window.pwned=2\"> (a.py:2) 5\n"
		"line\xe2\x80\xa8sep\xe2\x80\xa9" "end'\"\\ (a.py:3);"
		"\xe2\x80\x8frtl\xe2\x80\x8f mark (a.py:4) 3\n";
	char dir[64], path[128], in[128], html[128], rm[128], *out, *err, *json;
	const char *args[] = { "report", in, "-f", "html", "-o", html, NULL };
	FILE *f;
	int st;

	cr_assert_eq(geteuid(), 0, "run as root: the file belongs to nobody");
	snprintf(dir, sizeof(dir), "/tmp/pyrospy-html-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(in, sizeof(in), "%s/planted.txt", dir);
	snprintf(html, sizeof(html), "%s/report.html", dir);
	snprintf(path, sizeof(path), "%s/names.json", dir);
	f = fopen(path, "w");
	cr_assert(f && fputs(names, f) >= 0 && !fclose(f));
	f = fopen(in, "w");
	cr_assert(f && fputs(folded, f) >= 0 && !fclose(f));
	test_sh("chown nobody:nogroup '%s'", in);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "report -f html: exit %d: %s", st, err);
	free(out);
	free(err);
	json = check(dir, "hostile", "report.html names.json");
	cr_assert_eq(json_num(json, "pwned"), 0, "a name ran: %s", json);
	cr_assert_eq(json_num(json, "pwned_after"), 0, "a name ran: %s", json);
	cr_assert_eq(json_num(json, "scripts"), 2, "%s", json);
	cr_assert_eq(json_num(json, "elements"), 0, "%s", json);
	cr_assert_eq(json_num(json, "elements_after"), 0, "%s", json);
	cr_assert_eq(json_num(json, "in_table"), 4, "the table: %s", json);
	cr_assert_eq(json_num(json, "drawn"), 4, "the graph: %s", json);
	cr_assert_eq(json_num(json, "tips"), 4, "the tooltips: %s", json);
	free(json);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
}

/*
 * The README's picture is this test's: examples/shop.py, run by exec as
 * the README and scripts/demo run it, as a report seen at 1400x900.  The
 * first screen holds the program's own work (checkout and report, both
 * under price), not the start-up's imports; the screenshot is written to
 * the build directory (report-shop.png), which docs/report.png is a copy
 * of, and the README shows docs/report.png, a PNG of the same size.
 */
Test(report_html, readme_screenshot, .timeout = 120)
{
	char cmd[2048], html[600], png[600], readme[600], *out, *text;
	unsigned char head[24];
	FILE *f;
	int st;

	snprintf(html, sizeof(html), "%s/report-shop.html", BUILDDIR);
	snprintf(png, sizeof(png), "%s/report-shop.png", BUILDDIR);
	/* as the README's reader runs it, from the source tree */
	snprintf(cmd, sizeof(cmd), "cd %s && PATH=/usr/bin:/bin %s exec -q --threads -d 3 -o %s -- "
		 "python3 examples/shop.py && cd %s && node report-shot.mjs %s %s", SRCDIR,
		 getenv("PYROSPY"), html, TEST_CONSUMERS, html, png);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"requests\":0"), "%s", out);
	cr_assert(strstr(out, "\"Shop.checkout\"") && strstr(out, "\"Shop.report\"") &&
		  strstr(out, "\"Shop.price\""), "not on the first screen: %s", out);
	/* under exec, the title is the command as given */
	cr_assert(strstr(out, "\"title\":\"python3 examples/shop.py\""), "%s", out);
	free(out);
	/* the PNG's size, from its IHDR, and the committed copy's */
	for (int i = 0; i < 2; i++) {
		char path[600];

		snprintf(path, sizeof(path), i ? "%s/docs/report.png" : "%s", i ? SRCDIR : png);
		f = fopen(path, "rb");
		cr_assert_not_null(f, "%s: missing", path);
		cr_assert_eq(fread(head, 1, sizeof(head), f), sizeof(head));
		fclose(f);
		cr_assert(!memcmp(head, "\x89PNG\r\n\x1a\n", 8) && !memcmp(head + 12, "IHDR", 4),
			  "%s: not a PNG", path);
		cr_assert(head[16] == 0 && head[17] == 0 && head[18] == 0x05 && head[19] == 0x78 &&
			  head[20] == 0 && head[21] == 0 && head[22] == 0x03 && head[23] == 0x84,
			  "%s: not 1400x900", path);
	}
	snprintf(readme, sizeof(readme), "%s/README.md", SRCDIR);
	text = test_slurp(readme);
	cr_assert_not_null(strstr(text, "](docs/report.png)"), "README shows no docs/report.png");
	free(text);
}

/*
 * tests/targets/rideshare.* recorded for 2 s (tags kept, threads merged)
 * into dir/report.html and dir/report.raw; the folded profile of the raw
 * recording (caller frees).
 */
static char *record_rideshare(const struct interp *in, char *dir, size_t cap)
{
	const char *sargs[] = { NULL, NULL };
	char html[128], raw[128], ready[64], pidbuf[32], *out, *err, *folded;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "-o", html, "--raw", raw, NULL };
	const char *rep[] = { "report", raw, "-o", "-", NULL };
	pid_t pid;
	int st;

	test_use_helpers(in);
	sargs[0] = test_target_for(in, in->lang == TARGET_RUBY ? "rideshare.rb" : "rideshare.py");
	snprintf(dir, cap, "/tmp/pyrospy-html-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(html, sizeof(html), "%s/report.html", dir);
	snprintf(raw, sizeof(raw), "%s/report.raw", dir);
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: record -o report.html: exit %d: %s", in->bin, st, err);
	free(out);
	free(err);
	st = test_pyrospy(rep, &folded, &err);
	cr_assert_eq(st, 0, "%s: report: exit %d: %s", in->bin, st, err);
	free(err);
	return folded;
}

/*
 * What report-check.mjs saw comparing BASE = vehicle=bike with NEW =
 * vehicle=car, against the folded profile of the same recording: each
 * graph has its value's samples, BASE's boxes in the left half, NEW's
 * in the right, the diff under both; in the diff, order_car's share of
 * the total grew (red) and order_bike's shrank (blue) by what the folded
 * profile says, within 1.5 points; Escape goes back to one graph.
 */
static void check_compare(const struct interp *in, const char *folded, const char *json)
{
	const char *grew = test_func(in, "order_car"), *shrank = test_func(in, "order_bike");
	char needle[128];
	double bike = (double)test_folded_count(folded, "vehicle=bike");
	double car = (double)test_folded_count(folded, "vehicle=car"), want_grew, want_shrank;

	cr_assert(bike > 10 && car > bike, "%s: %g bike, %g car samples:\n%s", in->bin, bike, car,
		  folded);
	snprintf(needle, sizeof(needle), ";%s (", grew);
	want_grew = 100.0 * ((double)test_folded_count2(folded, "vehicle=car", needle) / car -
			     (double)test_folded_count2(folded, "vehicle=bike", needle) / bike);
	snprintf(needle, sizeof(needle), ";%s (", shrank);
	want_shrank = 100.0 * ((double)test_folded_count2(folded, "vehicle=car", needle) / car -
			       (double)test_folded_count2(folded, "vehicle=bike", needle) / bike);
	cr_assert(want_grew > 50 && want_shrank < -50, "%s: %+g %+g points:\n%s", in->bin, want_grew,
		  want_shrank, folded);
	cr_assert_eq(json_num(json, "baseSamples"), bike, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "newSamples"), car, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "base_total"), bike, "%s: BASE's graph: %s", in->bin, json);
	cr_assert_eq(json_num(json, "new_total"), car, "%s: NEW's graph: %s", in->bin, json);
	cr_assert_eq(json_num(json, "diff_root_next"), car, "%s: the diff: %s", in->bin, json);
	cr_assert_gt(json_num(json, "base_boxes"), 2, "%s: %s", in->bin, json);
	cr_assert_gt(json_num(json, "new_boxes"), 2, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "base_left"), 1, "%s: BASE not in the left half: %s", in->bin,
		     json);
	cr_assert_eq(json_num(json, "new_right"), 1, "%s: NEW not in the right half: %s", in->bin,
		     json);
	cr_assert_eq(json_num(json, "diff_below"), 1, "%s: the diff not under them: %s", in->bin,
		     json);
	cr_assert(fabs(json_num(json, "grew_change") - want_grew) < 1.5,
		  "%s: %s grew %+.2f points, the page says %g: %s", in->bin, grew, want_grew,
		  json_num(json, "grew_change"), json);
	cr_assert(json_is(json, "grew_colour", "red"), "%s: %s", in->bin, json);
	cr_assert(fabs(json_num(json, "shrank_change") - want_shrank) < 1.5,
		  "%s: %s shrank %+.2f points, the page says %g: %s", in->bin, shrank, want_shrank,
		  json_num(json, "shrank_change"), json);
	cr_assert(json_is(json, "shrank_colour", "blue"), "%s: %s", in->bin, json);
	cr_assert(strstr(json, "\"diff_tip\":\"total: BASE ") && strstr(json, "points\""),
		  "%s: the diff's tooltip: %s", in->bin, json);
	cr_assert_eq(json_num(json, "after_click"), 1, "%s: %s", in->bin, json);
	/* Escape: one graph again, of BASE's value (still chosen in its picker) */
	cr_assert(strstr(json, "\"left_compare\":null"), "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "left_parts"), 0, "%s: %s", in->bin, json);
	cr_assert_gt(json_num(json, "left_boxes"), 2, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "left_samples"), bike, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "left_inverted_enabled"), 1, "%s: %s", in->bin, json);
}

/* The page's comparison: vehicle bike (BASE) vs car (NEW) in its pickers */
static void compare_in_page(const struct interp *in)
{
	char dir[64], rm[128], args[256], *folded, *json;

	folded = record_rideshare(in, dir, sizeof(dir));
	snprintf(args, sizeof(args), "report.html vehicle bike car '%s' '%s'", test_func(in, "order_car"),
		 test_func(in, "order_bike"));
	json = check(dir, "compare", args);
	cr_assert_eq(json_num(json, "opened_comparing"), 0, "%s: %s", in->bin, json);
	cr_assert(json_is(json, "key", "vehicle") && json_is(json, "base", "bike") &&
		  json_is(json, "new", "car"), "%s: %s", in->bin, json);
	check_compare(in, folded, json);
	free(json);
	free(folded);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
}

Test(report_html, compare_python, .timeout = 120)
{
	compare_in_page(&test_pythons[1]);
}

Test(report_html, compare_ruby, .timeout = 120)
{
	compare_in_page(&test_rubies[1]);
}

/*
 * pyrospy diff -f html: the page opens comparing BASE and NEW, labelled
 * as diff labels them, with the same graphs as the page's own comparison
 * of the recording's two values: from one recording cut by --base and
 * --new (-o NAME.html choosing the format), or (folded) from two folded
 * files of those stacks, written here.
 */
static void diff_html(int folded_files)
{
	const struct interp *in = &test_pythons[1];
	char dir[64], raw[128], html[128], bike[128], car[128], rm[128], *folded, *out, *err, *json;
	const char *from_raw[] = { "diff", raw, "--base", "vehicle=bike", "--new", "vehicle=car",
				   "-o", html, NULL };
	const char *from_folded[] = { "diff", bike, car, "-f", "html", "-o", html, NULL };
	int st;

	folded = record_rideshare(in, dir, sizeof(dir));
	snprintf(raw, sizeof(raw), "%s/report.raw", dir);
	snprintf(html, sizeof(html), "%s/diff.html", dir);
	snprintf(bike, sizeof(bike), "%s/bike.folded", dir);
	snprintf(car, sizeof(car), "%s/car.folded", dir);
	if (folded_files) {
		/* each value's stacks, the lines "{region=eu,vehicle=car};..." */
		for (int i = 0; i < 2; i++) {
			FILE *f = fopen(i ? car : bike, "w");
			const char *want = i ? ",vehicle=car};" : ",vehicle=bike};";

			cr_assert_not_null(f);
			for (const char *l = folded; *l;) {
				const char *end = strchr(l, '\n'), *at = strstr(l, want);

				end = end ? end + 1 : l + strlen(l);
				if (at && at < end)
					fwrite(l, 1, (size_t)(end - l), f);
				l = end;
			}
			cr_assert_eq(fclose(f), 0);
		}
	}
	st = test_pyrospy(folded_files ? from_folded : from_raw, &out, &err);
	cr_assert_eq(st, 0, "diff: exit %d: %s", st, err);
	cr_assert(strstr(err, "wrote html diff to"), "%s", err);
	free(out);
	free(err);
	json = check(dir, "compare", "diff.html - - - order_car order_bike");
	cr_assert_eq(json_num(json, "opened_comparing"), 1, "%s", json);
	cr_assert(json_is(json, "key", "profile") && json_is(json, "base", "BASE") &&
		  json_is(json, "new", "NEW"), "%s", json);
	cr_assert(strstr(json, "\"baseLabel\":\"/tmp/pyrospy-html-"), "%s", json);
	cr_assert(strstr(json, folded_files ? "/bike.folded\"" : "/report.raw [vehicle=bike]\""),
		  "%s", json);
	cr_assert(strstr(json, folded_files ? "/car.folded\"" : "/report.raw [vehicle=car]\""),
		  "%s", json);
	check_compare(in, folded, json);
	free(json);
	free(folded);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
}

Test(report_html, diff_html, .timeout = 120)
{
	diff_html(0);
}

Test(report_html, diff_html_folded, .timeout = 120)
{
	diff_html(1);
}
