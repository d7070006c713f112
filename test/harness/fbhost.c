//go:build ignore

// The constraint above keeps the go tool from treating this file as part of
// package harness (a .c file in a non-cgo package is an error); Build
// compiles it with gcc instead.

/*
 * fbhost: loads a Fluent Bit Go output plugin (.so) and drives it the way
 * Fluent Bit v4.2.8's Go proxy does (src/flb_plugin_proxy.c, src/proxy/go/go.c).
 *
 * Usage: fbhost <plugin.so>, then one command per line on stdin:
 *
 *   register                          -> register rc=<n> name=<name>
 *   init <id> [key=value ...]         -> init <id> rc=<n>
 *   flush <id> <tag> <file>           -> flush <id> rc=<n>
 *   flushconc <id> <tag> <file>...    -> flushconc <id> rc=<n1>,<n2>,...
 *   exit <id>                         -> exit <id> rc=<n>
 *   unregister                        -> unregister rc=0
 *   sleep <ms>                        -> sleep ok
 *
 * Every token (and the key and value of key=value separately) may hold
 * %XX escapes. A command that cannot run answers "error <cmd>: <why>".
 *
 * Result lines go to the ORIGINAL stdout only; fd 1 is redirected to stderr
 * before the plugin is loaded, so whatever the plugin prints (to stdout or
 * stderr) ends up in stderr and can never be mistaken for a result.
 *
 * Fidelity notes (what the real proxy does, reproduced here):
 * - one flbgo_output_plugin struct is shared by every instance; Init sets its
 *   o_ins/context to the instance being initialized, so the property getter
 *   answers for the LAST initialized instance afterwards;
 * - the real engine initializes every output before the first flush, then
 *   calls FLBPluginOutputPreRun once per output; init after that is refused;
 * - each flush runs inside a coroutine on a 24.5 KiB malloc'd stack (libco,
 *   coro_stack_size default), with a NUL-terminated COPY of the tag; both the
 *   tag copy and the data are freed (poisoned here) when the call returns;
 * - keys Fluent Bit keeps for itself (match, host, workers, tls.*, ...) and
 *   empty values never reach the plugin's property list;
 * - reading a property of an instance that was exited (or failed Init) is a
 *   use-after-free in Fluent Bit: fbhost aborts to make it visible;
 * - the optional hooks FLBPluginPreRegister, FLBPluginOutputPreRun and
 *   FLBPluginOutputPreExit are called (with 0: no hot reload) if exported;
 * - Unregister comes once, after every instance has exited. A register after
 *   unregister is a hot reload (src/flb_reload.c): the new context dlopens
 *   the .so again (the same, still-mapped Go runtime), calls
 *   FLBPluginPreRegister(1) and FLBPluginRegister again, then Init for each
 *   new instance (instance ids stay unique across reloads here).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* fluent-bit include/fluent-bit/flb_macros.h and flb_plugin_proxy.h */
#define FLB_ERROR 0
#define FLB_OK 1
#define FLB_RETRY 2
#define FLB_PROXY_OUTPUT_PLUGIN 2
#define FLB_PROXY_GOLANG 11

/*
 * libco co_create(config->coro_stack_size): FLB_CORO_STACK_SIZE_BYTE is
 * 3 * PTHREAD_STACK_MIN / 2 = 24 KiB on Linux, plus 512 bytes for libco.
 */
#define CORO_STACK_SIZE ((3 * 16384) / 2 + 512)

/* Byte written over tag and data buffers once a flush returned. */
#define POISON 0xA5

struct flb_plugin_proxy_def {
    int type;
    int proxy;
    int flags;
    char *name;
    char *description;
    int event_type; /* not in fluent-bit-go's copy; 0 means logs */
};

/*
 * include/fluent-bit/flb_api.h. fluent-bit-go v0.0.0-20230731 only calls
 * output_get_property; the other slots stay NULL so a plugin that calls
 * them crashes loudly instead of silently working differently.
 */
struct flb_api {
    const char *(*output_get_property)(const char *, void *);
    const char *(*input_get_property)(const char *, void *);
    void *(*output_get_cmt_instance)(void *);
    void *(*input_get_cmt_instance)(void *);
    void (*log_print)(int, const char *, int, const char *, ...);
    int (*input_log_check)(void *, int);
    int (*output_log_check)(void *, int);
    const char *(*custom_get_property)(const char *, void *);
    int (*custom_log_check)(void *, int);
};

/* include/fluent-bit/flb_plugin_proxy.h: one per output instance. */
struct flb_plugin_proxy_context {
    void *remote_context; /* set by output.FLBPluginSetContext */
    void *proxy;
};

/* src/proxy/go/go.h */
struct flbgo_output_plugin {
    char *name;
    void *api;
    void *o_ins;
    struct flb_plugin_proxy_context *context;

    int (*cb_init)(struct flbgo_output_plugin *);
    int (*cb_flush)(const void *, size_t, const char *);
    int (*cb_flush_ctx)(void *, const void *, size_t, char *);
    int (*cb_exit)(void);
    int (*cb_exit_ctx)(void *);
};

struct prop {
    char *key;
    char *val; /* NULL for an empty value, as flb_output_set_property does */
};

/* Stands in for struct flb_output_instance; the plugin sees it as o_ins. */
struct instance {
    char *id;
    int gone; /* Init failed or exited: Fluent Bit has freed it */
    int nprops;
    struct prop *props;
    struct flb_plugin_proxy_context ctx;
};

enum phase { LOADED, REGISTERED, STARTED, UNREGISTERED };

static const char *so_path;
static void *dso;
static enum phase phase = LOADED;
static struct flb_plugin_proxy_def def;
static struct flb_api api;
static struct flbgo_output_plugin *plugin; /* shared by all instances */
static struct instance **instances;
static int ninstances;
static FILE *results;

/* Keys flb_output_set_property() consumes itself (plus "name", which the
 * config loader strips); the plugin never sees them. */
static const char *reserved_keys[] = {
    "name", "match", "match_regex", "alias", "log_level",
    "log_suppress_interval", "host", "port", "ipv6", "retry_limit",
    "tls", "tls.verify", "tls.verify_hostname", "tls.debug", "tls.vhost",
    "tls.ca_path", "tls.ca_file", "tls.crt_file", "tls.key_file",
    "tls.key_passwd", "tls.min_version", "tls.max_version", "tls.ciphers",
    "storage.total_limit_size", "workers", NULL,
};

static int is_reserved(const char *key)
{
    if (strncasecmp(key, "net.", 4) == 0) {
        return 1;
    }
    for (int i = 0; reserved_keys[i]; i++) {
        if (strcasecmp(key, reserved_keys[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static void result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void result(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(results, fmt, ap);
    va_end(ap);
    fputc('\n', results);
    fflush(results);
}

/* flb_output_get_property(): case-insensitive, first match wins. */
static const char *output_get_property(const char *key, void *o_ins)
{
    struct instance *ins = o_ins;

    if (ins->gone) {
        fprintf(stderr, "fbhost: FATAL: output_get_property(\"%s\") on "
                "instance '%s', which Fluent Bit has already freed\n",
                key, ins->id);
        abort();
    }
    for (int i = 0; i < ins->nprops; i++) {
        if (strcasecmp(ins->props[i].key, key) == 0) {
            return ins->props[i].val;
        }
    }
    return NULL;
}

static void *symbol(const char *name)
{
    dlerror();
    void *s = dlsym(dso, name);
    return dlerror() ? NULL : s;
}

static int hexval(int c)
{
    if (isdigit(c)) {
        return c - '0';
    }
    c = tolower(c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Decodes %XX escapes in place; malformed escapes are kept literally. */
static char *unescape(char *s)
{
    char *r = s, *w = s;
    while (*r) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval((unsigned char)r[1])) >= 0 &&
            (lo = hexval((unsigned char)r[2])) >= 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        }
        else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return s;
}

static struct instance *find_instance(const char *id)
{
    for (int i = 0; i < ninstances; i++) {
        if (strcmp(instances[i]->id, id) == 0) {
            return instances[i];
        }
    }
    return NULL;
}

/* Reads a whole file into a malloc'd buffer (never NULL on success). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 4096, n = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Once the engine starts, every output gets FLBPluginOutputPreRun. */
static void start_engine(void)
{
    if (phase != REGISTERED) {
        return;
    }
    int (*pre_run)(int) = (int (*)(int))symbol("FLBPluginOutputPreRun");
    for (int i = 0; pre_run && i < ninstances; i++) {
        if (!instances[i]->gone) {
            pre_run(0); /* config->enable_hot_reload */
        }
    }
    phase = STARTED;
}

static void cmd_register(void)
{
    if (phase != LOADED && phase != UNREGISTERED) {
        result("error register: already registered");
        return;
    }
    int hot_reloading = phase == UNREGISTERED; /* config->hot_reloading */
    /* flb_plugin_proxy_create() */
    dso = dlopen(so_path, RTLD_LAZY);
    if (!dso) {
        result("error register: dlopen: %s", dlerror());
        return;
    }
    int (*pre_register)(int) = (int (*)(int))symbol("FLBPluginPreRegister");
    if (pre_register && pre_register(hot_reloading) == -1) {
        result("error register: FLBPluginPreRegister returned -1");
        return;
    }
    int (*reg)(struct flb_plugin_proxy_def *) =
        (int (*)(struct flb_plugin_proxy_def *))symbol("FLBPluginRegister");
    if (!reg) {
        result("error register: FLBPluginRegister is not exported");
        return;
    }
    int rc = reg(&def);
    const char *name = def.name ? def.name : "";
    if (rc == -1) { /* the only value Fluent Bit treats as failure */
        result("register rc=%d name=%s", rc, name);
        return;
    }
    if (def.proxy != FLB_PROXY_GOLANG || def.type != FLB_PROXY_OUTPUT_PLUGIN) {
        result("error register: def has type=%d proxy=%d, not a Go output "
               "(Fluent Bit would ignore the plugin)", def.type, def.proxy);
        return;
    }

    /* proxy_go_output_register() */
    plugin = calloc(1, sizeof(*plugin));
    plugin->cb_init = (int (*)(struct flbgo_output_plugin *))symbol("FLBPluginInit");
    if (!plugin->cb_init) {
        free(plugin);
        plugin = NULL;
        result("error register: FLBPluginInit is not exported");
        return;
    }
    plugin->cb_flush = (int (*)(const void *, size_t, const char *))symbol("FLBPluginFlush");
    plugin->cb_flush_ctx = (int (*)(void *, const void *, size_t, char *))symbol("FLBPluginFlushCtx");
    plugin->cb_exit = (int (*)(void))symbol("FLBPluginExit");
    plugin->cb_exit_ctx = (int (*)(void *))symbol("FLBPluginExitCtx");
    plugin->name = strdup(name);
    api.output_get_property = output_get_property;
    phase = REGISTERED;
    result("register rc=%d name=%s", rc, name);
}

static void cmd_init(int argc, char **argv)
{
    if (argc < 2) {
        result("error init: usage: init <id> [key=value ...]");
        return;
    }
    const char *id = unescape(argv[1]);
    if (phase != REGISTERED) {
        result("error init %s: %s", id, phase == STARTED ?
               "Fluent Bit initializes every output before the first flush/exit" :
               "plugin is not registered");
        return;
    }
    if (find_instance(id)) {
        result("error init %s: duplicate instance id", id);
        return;
    }

    for (int i = 2; i < argc; i++) {
        if (!strchr(argv[i], '=')) {
            result("error init %s: property '%s' is not key=value", id, argv[i]);
            return;
        }
    }

    struct instance *ins = calloc(1, sizeof(*ins));
    ins->id = strdup(id);
    ins->props = calloc(argc, sizeof(struct prop));
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        *eq = '\0'; /* split before unescaping: an escaped '=' stays data */
        char *key = unescape(argv[i]), *val = unescape(eq + 1);
        if (is_reserved(key)) {
            fprintf(stderr, "fbhost: init %s: Fluent Bit keeps '%s' for "
                    "itself, the plugin will not see it\n", id, key);
            continue;
        }
        ins->props[ins->nprops].key = strdup(key);
        ins->props[ins->nprops].val = *val ? strdup(val) : NULL;
        ins->nprops++;
    }
    instances = realloc(instances, (ninstances + 1) * sizeof(*instances));
    instances[ninstances++] = ins;

    /* proxy_go_output_init(): the same plugin struct, re-pointed. */
    plugin->api = &api;
    plugin->o_ins = ins;
    plugin->context = &ins->ctx;
    int rc = plugin->cb_init(plugin);
    if (rc <= 0) { /* Fluent Bit frees the instance and aborts startup */
        ins->gone = 1;
    }
    result("init %s rc=%d", id, rc);
}

/* One flush: the coroutine reads its job from this thread-local. */
struct flush_job {
    struct instance *ins;
    const char *tag;
    char *data;
    size_t len;
    int rc;
    ucontext_t caller;
};

static __thread struct flush_job *current_job;

/* proxy_go_output_flush() */
static void coro_flush(void)
{
    struct flush_job *j = current_job;
    size_t tag_len = strlen(j->tag);
    char *buf = malloc(tag_len + 1);
    memcpy(buf, j->tag, tag_len + 1);

    if (plugin->cb_flush_ctx) {
        j->rc = plugin->cb_flush_ctx(j->ins->ctx.remote_context, j->data, j->len, buf);
    }
    else {
        j->rc = plugin->cb_flush(j->data, j->len, buf);
    }
    memset(buf, POISON, tag_len + 1);
    free(buf);
    /* returning resumes j->caller through uc_link */
}

static void run_flush(struct flush_job *j)
{
    ucontext_t co;
    char *stack = malloc(CORO_STACK_SIZE);

    getcontext(&co);
    co.uc_stack.ss_sp = stack;
    co.uc_stack.ss_size = CORO_STACK_SIZE;
    co.uc_link = &j->caller;
    makecontext(&co, coro_flush, 0);
    current_job = j;
    swapcontext(&j->caller, &co);
    free(stack);
    memset(j->data, POISON, j->len); /* the chunk is gone after the flush */
}

static void *flush_thread(void *arg)
{
    run_flush(arg);
    return NULL;
}

/* Shared checks of flush/flushconc; returns the live instance or NULL. */
static struct instance *flush_target(const char *cmd, const char *id)
{
    struct instance *ins = find_instance(id);
    if (phase != REGISTERED && phase != STARTED) {
        result("error %s %s: plugin is not registered", cmd, id);
        return NULL;
    }
    if (!ins || ins->gone) {
        result("error %s %s: no such live instance", cmd, id);
        return NULL;
    }
    if (!plugin->cb_flush_ctx && !plugin->cb_flush) {
        result("error %s %s: neither FLBPluginFlushCtx nor FLBPluginFlush "
               "is exported", cmd, id);
        return NULL;
    }
    return ins;
}

/*
 * flush runs on the command ("engine") thread, as with Workers 0;
 * flushconc runs one thread per file, as with Workers N.
 */
static void cmd_flush(int argc, char **argv, int concurrent)
{
    const char *cmd = concurrent ? "flushconc" : "flush";
    if (argc < 4 || (!concurrent && argc != 4)) {
        result("error %s: usage: %s <id> <tag> <file>%s", cmd, cmd,
               concurrent ? "..." : "");
        return;
    }
    for (int i = 1; i < argc; i++) {
        unescape(argv[i]);
    }
    const char *id = argv[1];
    struct instance *ins = flush_target(cmd, id);
    if (!ins) {
        return;
    }

    int n = argc - 3;
    struct flush_job *jobs = calloc(n, sizeof(*jobs));
    for (int i = 0; i < n; i++) {
        jobs[i].ins = ins;
        jobs[i].tag = argv[2];
        jobs[i].data = read_file(argv[3 + i], &jobs[i].len);
        if (!jobs[i].data) {
            result("error %s %s: cannot read %s", cmd, id, argv[3 + i]);
            for (int k = 0; k < i; k++) {
                free(jobs[k].data);
            }
            free(jobs);
            return;
        }
    }

    start_engine();
    if (concurrent) {
        pthread_t *tids = calloc(n, sizeof(*tids));
        for (int i = 0; i < n; i++) {
            pthread_create(&tids[i], NULL, flush_thread, &jobs[i]);
        }
        for (int i = 0; i < n; i++) {
            pthread_join(tids[i], NULL);
        }
        free(tids);
    }
    else {
        run_flush(&jobs[0]);
    }

    char line[32 + 12 * n];
    int off = 0;
    for (int i = 0; i < n; i++) {
        off += sprintf(line + off, "%s%d", i ? "," : "", jobs[i].rc);
        free(jobs[i].data);
    }
    free(jobs);
    result("%s %s rc=%s", cmd, id, line);
}

/* flb_proxy_output_cb_exit() + proxy_go_output_destroy() */
static void cmd_exit(int argc, char **argv)
{
    if (argc != 2) {
        result("error exit: usage: exit <id>");
        return;
    }
    const char *id = unescape(argv[1]);
    struct instance *ins = find_instance(id);
    if (phase != REGISTERED && phase != STARTED) {
        result("error exit %s: plugin is not registered", id);
        return;
    }
    if (!ins || ins->gone) {
        result("error exit %s: no such live instance", id);
        return;
    }

    start_engine();
    void (*pre_exit)(int) = (void (*)(int))symbol("FLBPluginOutputPreExit");
    if (pre_exit) {
        pre_exit(0); /* config->shutdown_by_hot_reloading */
    }
    int rc = 0; /* Fluent Bit ignores this value */
    if (plugin->cb_exit_ctx) {
        rc = plugin->cb_exit_ctx(ins->ctx.remote_context);
    }
    else if (plugin->cb_exit) {
        rc = plugin->cb_exit();
    }
    ins->gone = 1;
    result("exit %s rc=%d", id, rc);
}

/* flb_proxy_output_cb_destroy(): once per .so, after every instance exited. */
static void cmd_unregister(void)
{
    if (phase != REGISTERED && phase != STARTED) {
        result("error unregister: plugin is not registered");
        return;
    }
    for (int i = 0; i < ninstances; i++) {
        if (!instances[i]->gone) {
            result("error unregister: instance %s was not exited (Fluent Bit "
                   "exits every instance first)", instances[i]->id);
            return;
        }
    }
    void (*unreg)(struct flb_plugin_proxy_def *) =
        (void (*)(struct flb_plugin_proxy_def *))symbol("FLBPluginUnregister");
    if (unreg) {
        unreg(&def); /* returns void */
    }
    free(plugin->name);
    free(plugin);
    plugin = NULL;
    dlclose(dso); /* a Go c-shared library is NODELETE: stays mapped */
    phase = UNREGISTERED;
    result("unregister rc=0");
}

static void cmd_sleep(int argc, char **argv)
{
    if (argc != 2) {
        result("error sleep: usage: sleep <ms>");
        return;
    }
    long ms = atol(argv[1]);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    result("sleep ok");
}

/* The command loop runs on its own thread, like Fluent Bit's engine. */
static void *engine(void *unused)
{
    char *line = NULL;
    size_t cap = 0;
    (void)unused;

    while (getline(&line, &cap, stdin) != -1) {
        int argc = 0;
        char **argv = calloc(strlen(line) / 2 + 2, sizeof(char *));
        for (char *tok = strtok(line, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
            argv[argc++] = tok;
        }
        if (argc == 0) {
            free(argv);
            continue;
        }
        const char *cmd = argv[0];
        if (strcmp(cmd, "register") == 0) {
            cmd_register();
        }
        else if (strcmp(cmd, "init") == 0) {
            cmd_init(argc, argv);
        }
        else if (strcmp(cmd, "flush") == 0) {
            cmd_flush(argc, argv, 0);
        }
        else if (strcmp(cmd, "flushconc") == 0) {
            cmd_flush(argc, argv, 1);
        }
        else if (strcmp(cmd, "exit") == 0) {
            cmd_exit(argc, argv);
        }
        else if (strcmp(cmd, "unregister") == 0) {
            cmd_unregister();
        }
        else if (strcmp(cmd, "sleep") == 0) {
            cmd_sleep(argc, argv);
        }
        else {
            result("error %s: unknown command", cmd);
        }
        free(argv);
    }
    free(line);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t tid;

    if (argc != 2) {
        fprintf(stderr, "usage: %s <plugin.so>\n", argv[0]);
        return 2;
    }
    so_path = argv[1];

    /* Results keep the original stdout; anything else written to fd 1
     * (the plugin's fmt.Println, ...) goes to stderr. */
    results = fdopen(dup(1), "w");
    if (!results || dup2(2, 1) == -1) {
        perror("fbhost: redirecting stdout");
        return 2;
    }

    pthread_create(&tid, NULL, engine, NULL);
    pthread_join(tid, NULL);
    return 0;
}
