/* The architectures mtlab knows: the registry (mt_archs), finding one by name or by Hugging Face
 * model type, the lists and presets derived from it, and the configuration checks every
 * architecture shares before its own. Above the architecture files (transformer.c, mamba.c, ...),
 * which it lists; below model.c and model_io.c, which choose through it. */
#include "models/model_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "mtlab/error.h"

/* The registry: the one list of architectures, in the paper's order. Names, presets, the
 * lists of the public API and the tests' loops all come from it. */
const mt_arch *const mt_archs[] = {
    &mt_arch_transformer,  &mt_arch_llama,     &mt_arch_retnet,
    &mt_arch_mamba,        &mt_arch_mamba_mha, &mt_arch_mamba_local,
    &mt_arch_mamba_encdec, &mt_arch_neox,      NULL,
};
#define N_ARCHS (sizeof mt_archs / sizeof mt_archs[0] - 1)

const mt_arch *mt_arch_find(const char *name)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(mt_archs[i]->name, name)) return mt_archs[i];
    return NULL;
}

const mt_arch *mt_arch_find_hf(const char *model_type)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(mt_archs[i]->model_type, model_type)) return mt_archs[i];
    return NULL;
}

/* The lists derived from the registry, made once. */
static const char *arch_list[N_ARCHS + 1];
static const char *preset_list[2 * N_ARCHS + 1];
static char small_names[N_ARCHS][sizeof((mt_model_config *)0)->arch + 8];
static char names_joined[N_ARCHS * 32], types_joined[N_ARCHS * 32];
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

static void join(char *out, size_t cap, const char *s, size_t i)
{
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", i ? ", " : "", s);
}

static void make_lists(void)
{
    for (size_t i = 0; i < N_ARCHS; i++) {
        const mt_arch *a = mt_archs[i];
        snprintf(small_names[i], sizeof small_names[i], "%s-small", a->name);
        arch_list[i] = preset_list[i] = a->name;
        preset_list[N_ARCHS + i] = small_names[i];
        join(names_joined, sizeof names_joined, a->name, i);
        join(types_joined, sizeof types_joined, a->model_type, i);
    }
}

const char *mt_arch_names(void)
{
    pthread_once(&lists_once, make_lists);
    return names_joined;
}

const char *mt_arch_model_types(void)
{
    pthread_once(&lists_once, make_lists);
    return types_joined;
}

const char *const *mt_model_arch_list(void)
{
    pthread_once(&lists_once, make_lists);
    return arch_list;
}

const char *const *mt_model_preset_names(void)
{
    pthread_once(&lists_once, make_lists);
    return preset_list;
}

/* Each architecture's preset function gives its sizes: the paper's (docs/models.md §1.5,
 * vocabulary 32000, 77M-82M parameters) and the Bible demo's (vocabulary 8000, one budget of
 * ~4.6M each, so that a bundle stored in f16 stays under 10 MB). */
int mt_model_preset(mt_model_config *cfg, const char *name)
{
    memset(cfg, 0, sizeof *cfg);
    mt_model_config_init_ids(cfg);
    cfg->dropout = 0.3f; /* the paper's WMT14 setting (docs/models.md §1.5) */
    const char *const *presets = mt_model_preset_names();
    for (size_t i = 0; i < 2 * N_ARCHS; i++)
        if (!strcmp(presets[i], name)) {
            const mt_arch *a = mt_archs[i % N_ARCHS];
            cfg->vocab_size = i >= N_ARCHS ? 8000 : 32000;
            a->preset(cfg, i >= N_ARCHS);
            snprintf(cfg->arch, sizeof cfg->arch, "%s", a->name);
            return 0;
        }
    char known[1024] = "";
    for (size_t i = 0; i < 2 * N_ARCHS; i++) join(known, sizeof known, presets[i], i);
    return mt_error("unknown model preset '%s' (%s)", name, known);
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
        (c->unk_id != -1 && check_id(c, "unk id", c->unk_id)) ||
        check_id(c, "decoder start id", c->decoder_start_id))
        return -1;
    const char *at = strstr(c->prompt, "{src}");
    if (c->prompt[0] && (!at || strstr(at + 5, "{src}")))
        return mt_error("%s config: prompt \"%s\" must hold {src} exactly once", c->arch,
                        c->prompt);
    if (c->prompt[0] && arch->encdec)
        return mt_error(
            "%s config: prompt \"%s\": a %s model takes the source on its own, without a prompt",
            c->arch, c->prompt, c->arch);
    return arch->check(c);
}
