/* A CPU backend whose memory the host cannot touch: the pointers it hands out are tagged so
 * that dereferencing one outside a backend operation faults, and every operation checks that
 * each pointer it receives is one of its own. Running a model on it proves, without a GPU,
 * that the engine moves data only through upload/download (what a device backend needs) and
 * never hands an operation a host pointer where backend memory belongs. The arithmetic is the
 * CPU backend's, so results must be bit-identical to mt_backend_cpu(). */
#ifndef MTLAB_TEST_FENCED_BACKEND_H
#define MTLAB_TEST_FENCED_BACKEND_H

#include "mtlab/backend.h"

const mt_backend *fenced_backend(void);

/* It records decoding steps (mtlab/backend.h graph_begin ...) as a tape of the operations a
 * position-free step uses; any other operation while recording fails the recording. The counts
 * since the last take: */
typedef struct {
    int recorded, replayed, failed;
} fenced_graph_counts;
fenced_graph_counts fenced_graph_counts_take(void);
/* on: every recording fails (nothing recorded runs), as a capture that CUDA refuses. */
void fenced_fail_recordings(int on);

#endif
