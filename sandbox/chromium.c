/* chromium.c: browsercage-chromium, a drop-in for the chromium binary.
 *
 * Playwright and Puppeteer start it as they would start Chromium
 * (executablePath). It builds a session spec (session.h) from its
 * environment (the BROWSERCAGE_* variables, each checked as the `run`
 * option it mirrors) and from Chromium's command line, and runs the
 * session in this process, as `browsercage run ... -- CHROMIUM ARGS` would:
 *   - the policy: $BROWSERCAGE_POLICY, else /etc/browsercage/chromium.ini,
 *     else the shipped default.ini; the real Chromium: the policy's
 *     [sandbox] chromium;
 *   - --remote-debugging-pipe: fds 3 and 4 pass through (--pass-fd), no
 *     other inherited fd does;
 *   - --remote-debugging-port=N: the DevTools port is forwarded to the
 *     host's 127.0.0.1:N (run --devtools-forward=N:M, devtools.h); Chromium
 *     gets port M = N inside, or a fixed one for N = 0 (the client then
 *     reads the host port, one of our choosing, from the announcement);
 *   - --user-data-dir=DIR becomes the sandbox's profile directory
 *     (run --profile-dir DIR, mounted at the same path); a profile the
 *     environment names (a label, a directory, an assignment, a template)
 *     wins and the argument is rewritten to it;
 *     a client's throwaway profile (client_scratch_profile) becomes the
 *     sandbox's ephemeral one;
 *   - switches that turn Chromium's own sandbox off (--no-sandbox, which
 *     Playwright adds, and its relatives) are dropped unless the policy says
 *     chromium_no_sandbox = yes;
 *   - flags a sandboxed headless browser needs are added unless given.
 * When the launcher refuses, its reason is the first line on stderr (the
 * first line of the browser output a client shows) and the status is
 * BC_EXIT_LAUNCHER. Nothing here weakens the sandbox: the session library
 * enforces the policy. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <dirent.h>

#include "devtools.h"
#include "hostids.h"
#include "launch.h"
#include "mount.h"
#include "policy.h"
#include "runtime.h"
#include "session.h"
#include "util.h"

static const char *prog = "browsercage-chromium";

/* Switches that switch off part of Chromium's own sandbox. */
static const char *const unsandboxing[] = {
	"no-sandbox", "disable-seccomp-filter-sandbox", "disable-namespace-sandbox",
	"disable-gpu-sandbox", "single-process", "no-zygote",
};

/* Added unless the caller gave the switch (by name, any value). */
static const char *const defaults[] = {
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--no-first-run", "--no-default-browser-check", "--disable-default-apps",
	"--disable-breakpad",
	/* No lookups the page did not ask for, so the audit log holds what the
	 * page did: the component updater (which still checks with
	 * --disable-component-update) and the account cookie check of
	 * sign-in (accounts.google.com) talk to a closed port of the sandbox's
	 * loopback; the rest of the background services are off. */
	"--component-updater=url-source=http://127.0.0.1:9/", "--gaia-url=http://127.0.0.1:9/",
	"--apps-gallery-update-url=http://127.0.0.1:9/",
	"--allow-browser-signin=false", "--disable-domain-reliability",
	"--disable-client-side-phishing-detection",
	"--disable-component-extensions-with-background-pages", "--no-pings",
	"--metrics-recording-only", "--no-service-autorun", "--dns-prefetch-disable",
	"--disable-features=OptimizationHints,OptimizationGuideModelDownloading,"
	"OptimizationHintsFetching,OptimizationTargetPrediction,AutofillServerCommunication,"
	"MediaRouter,DialMediaRouteProvider,Translate,CertificateTransparencyComponentUpdater,"
	"InterestFeedContentSuggestions,NetworkTimeServiceQuerying,PreconnectToSearch",
};

#define fail(...) bc_report(prog, BC_EXIT_LAUNCHER, __VA_ARGS__)

/* The switch name of a Chromium argument ("--user-data-dir=/x" ->
 * "user-data-dir", length in *len), or NULL if arg is no switch. Chromium
 * accepts "--" and "-" prefixes on Linux. */
static const char *switch_name(const char *arg, size_t *len)
{
	if (arg[0] != '-' || !arg[1] || strcmp(arg, "--") == 0)
		return NULL;
	const char *s = arg + (arg[1] == '-' ? 2 : 1);
	*len = strcspn(s, "=");
	return s;
}

static bool switch_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(name, want, len) == 0;
}

static const char *getenv_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static const char *default_policy(void)
{
	static const char *const candidates[] = {
		BC_SYSCONFDIR "/chromium.ini",
		BC_PKGDATADIR "/default.ini",
	};
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++)
		if (access(candidates[i], R_OK) == 0)
			return candidates[i];
	return candidates[ARRAY_SIZE(candidates) - 1];
}

static int open_beneath(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)flags | O_CLOEXEC | O_NOFOLLOW, .mode = mode,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
	return fd < 0 ? -errno : fd;
}

static bool dir_is_empty(int dirfd)
{
	int fd = open_beneath(dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return false;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	struct dirent *e;
	bool empty = true;
	while (empty && (e = readdir(d)))
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/* Chromium saves downloads to download.default_directory: point it at the
 * sandbox's downloads directory (<profile>/Downloads, the same path inside
 * and out) in a profile that has no preferences yet. Best effort; never
 * follows a symlink the profile's previous user may have planted. */
static void seed_download_prefs(int dirfd, const char *dir, uid_t uid, gid_t gid)
{
	char text[2 * PATH_MAX + 256];
	if (mkdirat(dirfd, "Default", 0700) == 0 && geteuid() == 0 &&
	    fchownat(dirfd, "Default", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	_cleanup_close_ int def = open_beneath(dirfd, "Default", O_PATH | O_DIRECTORY, 0);
	if (def < 0)
		return;
	_cleanup_close_ int fd = open_beneath(def, "Preferences", O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return;
	if (geteuid() == 0 && fchown(fd, uid, gid) < 0)
		return;
	/* Chromium reads JSON; a path with a quote or backslash is left out. */
	if (strpbrk(dir, "\"\\"))
		return;
	int n = snprintf(text, sizeof text,
			 "{\"download\":{\"default_directory\":\"%s/Downloads\",\"prompt_for_download\":false},"
			 "\"savefile\":{\"default_directory\":\"%s/Downloads\"}}\n", dir, dir);
	if (n > 0 && (size_t)n < sizeof text)
		bc_write_all(fd, text, (size_t)n);
}

/* Is dir a client's throwaway profile: the empty directory Playwright
 * (chromium.launch) or Puppeteer makes with mkdtemp in the temporary
 * directory for one browser and deletes when it closes? Such a profile is
 * the sandbox's ephemeral one instead (a tmpfs of at most profile_quota):
 * nothing would outlive the browser anyway, and a host directory would
 * need a disk quota the host may not have. A directory the client names
 * itself (launchPersistentContext, userDataDir) is never one. */
static bool client_scratch_profile(const char *dir)
{
	static const char *const prefixes[] = { "playwright_chromiumdev_profile-",
						"puppeteer_dev_chrome_profile-" };
	const char *base = strrchr(dir, '/');
	const char *tmp = getenv_nonempty("TMPDIR");
	if (!base)
		return false;
	size_t plen = (size_t)(base - dir);
	if (!tmp)
		tmp = "/tmp";
	if (strlen(tmp) != plen || strncmp(dir, tmp, plen) != 0)
		return false;
	bool named = false;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		named |= strncmp(base + 1, prefixes[i], strlen(prefixes[i])) == 0;
	if (!named)
		return false;
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == getuid() && dir_is_empty(fd);
}

/* --user-data-dir for a caller-supplied directory. A missing one is created
 * (0700), as Chromium would. A root caller's profiles belong to the
 * profile owner of browsercage's host id range (hostids.h), which each
 * sandbox sees as its own uid: an empty directory owned by root
 * (Playwright's and Puppeteer's fresh temporary profiles, a new persistent
 * profile) is handed to it; anything else is left as it is and the
 * launcher says why it refuses it. */
static int prepare_profile_dir(const struct bc_policy *p, const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;      /* the launcher reports it */
	uid_t uid = st.st_uid;
	gid_t gid = st.st_gid;
	bool fresh = dir_is_empty(fd);
	uid_t owner;
	gid_t owner_gid;
	struct bc_error err = {0};
	if (bc_ids_profile_owner(&owner, &owner_gid, &err) < 0)
		return 0;      /* the launcher reports it */
	if (getuid() == 0 && st.st_uid == 0 && fresh && !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		if (fchownat(fd, "", owner, owner_gid, AT_EMPTY_PATH) < 0)
			return -errno;
		uid = owner;
		gid = owner_gid;
	}
	if (p->downloads && uid == owner)
		seed_download_prefs(fd, dir, uid, gid);
	return 0;
}

static char *absolute(const char *path)
{
	char cwd[PATH_MAX], *out;
	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof cwd))
		return NULL;
	return asprintf(&out, "%s/%s", cwd, path) < 0 ? NULL : out;
}

/* A yes/no variable: 1, yes, true, on or 0, no, false, off (empty: unset). */
static int env_bool(const char *name, bool *out, struct bc_error *err)
{
	static const char *const yes[] = { "1", "yes", "true", "on" }, *const no[] = { "0", "no", "false", "off" };
	const char *v = getenv_nonempty(name);
	if (!v)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(v, no[i]) == 0)
			return *out = false, 0;
	}
	return bc_error_set(err, EINVAL, "%s: expected 1 or 0 (yes or no), got '%s'", name, v);
}

/* The spec from the environment: every variable mirrors a run option and
 * is checked as that option is (the session checks the ids). */
static int spec_from_env(struct bc_session_spec *s, struct bc_error *err)
{
	const char *v;
	s->policy_path = getenv_nonempty("BROWSERCAGE_POLICY");
	s->default_policy = default_policy();
	s->task = getenv_nonempty("BROWSERCAGE_TASK");
	s->audit_path = getenv_nonempty("BROWSERCAGE_AUDIT");
	s->label = getenv_nonempty("BROWSERCAGE_PROFILE_LABEL");
	s->profile_root = getenv_nonempty("BROWSERCAGE_PROFILE_ROOT");
	s->profile_dir = getenv_nonempty("BROWSERCAGE_PROFILE_DIR");
	s->assignment = getenv_nonempty("BROWSERCAGE_ASSIGNMENT");
	s->template_name = getenv_nonempty("BROWSERCAGE_TEMPLATE");
	s->ready_dir = getenv_nonempty("BROWSERCAGE_READY_DIR");
	s->cgroup_parent = getenv_nonempty("BROWSERCAGE_CGROUP_PARENT");
	if ((v = getenv_nonempty("BROWSERCAGE_TTL")) && bc_session_parse_ttl("BROWSERCAGE_TTL", v, &s->ttl, err) < 0)
		return -EINVAL;
	if ((v = getenv_nonempty("BROWSERCAGE_AUDIT_FD")) &&
	    bc_session_parse_audit_fd("BROWSERCAGE_AUDIT_FD", v, &s->audit_fd, err) < 0)
		return -EINVAL;
	if (env_bool("BROWSERCAGE_REQUIRE_PREPARED", &s->require_prepared, err) < 0 ||
	    env_bool("BROWSERCAGE_RECOVER", &s->recover, err) < 0 ||
	    env_bool("BROWSERCAGE_VERBOSE", &s->verbose, err) < 0)
		return -EINVAL;
	return 0;
}

static const struct bc_session_names env_names = {
	.task = "BROWSERCAGE_TASK", .label = "BROWSERCAGE_PROFILE_LABEL",
	.profile_dir = "BROWSERCAGE_PROFILE_DIR", .profile_root = "BROWSERCAGE_PROFILE_ROOT",
	.template_name = "BROWSERCAGE_TEMPLATE", .assignment = "BROWSERCAGE_ASSIGNMENT",
	.require_prepared = "BROWSERCAGE_REQUIRE_PREPARED",
};
static const struct bc_session_names client_dir_names = {
	.task = "BROWSERCAGE_TASK", .label = "BROWSERCAGE_PROFILE_LABEL",
	.profile_dir = "--user-data-dir", .profile_root = "BROWSERCAGE_PROFILE_ROOT",
	.template_name = "BROWSERCAGE_TEMPLATE", .assignment = "BROWSERCAGE_ASSIGNMENT",
	.require_prepared = "BROWSERCAGE_REQUIRE_PREPARED",
};

/* Chromium's command line, built once the session knows the policy and
 * the profile: defaults the caller did not set, the profile, then the
 * caller's arguments minus what was rewritten. */
struct chrome {
	int argc;
	char **argv;
	bool port_mode;
	int sandbox_port;
	bool dropped;            /* a switch that weakens Chromium's sandbox */
	const char *dropped_arg;
	struct bc_strv v;
};

/* --disable-features: Chromium reads only the last one, and clients
 * (Playwright, Puppeteer) pass their own; one switch carries the caller's
 * features and ours. */
#define DISABLE_FEATURES "--disable-features"

static char *disable_features(const struct chrome *c)
{
	const char *ours = NULL;
	for (size_t d = 0; d < ARRAY_SIZE(defaults) && !ours; d++)
		if (strncmp(defaults[d], DISABLE_FEATURES "=", strlen(DISABLE_FEATURES) + 1) == 0)
			ours = defaults[d] + strlen(DISABLE_FEATURES) + 1;
	char *out = NULL;
	if (asprintf(&out, "%s=%s", DISABLE_FEATURES, ours) < 0)
		return NULL;
	bool after_dashes = false;
	for (int i = 1; i < c->argc; i++) {
		size_t len;
		const char *name = after_dashes ? NULL : switch_name(c->argv[i], &len);
		after_dashes |= strcmp(c->argv[i], "--") == 0;
		if (!name || !switch_is(name, len, DISABLE_FEATURES + 2) || name[len] != '=' || !name[len + 1])
			continue;
		char *more = NULL;
		int n = asprintf(&more, "%s,%s", out, name + len + 1);
		free(out);
		if (n < 0)
			return NULL;
		out = more;
	}
	return out;
}

static int chrome_argv(void *ctx, const struct bc_policy *p, const char *profile, char *const **argv,
		       struct bc_error *err)
{
	struct chrome *c = ctx;
	char buf[PATH_MAX + 64];
	int r = 0;
	bool after_dashes;

	r |= bc_strv_push(&c->v, p->chromium);
	for (size_t d = 0; d < ARRAY_SIZE(defaults); d++) {
		bool given = strncmp(defaults[d], DISABLE_FEATURES, strlen(DISABLE_FEATURES)) == 0;
		after_dashes = false;
		for (int i = 1; i < c->argc && !given; i++) {
			size_t len;
			const char *name = after_dashes ? NULL : switch_name(c->argv[i], &len);
			after_dashes |= strcmp(c->argv[i], "--") == 0;
			given = name && switch_is(name, len, defaults[d] + 2);
		}
		if (!given)
			r |= bc_strv_push(&c->v, defaults[d]);
	}
	_cleanup_free_ char *features = disable_features(c);
	r |= features ? bc_strv_push(&c->v, features) : -ENOMEM;
	snprintf(buf, sizeof buf, "--user-data-dir=%s", profile);
	r |= bc_strv_push(&c->v, buf);
	if (c->port_mode) {
		snprintf(buf, sizeof buf, "--remote-debugging-port=%d", c->sandbox_port);
		r |= bc_strv_push(&c->v, buf);
	}
	after_dashes = false;
	for (int i = 1; i < c->argc; i++) {
		size_t len;
		const char *name = after_dashes ? NULL : switch_name(c->argv[i], &len);
		after_dashes |= strcmp(c->argv[i], "--") == 0;
		if (name && (switch_is(name, len, "user-data-dir") || switch_is(name, len, "remote-debugging-port") ||
			     switch_is(name, len, DISABLE_FEATURES + 2)))
			continue;
		bool weakens = false;
		for (size_t k = 0; name && k < ARRAY_SIZE(unsandboxing); k++)
			weakens |= switch_is(name, len, unsandboxing[k]);
		if (weakens && !p->chromium_no_sandbox) {
			if (!c->dropped)
				c->dropped_arg = c->argv[i];
			c->dropped = true;
			continue;
		}
		r |= bc_strv_push(&c->v, c->argv[i]);
	}
	if (r)
		return bc_error_set(err, ENOMEM, "out of memory");
	/* Said once the browser runs: before it, the only line on stderr is
	 * a refusal's reason, if there is one. */
	if (c->dropped)
		fprintf(stderr, "%s: dropped %s: Chromium's own sandbox stays on (a policy may allow it: "
			"[sandbox] chromium_no_sandbox = yes)\n", prog, c->dropped_arg);
	*argv = c->v.v;
	return 0;
}

/* --browsercage-help: the variables (Chromium's own switches are its). */
static void help(void)
{
	fputs("usage: browsercage-chromium [CHROMIUM-ARGUMENT]...\n"
	      "       browsercage-chromium --browsercage-help\n"
	      "\n"
	      "Chromium in a browsercage sandbox, for Playwright's and Puppeteer's executablePath.\n"
	      "The session is set by the environment, each variable as the run option it mirrors:\n"
	      "  BROWSERCAGE_POLICY FILE            --policy (default /etc/browsercage/chromium.ini)\n"
	      "  BROWSERCAGE_TASK ID                --task\n"
	      "  BROWSERCAGE_ASSIGNMENT FILE        --assignment\n"
	      "  BROWSERCAGE_PROFILE_LABEL LABEL    --profile\n"
	      "  BROWSERCAGE_PROFILE_DIR DIR        --profile-dir\n"
	      "  BROWSERCAGE_PROFILE_ROOT DIR       --profile-root\n"
	      "  BROWSERCAGE_TEMPLATE NAME          --template\n"
	      "  BROWSERCAGE_RECOVER 1|0            --recover\n"
	      "  BROWSERCAGE_TTL DURATION           --ttl\n"
	      "  BROWSERCAGE_AUDIT FILE             --audit\n"
	      "  BROWSERCAGE_AUDIT_FD N             --audit-fd\n"
	      "  BROWSERCAGE_REQUIRE_PREPARED 1|0   --require-prepared\n"
	      "  BROWSERCAGE_READY_DIR DIR          --ready-dir\n"
	      "  BROWSERCAGE_CGROUP_PARENT PATH     --cgroup-parent\n"
	      "  BROWSERCAGE_VERBOSE 1|0            --verbose\n"
	      "Exit status: as browsercage run's; 125 when the launcher refused (its reason is\n"
	      "the first line on stderr).\n", stdout);
}

/* The binary must never be setuid or setgid: it runs the launcher in this
 * process, with the caller's own privilege only. */
static bool setid(void)
{
	struct stat st;
	return getuid() != geteuid() || getgid() != getegid() ||
	       (stat("/proc/self/exe", &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)));
}

int main(int argc, char **argv)
{
	struct bc_session_spec s;
	struct bc_error err = {0};
	struct chrome c = { .argc = argc, .argv = argv };
	const char *user_data_dir = NULL;
	bool pipe_mode = false, after_dashes = false;
	_cleanup_free_ char *dir = NULL;

	bc_cleaner_exec_main(argc, argv);   /* a cleaner whose supervisor died */
	if (setid())
		return fail("refusing to run setuid or setgid: remove the bit (chmod u-s,g-s); "
			    "browsercage-chromium needs no privilege of its own");
	if (argc == 2 && strcmp(argv[1], "--browsercage-help") == 0) {
		help();
		return 0;
	}
	bc_session_spec_init(&s);
	s.names = &env_names;
	if (spec_from_env(&s, &err) < 0)
		return fail("%s; nothing started", err.msg);

	/* What the caller asked for. */
	for (int i = 1; i < argc; i++) {
		size_t len;
		const char *name = after_dashes ? NULL : switch_name(argv[i], &len);
		if (strcmp(argv[i], "--") == 0)
			after_dashes = true;
		if (!name)
			continue;
		if (switch_is(name, len, "user-data-dir") && name[len] == '=')
			user_data_dir = name + len + 1;
		else if (switch_is(name, len, "remote-debugging-pipe"))
			pipe_mode = true;
		else if (switch_is(name, len, "remote-debugging-port"))
			c.port_mode = true;
	}

	/* The client's profile directory, unless the environment names the
	 * profile (which wins: the argument is rewritten to it). */
	if (user_data_dir && !s.label && !s.profile_dir && !s.assignment && !s.template_name) {
		if (!(dir = absolute(user_data_dir)))
			return fail("--user-data-dir=%s: %s", user_data_dir, strerror(errno));
		if (client_scratch_profile(dir)) {
			free(dir);      /* the sandbox's ephemeral profile instead */
			dir = NULL;
		} else {
			/* the policy as the session will load it, for the
			 * downloads directory it seeds */
			struct bc_policy p = {0};
			if (bc_policy_load(&p, s.policy_path ? s.policy_path : s.default_policy, &err) < 0)
				return fail("%s", err.msg);
			int e = prepare_profile_dir(&p, dir);
			bc_policy_free(&p);
			if (e < 0)
				return fail("--user-data-dir=%s: %s", dir, strerror(-e));
			s.profile_dir = dir;
			s.names = &client_dir_names;
		}
	}
	if (pipe_mode) {
		/* Playwright's transport: requests on fd 3, replies on fd 4. */
		for (int fd = 3; fd <= 4; fd++)
			if (fcntl(fd, F_GETFD) < 0)
				return fail("--remote-debugging-pipe: descriptor %d is not open", fd);
		if (bc_session_add_fd(&s, "--remote-debugging-pipe", "3", &err) < 0 ||
		    bc_session_add_fd(&s, "--remote-debugging-pipe", "4", &err) < 0)
			return fail("%s", err.msg);
	}
	if (c.port_mode) {
		/* The port inside is ours to choose when the client asked for
		 * any (0): the sandbox has a loopback of its own. */
		int host_port = bc_devtools_port_arg(argc, argv);
		if (host_port < 0)
			return fail("--remote-debugging-port: expected =N with N from 0 to 65535");
		c.sandbox_port = host_port ? host_port : BC_DEVTOOLS_SANDBOX_PORT;
		s.devtools_forward = true;
		s.devtools_host_port = (uint16_t)host_port;
		s.devtools_sandbox_port = (uint16_t)c.sandbox_port;
	}
	s.argv_fn = chrome_argv;
	s.argv_ctx = &c;
	int r = bc_session_run(&s, &err);
	bc_strv_free(&c.v);
	return r < 0 ? fail("%s", err.msg) : r;
}
