/* The verse key syntax shared by mod2imp dumps and the exclusion list: "Book C:V". */
#ifndef MTLAB_DATA_VERSE_KEY_H
#define MTLAB_DATA_VERSE_KEY_H

#include <stddef.h>

/* Split key[0..len) = "I Samuel 24:3" into the book length (up to the last space), chapter
 * and verse (1 to 4 digits each, 0 allowed: mod2imp's introductions). 0, or -1 when the key
 * does not have that shape or the book holds control characters. */
int mt_parse_verse_key(const char *key, size_t len, size_t *book_len, int *chapter, int *verse);

#endif
