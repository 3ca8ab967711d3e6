/* A safetensors image built in memory by a reader of another format (torch_pickle.c): it goes
 * through the same validation as a file, its header encoded as the writer encodes one. */
#ifndef MTLAB_IO_SAFETENSORS_IMAGE_H
#define MTLAB_IO_SAFETENSORS_IMAGE_H

#include "mtlab/safetensors.h"

#include <jansson.h>
#include <stddef.h>

/* The header of a safetensors file from its JSON object (taken: decref'd here): the u64 length,
 * then compact JSON with sorted keys padded with spaces to a multiple of 8, as the library
 * writes it. malloc'd, *len bytes; NULL with an error naming name. */
char *st_header_encode(json_t *root, const char *name, size_t *len);

/* Validate len bytes of malloc'd data laid out as a safetensors file and take them: the handle
 * frees data at mt_st_close, and so does a failed validation. name is used in messages. */
mt_safetensors *st_open_image(void *data, size_t len, const char *name);

#endif
