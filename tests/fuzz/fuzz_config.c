/* libFuzzer target for config.json parsing, the typed getters and the Python-style writer.
 * Any input gives a handle or one error line; for an accepted config, every getter answers
 * without crashing, and the written text parses back to a config that writes the same text.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/bundle.h"
#include "mtlab/error.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

static const char NAME[] = "fuzz/config.json";

/* Every getter on every key: each either succeeds or leaves one error line naming the file. */
static void ask_everything(const mt_config *c, int depth)
{
    int n;
    const char **keys = mt_config_keys(c, &n);
    for (int i = 0; i < n; i++) {
        const char *k = keys[i];
        int v, list[4], count;
        float f;
        const char *strings[4];
        mt_clear_error();
        if (mt_config_int(c, k, INT_MIN, INT_MAX, &v))
            CHECK(strstr(mt_last_error(), NAME) == mt_last_error());
        if (mt_config_float(c, k, -INFINITY, INFINITY, &f) == 0) CHECK(isfinite(f));
        mt_config_float_or(c, k, 1.0f, 0, 1, &f);
        mt_config_bool(c, k, &v);
        mt_config_int_or(c, k, 0, 1, 8, &v);
        (void)mt_config_string(c, k);
        (void)mt_config_string_or(c, k, "default");
        if (mt_config_int_list(c, k, 0, 100, list, 4, &count) == 0) CHECK(count >= 0 && count <= 4);
        if (mt_config_string_list(c, k, strings, 4, &count) == 0)
            for (int j = 0; j < count; j++) CHECK(strings[j] != NULL);
        char *value = mt_config_value_json(c, k);
        CHECK(value != NULL);
        free(value);
        const mt_config *child = mt_config_object(c, k);
        if (child && depth < 8) ask_everything(child, depth + 1);
        CHECK(strchr(mt_last_error(), '\n') == NULL);
    }
    free(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_clear_error();
    mt_config *c = mt_config_parse((const char *)data, size, NAME);
    if (!c) {
        CHECK(strncmp(mt_last_error(), NAME, strlen(NAME)) == 0);
        CHECK(strchr(mt_last_error(), '\n') == NULL);
        return 0;
    }
    ask_everything(c, 0);

    char *text = mt_config_to_text(c);
    mt_config *again = mt_config_parse(text, strlen(text), "again");
    if (!again) fprintf(stderr, "written text does not parse: %s\n%s", mt_last_error(), text);
    CHECK(again);
    char *text2 = mt_config_to_text(again);
    CHECK(strcmp(text, text2) == 0);

    /* a float taken from the input survives set + write + parse */
    if (size >= 4) {
        float x;
        memcpy(&x, data, sizeof x);
        if (isfinite(x)) {
            CHECK(mt_config_set_float(again, "fuzz_float", x) == 0);
            char *t3 = mt_config_to_text(again);
            mt_config *back = mt_config_parse(t3, strlen(t3), "back");
            float y;
            CHECK(back && mt_config_float(back, "fuzz_float", -INFINITY, INFINITY, &y) == 0);
            CHECK(memcmp(&x, &y, sizeof x) == 0);
            mt_config_free(back);
            free(t3);
        }
    }
    free(text);
    free(text2);
    mt_config_free(again);
    mt_config_free(c);
    return 0;
}
