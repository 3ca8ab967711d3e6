/* Choosing a translation system by name (mtlab/translator.h): the one file that knows every
 * system, above their openers and the handle they share (translator.c). */
#include "mtlab/error.h"
#include "mtlab/translator.h"

#include <string.h>
#include <sys/stat.h>

#define APERTIUM_PREFIX "apertium:"

mt_translator *mt_translator_open(const char *name, const mt_translate_opts *opts)
{
    mt_translate_opts defaults = mt_translate_defaults();
    if (!opts) opts = &defaults;
    if (!strncmp(name, APERTIUM_PREFIX, strlen(APERTIUM_PREFIX)))
        return mt_apertium_open(name + strlen(APERTIUM_PREFIX), opts);
    struct stat st;
    if (stat(name, &st) == 0 && S_ISDIR(st.st_mode)) return mt_bundle_translator_open(name, opts);
    mt_error(
        "%s: not a system: give a model bundle directory or apertium:MODE (e.g. apertium:spa-eng)",
        name);
    return NULL;
}
