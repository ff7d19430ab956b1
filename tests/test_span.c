/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "target.h"

/*
 * Span profiles from outside: a traced app (tests/targets/span.py,
 * span.rb: two threads, root spans around units of work, nested spans
 * inside, idle time between) registers the span processor written for
 * pyroscope-otel (pyroscope.otel.PyroscopeSpanProcessor,
 * Pyroscope::Otel::SpanProcessor) and runs under pyrospy exec --server
 * tests/receiver.py (the tracer: a minimal span API written in the app, as
 * no Debian of the matrix but sid has an OpenTelemetry SDK; on sid the
 * SDK's too).  tests/span-check then holds what the receiver
 * accepted against the spans the app printed: every sample in a unit
 * carries its root span's span_id, span_name and trace_id, none outside,
 * and each root span has the pyroscope.profile.id attribute.
 */
static void traced_app(const struct interp *in, const char *protocol, int sdk)
{
	const char *script = test_target_for(in, in->lang == TARGET_RUBY ? "span.rb" : "span.py");
	char log[64], appout[64], file[64], port[32], url[64], root[1024], cmd[512];
	const char *args[32] = { "exec", "-f", "folded", "-o", file, "--server", url,
				 "--protocol", protocol, "--app-name", "span", "--" };
	int n = 12, st, fd;
	char *out, *err, *check;
	pid_t rx;

	snprintf(log, sizeof(log), "/tmp/pyrospy-span-rx-XXXXXX");
	snprintf(appout, sizeof(appout), "/tmp/pyrospy-span-app-XXXXXX");
	snprintf(file, sizeof(file), "/tmp/pyrospy-span-folded-XXXXXX");
	cr_assert((fd = mkstemp(log)) >= 0);
	close(fd);
	cr_assert((fd = mkstemp(appout)) >= 0);
	close(fd);
	cr_assert((fd = mkstemp(file)) >= 0);
	close(fd);
	rx = test_receiver(log, NULL, port, sizeof(port));
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	test_use_helpers(in);
	if (in->root) {
		snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
		args[n++] = "chroot";
		args[n++] = root;
	}
	args[n++] = in->bin;
	args[n++] = script;
	if (sdk) {
		args[n++] = "0.5";
		args[n++] = "sdk";
	}
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "%s: exit %d: %s%s", in->bin, st, err, out);
	FILE *f = fopen(appout, "w");

	cr_assert_not_null(f);
	fputs(out, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3.11 %s/tests/span-check %s %s", SRCDIR, log,
		 appout);
	check = test_run(cmd, &st);
	cr_log_info("%s %s: %s", in->bin, protocol, check);
	cr_assert_eq(st, 0, "%s (%s): %s\napp:\n%s\npyrospy: %s", in->bin, protocol, check, out,
		     err);
	free(check);
	free(out);
	free(err);
	unlink(log);
	unlink(appout);
	unlink(file);
}

ParameterizedTestParameters(span, python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, span, python, .timeout = 90)
{
	traced_app(&test_pythons[*i], "push", 0);
}

ParameterizedTestParameters(span, ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, span, ruby, .timeout = 90)
{
	traced_app(&test_rubies[*i], "push", 0);
}

/* The same over /ingest (folded: the tags in the name), on one of each. */
Test(span, ingest_python, .timeout = 90)
{
	traced_app(&test_pythons[1], "ingest", 0);
}

Test(span, ingest_ruby, .timeout = 90)
{
	traced_app(&test_rubies[1], "ingest", 0);
}

/*
 * On the OpenTelemetry SDK itself where the matrix's Debian has it
 * (python3-opentelemetry-sdk: sid, scripts/provision-chroots): the
 * processor registered with a TracerProvider, whose spans the SDK makes
 * and ends (on_end gets a ReadableSpan).
 */
static struct criterion_test_params sid_pythons(void)
{
	static size_t sid[2];
	size_t n = 0;

	for (size_t i = 0; i < test_npythons && n < 2; i++)
		if (test_pythons[i].root && !strcmp(test_pythons[i].root, "sid"))
			sid[n++] = i;
	return cr_make_param_array(size_t, sid, n);
}

ParameterizedTestParameters(span, python_sdk)
{
	return sid_pythons();
}

ParameterizedTest(size_t *i, span, python_sdk, .timeout = 90)
{
	traced_app(&test_pythons[*i], "push", 1);
}

/*
 * Tag sets far past the 8192 the helpers keep at once
 * (tests/targets/spanchurn.py, .rb): two threads run 30 000 short root
 * spans (or tag wrappers with a new value each time), a new tag set each,
 * under pyrospy exec at 1000 Hz.  The helpers reuse the places of the
 * sets given up, and pyrospy reads each reused one again: every sample in
 * unit_K carries the tags of a span (wrapper) logged with K, none
 * another's, at most 1 % none (5 % on Python 3.10 and older), and the
 * spans past the 12 288th are tagged like the first (tests/spanchurn-check).
 */
static void churn(const struct interp *in, const char *mode)
{
	const char *name = in->lang == TARGET_RUBY ? "spanchurn.rb" : "spanchurn.py";
	char appout[64], file[64], root[1024], cmd[3072], script[1024];
	const char *args[32] = { "exec", "-r", "1000", "-f", "folded", "-o", file, "-v", "--" };
	int n = 9, st, fd;
	char *out, *err, *check;
	FILE *f;

	/* in a root, the script goes where the helpers are (Python looks there first) */
	test_use_helpers(in);
	if (in->root) {
		snprintf(script, sizeof(script), "%s/%s",
			 getenv(in->lang == TARGET_RUBY ? "RUBYLIB" : "PYTHONPATH"), name);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s/%s%s'", test_target_path(name),
			 test_chroots(), in->root, script);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	} else {
		snprintf(script, sizeof(script), "%s", test_target_path(name));
	}

	snprintf(appout, sizeof(appout), "/tmp/pyrospy-churn-app-XXXXXX");
	snprintf(file, sizeof(file), "/tmp/pyrospy-churn-folded-XXXXXX");
	cr_assert((fd = mkstemp(appout)) >= 0);
	close(fd);
	cr_assert((fd = mkstemp(file)) >= 0);
	close(fd);
	if (in->root) {
		snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
		args[n++] = "chroot";
		args[n++] = root;
	}
	args[n++] = in->bin;
	args[n++] = script;
	args[n++] = "30000";
	args[n++] = mode;
	/*
	 * <= 3.10 reads the tags before and after the stack, and drops
	 * them when they changed in between: longer units, fewer edges
	 */
	if (in->lang == TARGET_PYTHON && in->minor <= 10)
		args[n++] = "0.0006";
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(f = fopen(appout, "w"));
	fputs(out, f);
	fclose(f);
	/* <= 3.10 reads the tags apart from the stack (see spanchurn-check) */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3.11 %s/tests/spanchurn-check %s %s %d", SRCDIR,
		 file, appout, in->lang == TARGET_PYTHON && in->minor <= 10 ? 5 : 1);
	check = test_run(cmd, &st);
	cr_log_info("%s %s: %s%s", in->bin, mode, check, err);
	cr_assert_eq(st, 0, "%s (%s): %s\npyrospy: %s", in->bin, mode, check, err);
	free(check);
	free(out);
	free(err);
	unlink(appout);
	unlink(file);
}

ParameterizedTestParameters(span, churn_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, span, churn_python, .timeout = 150)
{
	churn(&test_pythons[*i], "span");
}

ParameterizedTestParameters(span, churn_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, span, churn_ruby, .timeout = 150)
{
	churn(&test_rubies[*i], "span");
}

/* With the OpenTelemetry SDK making and ending the spans (sid). */
ParameterizedTestParameters(span, churn_python_sdk)
{
	return sid_pythons();
}

ParameterizedTest(size_t *i, span, churn_python_sdk, .timeout = 150)
{
	churn(&test_pythons[*i], "sdk");
}

/* Plain tags: tag_wrapper entered and left with a new value 30 000 times. */
ParameterizedTestParameters(span, churn_wrapper_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, span, churn_wrapper_python, .timeout = 150)
{
	churn(test_python_any(*i), "wrap");
}

ParameterizedTestParameters(span, churn_wrapper_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, span, churn_wrapper_ruby, .timeout = 150)
{
	churn(&test_rubies[*i], "wrap");
}
