/* The values of the restricted unpickler (torch_pickle.c), shared with the code that turns
 * the state_dict they hold into a safetensors image (torch_state_dict.c). Internal to engine/io. */
#ifndef MTLAB_IO_TORCH_VALUES_H
#define MTLAB_IO_TORCH_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "io/torch_pickle.h"

typedef enum {
    V_NONE,
    V_BOOL,
    V_INT,
    V_FLOAT,
    V_STR,
    V_BYTES,
    V_TUPLE,
    V_LIST,
    V_DICT,
    V_GLOBAL,
    V_STORAGE,
    V_TENSOR,
} value_kind;

typedef struct value value;

typedef struct {
    char *key; /* the name of its entry ARCHIVE/data/KEY */
    mt_dtype dtype; /* of the storage type (U8 for UntypedStorage) */
    size_t nbytes; /* numel * dtype size, as the persistent id says */
} storage;

typedef struct {
    const value *storage; /* a V_STORAGE */
    mt_dtype dtype;
    int64_t offset; /* in elements of dtype */
    size_t ndim; /* as pickled; only the first MT_ST_MAX_DIMS are kept */
    size_t n_strides;
    int64_t size[MT_ST_MAX_DIMS];
    int64_t stride[MT_ST_MAX_DIMS];
} tensor;

struct value {
    value *next; /* every value, for freeing */
    value_kind kind;
    union {
        int64_t i; /* V_BOOL, V_INT */
        double f; /* V_FLOAT */
        struct { /* V_STR, V_BYTES: NUL-terminated, may hold NULs */
            char *s;
            size_t len;
        } str;
        struct { /* V_TUPLE, V_LIST: items; V_DICT: keys and values interleaved */
            value **items;
            size_t n, cap;
        } seq;
        int global; /* V_GLOBAL: index into GLOBALS */
        storage st; /* V_STORAGE */
        tensor *t; /* V_TENSOR (apart: most values are small) */
    } u;
};

/* "a dict", "an int", "torch.float32" ...: what a value is, in messages */
const char *torch_value_kind_name(const value *v);
/* a V_DICT's value under a str key, or NULL */
const value *torch_dict_get(const value *dict, const char *key);
/* what the pickle returned, and the checkpoint's name for messages */
const value *torch_pickle_top(const torch_pickle *tp);
const char *torch_pickle_file(const torch_pickle *tp);
/* The state_dict in top (top itself, or its "state_dict" / "model" entry) as a safetensors
 * image, its tensors copied out of the storages; NULL with mt_error naming file and key. */
mt_safetensors *torch_state_dict_image(const char *file, const value *top,
                                       const torch_storages *from);

#endif
