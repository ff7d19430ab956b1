/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_AGENT_H
#define PYROSPY_AGENT_H

#include "cmd/options.h"

/* The most bytes of a process's /proc/PID/environ the agent reads. */
#define AGENT_ENVIRON_MAX	(256u << 10)
/* The most bytes of a service name label (longer ones are cut). */
#define AGENT_SERVICE_MAX	128

/*
 * pyrospy agent: every Ruby and Python process of the host, each streamed
 * to o->up.server as series of its own, labelled service_name, pid,
 * process_executable_name, host_name, container_id and k8s_pod_uid (see
 * pyrospy(1), FLEET); with o->listen, its /metrics and /healthz
 * (agent_metrics.h).  Runs until SIGINT or SIGTERM;
 * returns the exit status.
 */
int cli_agent(struct cli_opts *o);

#endif
