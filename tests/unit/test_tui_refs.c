/* The workbench's scores against references (app/tui/refs.c): each finished segment with a
 * reference line scored by sentence BLEU and chrF2, the total by corpus BLEU and chrF2 of those
 * segments, as mtlab score computes them; unfinished segments and those past the file's end
 * are not scored. */
#include "test_util.h"

#include <math.h>

#include "tui/refs.h"

static void test_scores(void **state)
{
    (void)state;
    char *lines[] = {"the cat sat on the mat", "the dog barked at the moon", "x"};
    mt_text_lines refs = {lines, 3};
    const char *hyps[] = {"the cat sat on the mat", "a dog barked at a moon", NULL, "unfinished",
                          "past the end"};
    const unsigned char final[] = {1, 1, 0, 0, 1};
    tui_ref_score seg[5], total;
    assert_int_equal(tui_ref_scores(hyps, final, 5, &refs, seg, &total), 0);
    assert_true(seg[0].scored && seg[1].scored);
    assert_false(seg[2].scored || seg[3].scored || seg[4].scored);
    assert_true(fabs(seg[0].bleu - 100.0) < 1e-9 && fabs(seg[0].chrf - 100.0) < 1e-9);
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults();
    mt_bleu_score b;
    double c;
    const char *ref1 = lines[1];
    assert_int_equal(mt_bleu_sentence(&b, hyps[1], &ref1, 1, &bo), 0);
    assert_true(seg[1].bleu == b.score && b.score > 0 && b.score < 100);
    assert_int_equal(mt_chrf_sentence(&c, hyps[1], &ref1, 1, &co), 0);
    assert_true(seg[1].chrf == c);
    /* the total: corpus scores of the two scored segments */
    const char *const *ref_col = (const char *const *)lines;
    assert_int_equal(mt_bleu_corpus(&b, hyps, 2, &ref_col, 1, &bo), 0);
    assert_int_equal(mt_chrf_corpus(&c, hyps, 2, &ref_col, 1, &co), 0);
    assert_int_equal(total.scored, 2);
    assert_true(total.bleu == b.score);
    assert_true(total.chrf == c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
