/* test-apparmor.c: doctor's AppArmor check, from the texts the kernel
 * gives (the restriction sysctl and the list of loaded profiles). */
#include "config.h"

#include <string.h>

#include "doctor.h"
#include "../tap.h"

static const char loaded[] =
	"snap.chromium.chromium (enforce)\n"
	"browsercage-chromium-browser (unconfined)\n"
	"browsercage-chromium (unconfined)\n"
	"browsercage (unconfined)\n"
	"unprivileged_userns (enforce)\n";

int main(void)
{
	struct bc_check c;

	is_int(bc_doctor_apparmor(&c, NULL, loaded, true), 0, "no sysctl (no AppArmor restriction): nothing to check");
	is_int(bc_doctor_apparmor(&c, "0\n", "", true), 0, "restriction off: nothing to check");
	is_int(bc_doctor_apparmor(&c, "2\n", "", true), 0, "an unknown value is not the restriction");

	is_int(bc_doctor_apparmor(&c, "1\n", loaded, true), 1, "restriction on: checked");
	is_int(c.status, BC_CHECK_OK, "profiles loaded: ok");
	is_str(c.name, "apparmor.profile", "the check's name");
	is_str(c.fix, "", "ok has no fix");

	bc_doctor_apparmor(&c, "1\n", "unprivileged_userns (enforce)\nchrome (unconfined)\n", true);
	is_int(c.status, BC_CHECK_FAIL, "profile not loaded: fail");
	ok(strstr(c.detail, "browsercage is not loaded") != NULL, "the detail names the missing profile: %s", c.detail);
	is_str(c.fix, "as root: apparmor_parser -r /etc/apparmor.d/browsercage", "the fix loads the installed file");

	bc_doctor_apparmor(&c, "1\n", "", false);
	is_int(c.status, BC_CHECK_FAIL, "nothing loaded, nothing installed: fail");
	ok(strstr(c.fix, "install the profile") && strstr(c.fix, "apparmor_parser -r /etc/apparmor.d/browsercage"),
	   "the fix installs, then loads: %s", c.fix);

	/* names are whole: a prefix or a profile that only contains the name is not it */
	bc_doctor_apparmor(&c, "1\n", "browsercage-chromium-browser (unconfined)\nbrowsercagex (enforce)\n"
			   "other//browsercage (enforce)\n", true);
	is_int(c.status, BC_CHECK_FAIL, "browsercagex or other//browsercage is not browsercage");
	bc_doctor_apparmor(&c, "1\n", "browsercage (unconfined)\nbrowsercage-chromium (unconfined)\n", true);
	is_int(c.status, BC_CHECK_FAIL, "the Chromium profile is needed too");
	ok(strstr(c.detail, "browsercage-chromium-browser is not loaded") != NULL, "... and named: %s", c.detail);
	bc_doctor_apparmor(&c, "1\n", "browsercage (unconfined)\nbrowsercage-chromium-browser (unconfined)\n", true);
	is_int(c.status, BC_CHECK_FAIL, "the wrapper's profile is needed too (it runs the launcher in process)");
	ok(strstr(c.detail, "browsercage-chromium is not loaded") != NULL, "... and named: %s", c.detail);
	bc_doctor_apparmor(&c, "1", "browsercage-chromium-browser (unconfined)\nbrowsercage-chromium (enforce)\n"
			   "browsercage (enforce)", true);
	is_int(c.status, BC_CHECK_OK, "no trailing newlines, enforce mode: ok");

	bc_doctor_apparmor(&c, "1\n", NULL, true);
	is_int(c.status, BC_CHECK_WARN, "the list unreadable: warn, not a guess");
	ok(strstr(c.fix, "apparmor_parser -r") != NULL, "... with the fix to apply as root");

	return tap_done();
}
