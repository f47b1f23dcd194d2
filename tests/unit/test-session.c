/* test-session.c: the session library's own checks, the ones made before
 * any namespace exists: the shared parsers of the front ends, and the
 * refusals of bc_session_run, each naming the option or variable the
 * front end knows it by. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../tap.h"
#include "launch.h"
#include "session.h"

static const struct bc_session_names env = {
	.task = "BROWSERCAGE_TASK", .label = "BROWSERCAGE_PROFILE_LABEL",
	.profile_dir = "BROWSERCAGE_PROFILE_DIR", .profile_root = "BROWSERCAGE_PROFILE_ROOT",
	.template_name = "BROWSERCAGE_TEMPLATE", .assignment = "BROWSERCAGE_ASSIGNMENT",
	.require_prepared = "BROWSERCAGE_REQUIRE_PREPARED",
};

static char *const cmd[] = { "/bin/true", NULL };

/* Run spec s to its refusal; the message, or "" if it did not refuse. */
static const char *refusal(struct bc_session_spec *s, struct bc_error *err)
{
	*err = (struct bc_error){0};
	s->argv = cmd;
	int r = bc_session_run(s, err);
	return r < 0 ? err->msg : "";
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		diag("cannot write %s", path);
	if (fd >= 0)
		close(fd);
	chmod(path, 0644);
}

int main(void)
{
	struct bc_session_spec s;
	struct bc_error err = {0};
	uint64_t ttl = 0;
	int fd = -1;

	/* the parsers */
	is_int(bc_session_parse_ttl("BROWSERCAGE_TTL", "90s", &ttl, &err), 0, "90s is a ttl");
	is_int((int)ttl, 90, "... of 90 seconds");
	ok(bc_session_parse_ttl("BROWSERCAGE_TTL", "bogus", &ttl, &err) < 0 &&
	   strstr(err.msg, "BROWSERCAGE_TTL: expected a duration") && strstr(err.msg, "'bogus'"),
	   "a bad ttl is refused, naming the variable: %s", err.msg);
	err = (struct bc_error){0};
	ok(bc_session_parse_ttl("--ttl", "0", &ttl, &err) < 0, "a ttl of 0 is refused");
	err = (struct bc_error){0};
	ok(bc_session_parse_audit_fd("BROWSERCAGE_AUDIT_FD", "2", &fd, &err) == 0 && fd == 2, "audit fd 2");
	ok(bc_session_parse_audit_fd("BROWSERCAGE_AUDIT_FD", "0", &fd, &err) < 0 &&
	   strstr(err.msg, "BROWSERCAGE_AUDIT_FD"), "audit fd 0 refused: %s", err.msg);
	bc_session_spec_init(&s);
	err = (struct bc_error){0};
	ok(bc_session_add_fd(&s, "--pass-fd", "2", &err) < 0, "pass fd 2 refused (below 3)");
	err = (struct bc_error){0};
	ok(bc_session_add_fd(&s, "--pass-fd", "1000", &err) < 0 && strstr(err.msg, "not open"),
	   "a descriptor that is not open is refused: %s", err.msg);
	int dup = fcntl(1, F_DUPFD_CLOEXEC, 3);
	char num[16];
	snprintf(num, sizeof num, "%d", dup);
	err = (struct bc_error){0};
	ok(bc_session_add_fd(&s, "--pass-fd", num, &err) == 0 && s.n_pass_fds == 1 && s.pass_fds[0] == dup,
	   "an open descriptor is kept");
	close(dup);
	err = (struct bc_error){0};
	ok(bc_session_parse_forward("--devtools-forward", "0:9222", &s, &err) == 0 && s.devtools_forward &&
	   s.devtools_host_port == 0 && s.devtools_sandbox_port == 9222, "HOST:SANDBOX ports");
	ok(bc_session_parse_forward("--devtools-forward", "1:0", &s, &err) < 0, "sandbox port 0 refused");

	/* refusals before anything starts, in the caller's names */
	bc_session_spec_init(&s);
	s.names = &env;
	s.task = "no spaces";
	ok(strstr(refusal(&s, &err), "BROWSERCAGE_TASK: task id 'no spaces'"), "a bad task: %s", err.msg);
	bc_session_spec_init(&s);
	s.template_name = "Bad_Name";
	ok(strstr(refusal(&s, &err), "--template"), "a bad template name, run's names by default: %s", err.msg);
	bc_session_spec_init(&s);
	s.names = &env;
	s.assignment = "/nonexistent/a.json";
	ok(strstr(refusal(&s, &err), "/nonexistent/a.json") && strstr(err.msg, "nothing started"),
	   "a missing assignment: %s", err.msg);

	char dir[] = "/tmp/bc-test-session.XXXXXX", asg[128], pol[128];
	if (!mkdtemp(dir))
		return diag("mkdtemp"), 1;
	snprintf(pol, sizeof pol, "%s/p.ini", dir);
	write_file(pol, "[policy]\nname = t\n[network]\nmode = none\n[limits]\nrequired = no\n");
	snprintf(asg, sizeof asg, "%s/a.json", dir);
	char text[512];
	snprintf(text, sizeof text, "{\"taskId\":\"t-1\",\"label\":\"lab\",\"policy\":\"%s\",\"state\":\"approved\"}\n", pol);
	write_file(asg, text);
	bc_session_spec_init(&s);
	s.names = &env;
	s.assignment = asg;
	s.task = "t-2";
	ok(strstr(refusal(&s, &err), "BROWSERCAGE_TASK/BROWSERCAGE_PROFILE_LABEL/BROWSERCAGE_PROFILE_DIR disagree"),
	   "a task that disagrees with the assignment: %s", err.msg);
	bc_session_spec_init(&s);
	s.names = &env;
	s.policy_path = pol;
	s.label = "lab";
	s.template_name = "tpl";
	ok(strstr(refusal(&s, &err), "BROWSERCAGE_TEMPLATE starts from a template's snapshot: give no "
		  "BROWSERCAGE_PROFILE_LABEL, BROWSERCAGE_PROFILE_DIR"), "a template with a label: %s", err.msg);
	bc_session_spec_init(&s);
	s.policy_path = pol;
	s.label = "lab";
	s.profile_dir = dir;
	ok(strstr(refusal(&s, &err), "give --profile-dir or --profile, not both"), "a label and a directory: %s",
	   err.msg);
	bc_session_spec_init(&s);
	s.names = &env;
	s.policy_path = pol;
	s.profile_root = dir;
	s.require_prepared = true;
	ok(strstr(refusal(&s, &err), "BROWSERCAGE_REQUIRE_PREPARED: no ready record"),
	   "require-prepared without a record: %s", err.msg);
	bc_session_spec_init(&s);
	s.policy_path = "/nonexistent/p.ini";
	ok(strstr(refusal(&s, &err), "/nonexistent/p.ini"), "a missing policy: %s", err.msg);
	ok(fcntl(0, F_GETFD) >= 0 || errno != EBADF, "an early refusal leaves descriptor 0 alone");

	unlink(asg);
	unlink(pol);
	rmdir(dir);
	return tap_done();
}
