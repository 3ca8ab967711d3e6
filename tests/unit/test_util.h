/* Common includes for the cmocka unit tests. cmocka needs these system headers first. */
#ifndef MTLAB_TEST_UTIL_H
#define MTLAB_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/train.h"

/* Small helpers shared by the tests (tests/unit/support.c). */
/* Write len bytes (or a NUL-terminated text) to path; a failure fails the test. */
void test_write_file(const char *path, const void *data, size_t len);
void test_write_text(const char *path, const char *text);
/* The whole file, NUL-terminated and malloc'd; NULL when it cannot be opened. len may be NULL. */
char *test_read_file(const char *path, size_t *len);
/* A fresh directory /tmp/mtlab-TAG-XXXXXX written into buf; 0, or -1 when it cannot be made. */
int test_make_tmpdir(char *buf, size_t len, const char *tag);
/* Train DIR/spm.model (and .vocab) on the small Spanish-English fixture corpus
 * (tests/fixtures/tokenizer/), one thread; 0, or -1 with mt_last_error(). */
int test_train_fixture_tokenizer(const char *dir, int vocab_size, unsigned seed);
/* The setup of the tests that train tiny runs: test_make_tmpdir, then the fixture tokenizer
 * (vocabulary 256, seed 1) in it. 0, or -1 after printing why to stderr. */
int test_tokenizer_tmpdir(char *buf, size_t len, const char *tag);
/* Remove a directory tree (files and subdirectories); 0 or -1. */
int test_remove_tree(const char *dir);
/* A command's run in this process, its stdout and stderr captured (malloc'd, NUL-terminated). */
typedef struct {
    int rc;
    char *out, *err;
} test_captured;
struct mt_command;
/* Runs cmd->run with argv {cmd->name, args..., NULL} (args NULL-terminated, at most 60). */
test_captured test_run_command(const struct mt_command *cmd, const char *const *args);
void test_captured_free(test_captured *c);
/* A tiny training run of PRESET (vocabulary 256, d_model 16, two layers) on the tokenizer
 * fixture corpus, under DIR/RUN with DIR/spm.model, one log record per step, no validation and
 * no saves: the tests set what they vary (seed, d_state, dropout, accum ...) after it. */
void test_tiny_train_config(mt_train_config *cfg, const char *preset, const char *dir,
                            const char *run, long max_steps);
/* A malloc'd copy of n floats */
float *test_copy_floats(const float *x, size_t n);
/* max |a[i] - b[i]| over n floats */
float max_abs_diff(const float *a, const float *b, size_t n);
/* max_i |a_i - b_i| / max(max_i |b_i|, 1e-30), in double */
double max_rel(const float *a, const float *b, size_t n);

#endif
