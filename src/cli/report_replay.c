/*
 * report_replay.c - `memkit report --replay FILE` and `--what-if`: the
 * measured saving of each finding, from `memkit replay --what-if --json`
 * (read with json-c), next to the report's estimate.
 *
 * --what-if runs that replay itself (this executable, under glibc, on the
 * one trace) and reads its output the same way. A replay's row belongs to
 * the report's finding of its number only when both name the same kind
 * at the same allocating frame: a replay of another trace, or made with
 * other finding options, is refused in one line rather than shown against
 * the wrong finding.
 */
#define _GNU_SOURCE
#include "replay.h"
#include "tune.h" /* MK_P_BEYOND_NOISE */

#include "../analyze/names.h"
#include "../analyze/report.h"

#include <errno.h>
#include <json-c/json.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static json_object *field(json_object *o, const char *key)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static bool number(json_object *o, const char *key, double *out)
{
    json_object *v = field(o, key);
    if (!v || (!json_object_is_type(v, json_type_double) &&
               !json_object_is_type(v, json_type_int)))
        return false;
    *out = json_object_get_double(v);
    return true;
}

static const char *string(json_object *o, const char *key)
{
    json_object *v = field(o, key);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                         : NULL;
}

/* One what-if row onto its finding; an exit status after one line, or -1. */
static int take_row(mk_report_t *r, json_object *row, const char *what)
{
    double num, saving, fix, calls, p;
    const char *kind = string(row, "kind"), *site = string(row, "site"),
               *status = string(row, "status");

    if (!kind || !site || !status || !number(row, "finding", &num))
        return mk_usage_error("report: %s: a what-if row without its finding", what);
    if (strcmp(status, "ok") != 0)
        return -1; /* not replayed: the finding keeps its estimate alone */
    if (num < 1 || num > (double)r->nfindings)
        return mk_usage_error("report: %s: finding %.0f, but this trace has %zu: a "
                              "replay of another trace?",
                              what, num, r->nfindings);
    mk_finding_t *f = &r->findings[(size_t)num - 1];
    char label[256] = "(no stack)";
    mk_frame_t fr;
    if (mk_names_innermost(r->names, f->stack, &fr))
        mk_frame_label(&fr, label, sizeof label);
    if (strcmp(kind, mk_finding_name(f->kind)) != 0 || strcmp(site, label) != 0)
        return mk_usage_error("report: %s: its finding %.0f is %s at %s, this report's "
                              "is %s at %s: a replay of another trace, or of other "
                              "finding options?",
                              what, num, kind, site, mk_finding_name(f->kind), label);
    if (!number(row, "saving_ns", &saving) || !number(row, "fix_ns", &fix) ||
        !number(row, "calls_removed", &calls) || !number(row, "p_saves", &p))
        return mk_usage_error("report: %s: finding %.0f's row has no measures", what,
                              num);
    f->replayed = true;
    f->replay_saving_ns = saving;
    f->replay_fix_ns = fix;
    f->replay_calls_removed = calls;
    f->replay_beyond_noise = p <= MK_P_BEYOND_NOISE;
    return -1;
}

static int take(mk_report_t *r, json_object *doc, const char *what)
{
    const char *schema = string(doc, "schema");
    json_object *rows = field(doc, "what_if");

    if (!schema || strcmp(schema, "memkit-replay") != 0)
        return mk_usage_error("report: %s is not memkit replay's JSON", what);
    if (!rows || !json_object_is_type(rows, json_type_array))
        return mk_usage_error(
            "report: %s has no what-if (memkit replay --what-if --json)", what);
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        int rc = take_row(r, json_object_array_get_idx(rows, i), what);
        if (rc >= 0)
            return rc;
    }
    return -1;
}

int mk_report_read_replay(mk_report_t *r, const char *path)
{
    struct stat sb;
    if (access(path, R_OK) != 0 || stat(path, &sb) != 0)
        return mk_usage_error("report: --replay %s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return mk_usage_error("report: --replay %s: not a file", path);
    json_object *doc = json_object_from_file(path);
    if (!doc)
        return mk_usage_error("report: --replay %s: not JSON, or cut short", path);
    char what[4200];
    snprintf(what, sizeof what, "--replay %s", path);
    int rc = take(r, doc, what);
    json_object_put(doc);
    return rc;
}

int mk_report_run_what_if(mk_report_t *r, const char *trace)
{
    int out = memfd_create("memkit-what-if", MFD_CLOEXEC),
        err = memfd_create("memkit-what-if-err", MFD_CLOEXEC), status;
    posix_spawn_file_actions_t fa;
    pid_t pid;
    char *args[] = {"memkit", "replay", "--what-if",   "--json",
                    "--top",  "0",      (char *)trace, NULL};
    char why[4096];

    if (r->nfindings == 0) { /* nothing to try: the report as it is */
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        return -1;
    }
    if (out < 0 || err < 0 || posix_spawn_file_actions_init(&fa) != 0) {
        int e = errno;
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        return mk_usage_error("report: --what-if: %s", strerror(e));
    }
    posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO);
    int e = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e == 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    if (e || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        mk_last_line(err, why, sizeof why);
        close(out);
        close(err);
        if (e)
            return mk_usage_error("report: --what-if: cannot run memkit replay: %s",
                                  strerror(e));
        /* the replay's own line, without its "memkit: " */
        return mk_usage_error("report: --what-if: %s", strncmp(why, "memkit: ", 8) == 0
                                                           ? why + 8
                                                       : why[0] ? why
                                                                : "memkit replay failed");
    }
    close(err);
    lseek(out, 0, SEEK_SET);
    json_object *doc = json_object_from_fd(out);
    close(out);
    if (!doc)
        return mk_usage_error("report: --what-if: memkit replay wrote no JSON");
    int rc = take(r, doc, "--what-if");
    json_object_put(doc);
    return rc;
}
