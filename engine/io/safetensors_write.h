/* The safetensors writer's body, for writers that manage the atomic replacement themselves
 * (bundle.c seals every member file before renaming any). */
#ifndef MTLAB_IO_SAFETENSORS_WRITE_H
#define MTLAB_IO_SAFETENSORS_WRITE_H

#include "io/atomic_file.h"
#include "mtlab/safetensors.h"

/* Validate the tensors and write the whole file into af (not sealed or committed). */
int st_write_contents(atomic_file *af, const mt_st_write_tensor *tensors, int n_tensors,
                      const mt_st_meta *meta, int n_meta);

#endif
