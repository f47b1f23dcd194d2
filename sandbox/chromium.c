/* chromium.c: browsercage-chromium, a drop-in for the chromium binary.
 *
 * Playwright and Puppeteer start it as they would start Chromium
 * (executablePath). It reads the policy, rewrites the command line and
 * execs `browsercage run ... -- CHROMIUM ARGS`:
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
 *     (run --profile-dir DIR, mounted at the same path); a leased profile
 *     ($BROWSERCAGE_PROFILE_LABEL) wins and the argument is rewritten to it;
 *     a client's throwaway profile (client_scratch_profile) becomes the
 *     sandbox's ephemeral one;
 *   - switches that turn Chromium's own sandbox off (--no-sandbox, which
 *     Playwright adds, and its relatives) are dropped unless the policy says
 *     chromium_no_sandbox = yes;
 *   - flags a sandboxed headless browser needs are added unless given.
 * Nothing here weakens the sandbox: the launcher enforces the policy. */
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
#include "mount.h"
#include "policy.h"
#include "util.h"

#define EXIT_LAUNCHER 125

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

#define fail(...) bc_report(prog, EXIT_LAUNCHER, __VA_ARGS__)

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

static const char *find_policy(void)
{
	static const char *const candidates[] = {
		BC_SYSCONFDIR "/chromium.ini",
		BC_PKGDATADIR "/default.ini",
	};
	const char *env = getenv_nonempty("BROWSERCAGE_POLICY");
	if (env)
		return env;
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++)
		if (access(candidates[i], R_OK) == 0)
			return candidates[i];
	return candidates[ARRAY_SIZE(candidates) - 1];
}

/* The launcher: `browsercage` beside this executable (a build tree or a
 * relocated install), else the configured bindir. */
static int find_launcher(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			int n2 = snprintf(buf, size, "%s/browsercage", self);
			if (n2 > 0 && (size_t)n2 < size && access(buf, X_OK) == 0)
				return 0;
		}
	}
	snprintf(buf, size, "%s/browsercage", BC_BINDIR);
	return access(buf, X_OK) == 0 ? 0 : -ENOENT;
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

int main(int argc, char **argv)
{
	struct bc_policy p = {0};
	struct bc_error err = {0};
	struct bc_strv run = {0}, chrome = {0};
	char launcher[PATH_MAX], buf[PATH_MAX + 64];
	const char *user_data_dir = NULL;
	bool pipe_mode = false, port_mode = false, dropped = false, after_dashes = false;
	int r = 0, host_port = 0, sandbox_port = 0;

	if (getuid() != geteuid() || getgid() != getegid())
		return fail("refusing to run setuid or setgid");
	const char *policy_path = find_policy();
	if (bc_policy_load(&p, policy_path, &err) < 0)
		return fail("%s", err.msg);
	if (find_launcher(launcher, sizeof launcher) < 0)
		return fail("cannot find the browsercage launcher beside %s or in %s", argv[0], BC_BINDIR);

	/* Pass 1: what the caller asked for. */
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
			port_mode = true;
	}

	/* The launcher's options. */
	r |= bc_strv_push(&run, launcher);
	r |= bc_strv_push(&run, "run");
	r |= bc_strv_push(&run, "--policy");
	r |= bc_strv_push(&run, policy_path);
	const char *task = getenv_nonempty("BROWSERCAGE_TASK");
	const char *audit = getenv_nonempty("BROWSERCAGE_AUDIT");
	const char *label = getenv_nonempty("BROWSERCAGE_PROFILE_LABEL");
	const char *root = getenv_nonempty("BROWSERCAGE_PROFILE_ROOT");
	_cleanup_free_ char *dir = NULL;
	struct bc_error id_err = {0};
	if ((task && bc_id_check(BC_ID_TASK, "BROWSERCAGE_TASK", task, &id_err) < 0) ||
	    (label && bc_id_check(BC_ID_LABEL, "BROWSERCAGE_PROFILE_LABEL", label, &id_err) < 0)) {
		bc_strv_free(&run);
		bc_policy_free(&p);
		return fail("%s; nothing started", id_err.msg);
	}
	if (task) {
		r |= bc_strv_push(&run, "--task");
		r |= bc_strv_push(&run, task);
	}
	if (audit) {
		r |= bc_strv_push(&run, "--audit");
		r |= bc_strv_push(&run, audit);
	}
	if (label) {
		/* A leased profile wins over whatever directory the client made. */
		r |= bc_strv_push(&run, "--profile");
		r |= bc_strv_push(&run, label);
		if (root) {
			r |= bc_strv_push(&run, "--profile-root");
			r |= bc_strv_push(&run, root);
		}
		if (asprintf(&dir, "%s/%s", root ? root : p.profile_root, label) < 0)
			dir = NULL, r = -ENOMEM;
	} else if (user_data_dir) {
		if (!(dir = absolute(user_data_dir)))
			return fail("--user-data-dir=%s: %s", user_data_dir, strerror(errno));
		if (client_scratch_profile(dir)) {
			free(dir);      /* the sandbox's ephemeral profile instead */
			dir = NULL;
		} else {
			int e = prepare_profile_dir(&p, dir);
			if (e < 0)
				return fail("--user-data-dir=%s: %s", dir, strerror(-e));
			r |= bc_strv_push(&run, "--profile-dir");
			r |= bc_strv_push(&run, dir);
		}
	}
	if (pipe_mode) {
		/* Playwright's transport: requests on fd 3, replies on fd 4. */
		for (int fd = 3; fd <= 4; fd++)
			if (fcntl(fd, F_GETFD) < 0)
				return fail("--remote-debugging-pipe: descriptor %d is not open", fd);
		r |= bc_strv_push(&run, "--pass-fd");
		r |= bc_strv_push(&run, "3");
		r |= bc_strv_push(&run, "--pass-fd");
		r |= bc_strv_push(&run, "4");
	}
	if (port_mode) {
		/* The port inside is ours to choose when the client asked for
		 * any (0): the sandbox has a loopback of its own. */
		host_port = bc_devtools_port_arg(argc, argv);
		if (host_port < 0)
			return fail("--remote-debugging-port: expected =N with N from 0 to 65535");
		sandbox_port = host_port ? host_port : BC_DEVTOOLS_SANDBOX_PORT;
		snprintf(buf, sizeof buf, "--devtools-forward=%d:%d", host_port, sandbox_port);
		r |= bc_strv_push(&run, buf);
	}
	r |= bc_strv_push(&run, "--");

	/* Chromium's command line: defaults the caller did not set, the
	 * profile, then the caller's arguments minus what was rewritten. */
	r |= bc_strv_push(&chrome, p.chromium);
	for (size_t d = 0; d < ARRAY_SIZE(defaults); d++) {
		bool given = false;
		after_dashes = false;
		for (int i = 1; i < argc && !given; i++) {
			size_t len;
			const char *name = after_dashes ? NULL : switch_name(argv[i], &len);
			after_dashes |= strcmp(argv[i], "--") == 0;
			given = name && switch_is(name, len, defaults[d] + 2);
		}
		if (!given)
			r |= bc_strv_push(&chrome, defaults[d]);
	}
	snprintf(buf, sizeof buf, "--user-data-dir=%s", dir ? dir : BC_SANDBOX_HOME "/profile");
	r |= bc_strv_push(&chrome, buf);
	if (port_mode) {
		snprintf(buf, sizeof buf, "--remote-debugging-port=%d", sandbox_port);
		r |= bc_strv_push(&chrome, buf);
	}
	after_dashes = false;
	for (int i = 1; i < argc; i++) {
		size_t len;
		const char *name = after_dashes ? NULL : switch_name(argv[i], &len);
		after_dashes |= strcmp(argv[i], "--") == 0;
		if (name && (switch_is(name, len, "user-data-dir") || switch_is(name, len, "remote-debugging-port")))
			continue;
		bool weakens = false;
		for (size_t k = 0; name && k < ARRAY_SIZE(unsandboxing); k++)
			weakens |= switch_is(name, len, unsandboxing[k]);
		if (weakens && !p.chromium_no_sandbox) {
			if (!dropped)
				fprintf(stderr, "%s: dropped %s: Chromium's own sandbox stays on (a policy "
					"may allow it: [sandbox] chromium_no_sandbox = yes)\n", prog, argv[i]);
			dropped = true;
			continue;
		}
		r |= bc_strv_push(&chrome, argv[i]);
	}
	for (size_t i = 0; i < chrome.n; i++)
		r |= bc_strv_push(&run, chrome.v[i]);
	if (r)
		return fail("out of memory");
	bc_strv_free(&chrome);
	bc_policy_free(&p);
	execv(launcher, run.v);
	return fail("%s: %s", launcher, strerror(errno));
}
