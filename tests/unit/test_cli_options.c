/* Integer options of every command go through one checked parser (app/cli/cli_util.c): a
 * value that is not a whole number in range is a usage error (status 2) naming the command,
 * the option, the range and the text given; the beam is capped at the same 256 everywhere. */
#include "test_util.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "cli/commands.h"

static void test_values_and_refusals(void **state)
{
    (void)state;
    long v = -1;
    assert_int_equal(cli_option_long("t", "--n", "7", 1, 9, &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(cli_option_long("t", "--n", "1", 1, 9, &v), 0);
    assert_int_equal(cli_option_long("t", "--n", "9", 1, 9, &v), 0);
    assert_int_equal(v, 9);
    assert_int_equal(cli_option_long("t", "--n", "-3", -5, 9, &v), 0);
    assert_int_equal(v, -3);
    const char *bad[] = {"", "x", "5x", "0", "10", "1.5", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 42;
        if (cli_option_long("t", "--n", bad[i], 1, 9, &v) != 2) fail_msg("'%s' was taken", bad[i]);
        assert_int_equal(v, 42); /* untouched */
    }
    int n = 0;
    assert_int_equal(cli_option_int("t", "--n", "2147483647", 1, INT_MAX, &n), 0);
    assert_int_equal(n, INT_MAX);
    assert_int_equal(cli_option_int("t", "--n", "2147483648", 1, INT_MAX, &n), 2);
}

/* Run cmd with argv (argv[0] its name), stderr into err; returns its status. */
static int run_command(const struct mt_command *cmd, int argc, char **argv, char *err,
                       size_t err_len)
{
    char path[] = "/tmp/mtlab-cli-options-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    int rc = cmd->run(argc, argv);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, err, err_len - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

static void expect_refusal(const struct mt_command *cmd, int argc, char **argv, const char *message)
{
    char err[1024];
    int rc = run_command(cmd, argc, argv, err, sizeof err);
    if (rc != 2 || strcmp(err, message) != 0)
        fail_msg("mtlab %s: status %d, stderr '%s', expected 2 and '%s'", cmd->name, rc, err,
                 message);
}

static void test_every_command_refuses_alike(void **state)
{
    (void)state;
    expect_refusal(&cmd_translate, 5, (char *[]){"translate", "-m", "x", "--beam", "x"},
                   "mtlab translate: --beam takes a whole number from 1 to 256, not 'x'\n");
    expect_refusal(&cmd_translate, 5, (char *[]){"translate", "-m", "x", "--batch", "0"},
                   "mtlab translate: --batch takes a whole number from 1 to 4096, not '0'\n");
    expect_refusal(&cmd_eval, 3, (char *[]){"eval", "--beam", "257"},
                   "mtlab eval: --beam takes a whole number from 1 to 256, not '257'\n");
    expect_refusal(&cmd_tui, 3, (char *[]){"tui", "--beam", "300"},
                   "mtlab tui: --beam takes a whole number from 1 to 256, not '300'\n");
    expect_refusal(&cmd_bench, 3, (char *[]){"bench", "--repeat", "0"},
                   "mtlab bench: --repeat takes a whole number from 1 to 100, not '0'\n");
    expect_refusal(&cmd_tokenizer, 4, (char *[]){"tokenizer", "train", "--threads", "many"},
                   "mtlab tokenizer: --threads takes a whole number from 1 to 128, not 'many'\n");
    expect_refusal(&cmd_train, 4, (char *[]){"train", "c.lua", "--max-steps", "ten"},
                   "mtlab train: --max-steps takes a whole number from 1 to 9223372036854775807, "
                   "not 'ten'\n");
}

/* A missing required argument is named before the usage lines. */
static void test_missing_arguments_are_named(void **state)
{
    (void)state;
    char err[1024];
    struct {
        const struct mt_command *cmd;
        int argc;
        char **argv;
        const char *first_line;
    } cases[] = {
        {&cmd_eval, 3, (char *[]){"eval", "--src", "s"}, "mtlab eval: -m SYSTEM is missing\n"},
        {&cmd_eval, 5, (char *[]){"eval", "-m", "x", "--ref", "r"},
         "mtlab eval: --src FILE is missing\n"},
        {&cmd_eval, 5, (char *[]){"eval", "-m", "x", "--src", "s"},
         "mtlab eval: --ref FILE is missing\n"},
        {&cmd_score, 3, (char *[]){"score", "--ref", "r"}, "mtlab score: --hyp FILE is missing\n"},
        {&cmd_score, 3, (char *[]){"score", "--hyp", "h"}, "mtlab score: --ref FILE is missing\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_command(cases[i].cmd, cases[i].argc, cases[i].argv, err, sizeof err);
        assert_int_equal(rc, 2);
        if (strncmp(err, cases[i].first_line, strlen(cases[i].first_line)) != 0)
            fail_msg("case %zu: stderr '%s', expected it to start with '%s'", i, err,
                     cases[i].first_line);
        assert_non_null(strstr(err, "usage: mtlab "));
    }
}

/* Table 4 on the device narrowed (--only decode): what it refuses, before any device is asked */
static void test_bench_device_decode_options(void **state)
{
    (void)state;
    expect_refusal(&cmd_bench, 5, (char *[]){"bench", "--device", "cuda:0", "-m", "mamba"},
                   "mtlab bench: with --device, -m, --precision and --new-tokens go with --only "
                   "decode\n");
    expect_refusal(&cmd_bench, 7,
                   (char *[]){"bench", "--device", "cuda:0", "--only", "decode", "-m", "bogus"},
                   "mtlab bench: -m 'bogus': Table 4's rows are mamba and transformer++\n");
    expect_refusal(&cmd_bench, 9,
                   (char *[]){"bench", "--device", "cuda:0", "--only", "decode", "-m", "mamba",
                              "-m", "transformer++"},
                   "mtlab bench: --device --only decode takes one -m (mamba or transformer++)\n");
    expect_refusal(
        &cmd_bench, 7,
        (char *[]){"bench", "--device", "cuda:0", "--only", "decode", "--precision", "int8"},
        "mtlab bench: --precision int8: Table 4 decodes in fp32 or bf16\n");
    expect_refusal(
        &cmd_bench, 7,
        (char *[]){"bench", "--device", "cuda:0", "--only", "decode", "--new-tokens", "1"},
        "mtlab bench: --new-tokens 1: a step time needs at least 2\n");
    expect_refusal(&cmd_bench, 5, (char *[]){"bench", "--only", "decode", "-m", "mamba"},
                   "mtlab bench: -m goes with --peer-inputs, or with --only length\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_and_refusals),
        cmocka_unit_test(test_every_command_refuses_alike),
        cmocka_unit_test(test_missing_arguments_are_named),
        cmocka_unit_test(test_bench_device_decode_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
