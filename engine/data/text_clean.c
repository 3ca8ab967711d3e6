/* The importer's cleaning of one line (mt_text_clean, mtlab/dataset.h): control characters
 * out, Unicode spaces to ' ', whitespace collapsed and trimmed, then NFC with utf8proc (the
 * normalisation sacreBLEU's inputs and most MT toolkits assume). */
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

char *mt_text_clean(const char *text, size_t len, int *flags)
{
    size_t bad = mt_utf8_invalid_offset(text, len);
    if (bad < len) {
        mt_error("invalid UTF-8 at byte %zu", bad + 1);
        return NULL;
    }
    int changed = 0;
    char *plain = mt_xmalloc(len + 1);
    size_t out = 0;
    int pending_space = 0;
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        int n = mt_utf8_next(text + at, len - at, &cp);
        if (n == 0) { /* a NUL byte: mt_utf8_next reads it as U+0000 of length 1 */
            cp = 0;
            n = 1;
        }
        utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)cp);
        int space = cat == UTF8PROC_CATEGORY_ZS || cp == '\t' || cp == '\n' || cp == '\v' ||
                    cp == '\f' || cp == '\r' || cp == 0x85 || cat == UTF8PROC_CATEGORY_ZL ||
                    cat == UTF8PROC_CATEGORY_ZP;
        int control =
            (cat == UTF8PROC_CATEGORY_CC && cp != ' ') || cp == 0xFEFF; /* a byte order mark */
        if (control && cp != '\t') changed |= MT_CLEAN_CONTROL;
        if (cp == '\t') changed |= MT_CLEAN_CONTROL;
        if (space) {
            pending_space = out > 0;
        } else if (!control) {
            if (pending_space) plain[out++] = ' ';
            pending_space = 0;
            memcpy(plain + out, text + at, (size_t)n);
            out += (size_t)n;
        }
        at += (size_t)n;
    }
    plain[out] = '\0';
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t got =
        utf8proc_map((const utf8proc_uint8_t *)plain, (utf8proc_ssize_t)out, &nfc,
                     (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (got < 0) {
        free(plain);
        mt_error("NFC: %s", utf8proc_errmsg(got));
        return NULL;
    }
    if ((size_t)got != out || memcmp(nfc, plain, out) != 0) changed |= MT_CLEAN_NFC;
    free(plain);
    char *result = mt_xstrdup((const char *)nfc);
    free(nfc);
    if (flags) *flags = changed;
    return result;
}
