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

/* The steps of torch_read_state_dict, for the legacy format (torch_legacy.c), whose file is
 * several pickles in a row. torch_unpickle runs one pickle from pkl to its STOP (*used: its
 * bytes); base, when not 0, is its offset in the file, which messages then count from. */
typedef struct torch_pickle torch_pickle;
torch_pickle *torch_unpickle(const unsigned char *pkl, size_t len, const char *file, size_t base,
                             size_t *used);
mt_safetensors *torch_pickle_state_dict(const torch_pickle *tp, const torch_storages *storages);
void torch_pickle_free(torch_pickle *tp);
/* The pickled value: an int into *out (0, or -1 when it is none); a dict's bool entry key (1
 * when it is True); a list's length, with its i-th item in *s when i is below it (NULL when
 * that is not a str). */
int torch_pickle_int(const torch_pickle *tp, int64_t *out);
int torch_pickle_flag(const torch_pickle *tp, const char *key);
size_t torch_pickle_strings(const torch_pickle *tp, size_t i, const char **s);
/* Bytes per element of the storage key names in the pickle; 0 when it names none. */
size_t torch_pickle_storage_elem_size(torch_pickle *tp, const char *key);

/* A legacy checkpoint (torch < 1.6): magic, version and system pickles, the state_dict pickle,
 * the list of storage keys, then each storage as an 8-byte element count and its bytes. */
mt_safetensors *torch_legacy_read(const unsigned char *data, size_t len, const char *file);
/* 1 when data starts as a legacy checkpoint does (the pickled magic number). */
int torch_legacy_magic(const unsigned char *data, size_t len);

enum { TORCH_MAX_PICKLE = 1 << 26 }; /* data.pkl of a model with 100k tensors is about 10 MB */

#endif
