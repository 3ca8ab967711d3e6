/* A safetensors image built in memory by a reader of another format (torch_pickle.c): it goes
 * through the same validation as a file. */
#ifndef MTLAB_IO_SAFETENSORS_IMAGE_H
#define MTLAB_IO_SAFETENSORS_IMAGE_H

#include "mtlab/safetensors.h"

#include <stddef.h>

/* Validate len bytes of malloc'd data laid out as a safetensors file and take them: the handle
 * frees data at mt_st_close, and so does a failed validation. name is used in messages. */
mt_safetensors *st_open_image(void *data, size_t len, const char *name);

#endif
