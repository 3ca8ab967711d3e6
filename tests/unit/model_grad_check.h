/* Whole-model gradient check shared by test_models_grad.c and test_models_arch_grad.c:
 * the analytic gradient of every trainable tensor against finite differences of the loss at a
 * few elements (tests/unit/model_grad_check.c). */
#ifndef MTLAB_MODEL_GRAD_CHECK_H
#define MTLAB_MODEL_GRAD_CHECK_H

#include "mtlab/model.h"

/* Fails the test when a sampled gradient or the aggregate relative error is out of bounds;
 * prints the figures under the label what. */
void check_model_gradients(mt_model *m, const mt_batch *b, const mt_step_opts *opts,
                           const char *what);

#endif
