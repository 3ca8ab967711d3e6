/* PyTorch checkpoints (pytorch_model.bin: torch.save of a state_dict), read without Python and
 * without running anything from the file.
 *
 * File layout (torch >= 1.6, a zip archive whose entries are stored uncompressed):
 *   ARCHIVE/data.pkl     the state_dict as a pickle (protocol 2)
 *   ARCHIVE/data/KEY     the bytes of storage KEY, little-endian
 *   ARCHIVE/byteorder    "little" (absent in older files), ARCHIVE/version, ...
 * data.pkl goes through a restricted unpickler: it interprets only the opcodes torch.save
 * writes, and of the globals only the tensor-rebuilding ones (collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2 and its siblings, the storage types, the dtypes); it never
 * imports or calls anything. Any other global is refused by name ("pytorch_model.bin: data.pkl
 * refers to os.system, which mtlab does not load").
 *
 * The state_dict is the pickled dict itself, or its "state_dict" or "model" entry. Each tensor
 * is checked against its storage (offset, sizes and strides inside it) and copied out
 * contiguous: non-contiguous views come out as torch's .contiguous() would give them, and
 * tensors sharing a storage (tied weights) each get their copy. The result is a safetensors
 * handle (mtlab/safetensors.h) over an image built in memory, so whatever reads weights from a
 * model.safetensors reads them from a pytorch_model.bin the same way, through the same
 * validation. Errors name the file and, where one is involved, the key:
 *   "m/pytorch_model.bin: tensor 'lm_head.weight': sizes (10, 4) with strides (4, 1) from
 *    offset 8 reach element 47 of storage '3', which holds 40 float32 elements". */
#ifndef MTLAB_TORCH_CHECKPOINT_H
#define MTLAB_TORCH_CHECKPOINT_H

#include "mtlab/safetensors.h"

#include <stddef.h>

/* Read and check a checkpoint file; NULL (mt_last_error) on any problem. The legacy format
 * (torch < 1.6: pickles in a row, then the storages) is read as well, through the same
 * unpickler. */
mt_safetensors *mt_torch_open(const char *path);
/* The same over a file already in memory (borrowed for the call only); name is used in
 * messages ("<buffer>" when NULL). */
mt_safetensors *mt_torch_open_buffer(const void *data, size_t len, const char *name);

#endif
