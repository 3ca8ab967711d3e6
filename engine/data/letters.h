/* The character classes the Bible cleaner needs (it decodes with mtlab/utf8.h). Case mapping
 * covers ASCII and Latin-1 (U+00C0..U+00FE: á é í ó ú ü ñ and RV1909's â ê î ô), which is
 * every cased letter of the two texts; other letters (Hebrew, Greek in notes) count as letters
 * without case. */
#ifndef MTLAB_DATA_LETTERS_H
#define MTLAB_DATA_LETTERS_H

#include <stdint.h>

/* Letters and digits: ASCII alphanumerics, Latin-1 letters, and anything above U+00FF outside
 * the punctuation and combining blocks. Punctuation such as “ ” ‘ ’ — ¿ ¡ is not a word char. */
int cp_is_word(uint32_t cp);
int cp_is_upper(uint32_t cp);
int cp_is_lower(uint32_t cp);
uint32_t cp_to_lower(uint32_t cp);

#endif
