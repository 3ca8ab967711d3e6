/* The architectures mtlab knows: finding one by name or by Hugging Face model type, and the
 * configuration checks every architecture shares before its own. Above the architecture files
 * (transformer.c, mamba.c, ...), which it lists; below model.c and model_io.c, which choose
 * through it. */
#include "models/model_internal.h"

#include <string.h>

#include "mtlab/error.h"

static const mt_arch *const archs[] = {
    &mt_arch_transformer, &mt_arch_mamba,       &mt_arch_llama,        &mt_arch_retnet,
    &mt_arch_mamba_mha,   &mt_arch_mamba_local, &mt_arch_mamba_encdec,
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

const mt_arch *mt_arch_find(const char *name)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(archs[i]->name, name)) return archs[i];
    return NULL;
}

const mt_arch *mt_arch_find_hf(const char *model_type)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(archs[i]->model_type, model_type)) return archs[i];
    return NULL;
}

const char *mt_arch_names(void)
{
    return "transformer, mamba, transformer++, retnet, mamba-mha, mamba-local, mamba-encdec";
}

int mt_model_arch_known(const char *arch) { return arch && mt_arch_find(arch) != NULL; }

static int check_id(const mt_model_config *c, const char *what, int id)
{
    if (id < 0 || id >= c->vocab_size)
        return mt_error("%s config: %s %d is outside the vocabulary (0..%d)", c->arch, what, id,
                        c->vocab_size - 1);
    return 0;
}

int mt_model_config_check(const mt_model_config *c)
{
    const mt_arch *arch = mt_arch_find(c->arch);
    if (!arch) return mt_error("unknown model architecture '%s' (%s)", c->arch, mt_arch_names());
    if (c->vocab_size <= 0 || c->vocab_size > (1 << 22))
        return mt_error("%s config: vocab_size %d must be in 1..%d", c->arch, c->vocab_size,
                        1 << 22);
    if (c->d_model <= 0 || c->d_model > (1 << 16))
        return mt_error("%s config: d_model %d must be in 1..%d", c->arch, c->d_model, 1 << 16);
    if (c->n_layers <= 0 || c->n_layers > 1024)
        return mt_error("%s config: %d layers, must be in 1..1024", c->arch, c->n_layers);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return mt_error("%s config: dropout %g must be in [0, 1)", c->arch, c->dropout);
    if (!(c->init_std >= 0.0f)) return mt_error("%s config: negative init_std", c->arch);
    if (check_id(c, "pad id", c->pad_id) || check_id(c, "eos id", c->eos_id) ||
        check_id(c, "sep id", c->sep_id) || check_id(c, "bos id", c->bos_id) ||
        check_id(c, "unk id", c->unk_id) || check_id(c, "decoder start id", c->decoder_start_id))
        return -1;
    return arch->check(c);
}
