/* A 20,000-character single line (the 119 verses of tests/fixtures/long_line/verses.es joined
 * by spaces, 5,556 tokens) translated by every shipped bundle in models/ with the real
 * binary, `./mtlab translate --beam 1`, each in a child process: its peak resident memory
 * (wait4's ru_maxrss) stays under 600 MB, because the prefill runs in chunks and keeps no
 * training activations (docs/decoding.md §1.1); a model whose positions are limited refuses
 * the line with the error naming them. Generation is capped at MAX_NEW tokens (--max-len) so
 * the test takes seconds per model, not minutes: the prompt, the part that used to grow with
 * T x T, is whole. Peak memory means nothing under AddressSanitizer: that build skips it. */
#include "test_util.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define RSS_BOUND_KB (600L * 1024)
#define MAX_NEW "32"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* The fixture's verses joined by single spaces into one line (newline-terminated), written to
 * a temporary file; returns its path, *chars its characters. */
static char *write_long_line(size_t *chars)
{
    FILE *in = fopen("tests/fixtures/long_line/verses.es", "r");
    assert_non_null(in);
    static char path[] = "/tmp/mtlab_long_line_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    char buf[4096];
    size_t n = 0;
    int first = 1;
    while (fgets(buf, sizeof buf, in)) {
        buf[strcspn(buf, "\n")] = 0;
        if (!first) fputc(' ', out), n++;
        fputs(buf, out);
        for (const char *c = buf; *c; c++) n += ((unsigned char)*c & 0xC0) != 0x80; /* UTF-8 */
        first = 0;
    }
    fputc('\n', out);
    fclose(out);
    fclose(in);
    *chars = n;
    return path;
}

/* Run ./mtlab translate -m models/NAME on the line; returns the exit status, the child's peak
 * RSS in KiB and the start of what it wrote to stderr. */
static int translate_child(const char *name, const char *input, long *maxrss_kb, char *err,
                           size_t err_cap)
{
    char bundle[256];
    snprintf(bundle, sizeof bundle, "models/%s", name);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        execl("./mtlab", "mtlab", "translate", "-m", bundle, "--beam", "1", "--max-len", MAX_NEW,
              "-i", input, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(pipefd[0], err + got, err_cap - 1 - got)) > 0 && got + 1 < err_cap)
        got += (size_t)r;
    err[got] = 0;
    close(pipefd[0]);
    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    *maxrss_kb = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_long_line_memory_is_bounded(void **state)
{
    (void)state;
#ifdef UNDER_ASAN
    skip();
#endif
    if (access("./mtlab", X_OK) != 0) fail_msg("./mtlab is not built");
    size_t chars;
    char *input = write_long_line(&chars);
    assert_true(chars > 19000 && chars <= 20000);
    static const struct {
        const char *name;
        int limited;
    } models[] = {
        {"transformer-small", 1},  {"transformer++-small", 0}, {"retnet-small", 0},
        {"mamba-small", 0},        {"mamba-mha-small", 0},     {"mamba-local-small", 0},
        {"mamba-encdec-small", 0},
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        long kb;
        char err[2048];
        int rc = translate_child(models[i].name, input, &kb, err, sizeof err);
        printf("%-20s a %zu-character line, --beam 1 --max-len %s: exit %d, peak RSS %ld MiB "
               "(bound %ld)\n",
               models[i].name, chars, MAX_NEW, rc, kb / 1024, RSS_BOUND_KB / 1024);
        if (models[i].limited) {
            if (rc != 1 || !strstr(err, "exceeds the model's 1024 positions"))
                fail_msg("%s: exit %d, stderr: %s", models[i].name, rc, err);
        } else if (rc != 0) {
            fail_msg("%s: exit %d, stderr: %s", models[i].name, rc, err);
        }
        assert_true(kb < RSS_BOUND_KB);
    }
    unlink(input);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_line_memory_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
