/* The restricted unpickler behind mtlab/torch_checkpoint.h, apart from the archive that holds
 * its input, so that the fuzzer drives data.pkl directly. */
#ifndef MTLAB_IO_TORCH_PICKLE_H
#define MTLAB_IO_TORCH_PICKLE_H

#include "mtlab/safetensors.h"

#include <stddef.h>

/* Where the storages' bytes come from (the archive's ARCHIVE/data/KEY entries). Both return 0,
 * or -1 with mt_error saying what is wrong with storage key, without the file name (the
 * caller puts the file and the tensor's key before it). */
typedef struct {
    /* Is there a storage key of nbytes bytes? Asked of every storage before anything is
     * allocated for the tensors. */
    int (*check)(void *ctx, const char *key, size_t nbytes);
    /* Its bytes in *data (malloc'd, nbytes long; the caller frees them). */
    int (*load)(void *ctx, const char *key, size_t nbytes, unsigned char **data);
    void *ctx;
} torch_storages;

/* Unpickle data.pkl (pkl, len bytes), find its state_dict, check every tensor against its
 * storage and copy them into a safetensors image. file names the checkpoint in messages. */
mt_safetensors *torch_read_state_dict(const unsigned char *pkl, size_t len, const char *file,
                                      const torch_storages *storages);

enum { TORCH_MAX_PICKLE = 1 << 26 }; /* data.pkl of a model with 100k tensors is about 10 MB */

#endif
